// transport/fake/fake_network.h: FakeNetwork, an in-memory network of named
// hosts for deterministic protocol tests, driven by a SimClock.
//
// Typical use:
//
//   SimClock clock;
//   FakeNetwork net(clock, /*seed=*/1);
//   auto a = net.Attach("A", NetAddress::Ipv4(0x0a000001, 4000));
//   auto b = net.Attach("B", NetAddress::Ipv4(0x0a000002, 4000));
//   net.DropNext(DescriptionStartsWith("GRANT"));
//   ... run the protocol, advancing the clock ...
//   EXPECT_EQ(net.Log(), "A->B DATA 1400@0; B->A GRANT 10000 [dropped]; ...");
//
// A packet sent at time t on link src->dst (after the sender's earlier packets
// on that link have left, when the link has a bandwidth) arrives at
//   departure + serialisation + delay_ns [+ reorder or scripted extra delay]
// via a SimClock timer; nothing moves until the test advances the clock.
//
// What happens to each packet, in this order (each step is deterministic for
// a given seed and the same sequence of sends):
//   1. no endpoint at the destination address -> lost, " [no route]"
//   2. sender and receiver hosts partitioned  -> lost, " [partitioned]"
//   3. the link's dice are rolled (drop, duplicate, reorder), the script is
//      consulted (DropNext / DuplicateNext / DelayNext), the packet occupies
//      the link for its serialisation time (lost packets too: they were
//      transmitted and lost downstream)
//   4. dropped by dice or script -> " [dropped]"; otherwise delivered, later
//      by the extra delay if reordered/delayed (" [delayed]"), plus a second
//      copy arriving with the undelayed timing if duplicated (" [dup]")
//   5. on arrival, a partition made meanwhile or a detached receiver still
//      loses the packet (its log entry is updated).
//
// With SetReportNoRoute(true), a packet that finds no endpoint also makes
// its sender's endpoint report a "port unreachable" path error for the
// destination (as the kernel does for a datagram to a closed port on a live
// host); FakeDatagram::InjectPathError injects any other report.
//
// Not modelled: per-host NIC or switch-port queues shared by several links
// (incast onto one receiver's downlink), priority queues, socket-buffer
// overflow.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/sim_clock.h"
#include "transport/datagram.h"
#include "transport/fake/fake_datagram.h"
#include "transport/fake/faults.h"
#include "transport/fake/link_model.h"
#include "transport/fake/packet_log.h"
#include "transport/fake/packet_predicate.h"
#include "transport/net_address.h"
#include "wharf/result.h"

namespace wharf::transport::fake {

// Packet counts for one src->dst host pair (or the whole network). At any
// time: sent + duplicated == delivered + dropped + copies still in flight.
struct LinkCounters {
  uint64_t sent = 0;         // packets Send() put on the path (not counting copies)
  uint64_t delivered = 0;    // copies placed in a receiver's inbox
  uint64_t dropped = 0;      // copies lost for any reason, including the two below
  uint64_t partitioned = 0;  // of dropped: the hosts were partitioned
  uint64_t no_route = 0;     // of dropped: no endpoint at the destination address
  uint64_t duplicated = 0;   // extra copies made
  uint64_t delayed = 0;      // packets held back by a reorder or scripted delay

  LinkCounters& operator+=(const LinkCounters& o);
  friend bool operator==(const LinkCounters&, const LinkCounters&) = default;
};

// Turns a packet's bytes into the one-line description used by the log and
// by predicates.
using Describer = std::function<std::string(std::span<const std::byte>)>;

// The bytes as text (non-printable bytes as "\xNN"): a describer for tests of
// the network itself, whose packets are not protocol packets.
std::string DescribeBytesAsText(std::span<const std::byte> bytes);

// Owned by the test; borrows the SimClock, which must outlive it. Owns every
// packet in flight and the SimClock timers that deliver them (cancelled on
// destruction, so the clock may live on). Outlives the FakeDatagrams it hands
// out (see FakeDatagram for what happens if it does not). Single-threaded:
// the test, the code under test and the clock's timers all run on one thread,
// which is what makes runs reproducible.
class FakeNetwork {
 public:
  static constexpr size_t kDefaultMaxDatagramBytes = 1472;  // 1500 - IPv4 - UDP

  // The describer defaults to wire::Describe ("DATA 1400@0", "GRANT 10000").
  FakeNetwork(SimClock& clock, uint64_t seed);
  // The clock the network runs on (its endpoints stamp departures with it).
  const SimClock& clock() const { return clock_; }
  ~FakeNetwork();
  FakeNetwork(const FakeNetwork&) = delete;
  FakeNetwork& operator=(const FakeNetwork&) = delete;

  // --- Hosts and endpoints ---

  // A new endpoint of host `host_name` at `address`. Several endpoints may
  // share a host (same links, partitions and log name). Attaching an address
  // already attached is a bug in the test and aborts.
  std::unique_ptr<FakeDatagram> Attach(std::string host_name, NetAddress address);

  // --- Configuration (takes effect for packets sent afterwards) ---

  // An empty describer restores the default, wire::Describe.
  void SetDescriber(Describer describer);
  // Whether a packet lost as "[no route]" draws a port-unreachable report
  // at its sender (default false: it vanishes silently).
  void SetReportNoRoute(bool report) { report_no_route_ = report; }
  void SetMaxDatagramBytes(size_t bytes) { max_datagram_bytes_ = bytes; }
  size_t max_datagram_bytes() const { return max_datagram_bytes_; }

  // Links are per direction; SetLink overrides the default for one.
  void SetDefaultLink(const LinkConfig& config) { links_.SetDefault(config); }
  void SetLink(std::string_view src_host, std::string_view dst_host, const LinkConfig& config) {
    links_.Set(src_host, dst_host, config);
  }
  void SetLinkBothWays(std::string_view a, std::string_view b, const LinkConfig& config);
  const LinkConfig& Link(std::string_view src_host, std::string_view dst_host) const {
    return links_.Get(src_host, dst_host);
  }

  // --- Partitions (both directions; also hit packets already in flight) ---

  void Partition(std::string_view a, std::string_view b);
  void Heal(std::string_view a, std::string_view b);
  void HealAll() { partitions_.clear(); }
  bool IsPartitioned(std::string_view a, std::string_view b) const;

  // --- Scripted one-shot faults (see FaultScript) ---

  void DropNext(PacketPredicate match) { script_.DropNext(std::move(match)); }
  void DuplicateNext(PacketPredicate match) { script_.DuplicateNext(std::move(match)); }
  void DelayNext(PacketPredicate match, DurationNs extra_ns) {
    script_.DelayNext(std::move(match), extra_ns);
  }
  // Armed faults that have not matched a packet yet.
  size_t PendingScriptedFaults() const { return script_.pending(); }

  // --- Packet log (see PacketLog) ---

  // "A->B DATA 1400@0; B->A GRANT 10000 [dropped]".
  std::string Log(std::string_view separator = "; ") const { return log_.Render(separator); }
  std::vector<std::string> LogLines() const { return log_.Lines(); }
  void ClearLog() { log_.Clear(); }
  // Records only matching packets from now on; empty = all. E.g.
  // SetLogFilter(DescriptionStartsWithAnyOf({"DATA", "GRANT"})).
  void SetLogFilter(PacketPredicate filter) { log_.SetFilter(std::move(filter)); }

  // --- Counters ---

  // For src->dst, where dst is a host name, or the address text for packets
  // that found no endpoint.
  LinkCounters Counters(std::string_view src_host, std::string_view dst_host) const;
  LinkCounters TotalCounters() const;
  // Copies scheduled for delivery that have not arrived yet.
  size_t InFlight() const { return in_flight_.size(); }

 private:
  friend class FakeDatagram;

  // One copy of a packet between send and arrival.
  struct Packet {
    std::string src_host;
    std::string dst_host;
    NetAddress from;
    NetAddress to;
    std::vector<std::byte> bytes;
    PacketLog::EntryId log_id = PacketLog::kNotLogged;
    SimClock::TimerId timer = 0;
  };

  // Called by FakeDatagram.
  Result<size_t> Send(FakeDatagram& sender, std::span<const OutDatagram> batch);
  void Detach(FakeDatagram& endpoint);

  // Steps 1-4 above for one datagram (its parts joined into `bytes`).
  void Transmit(const FakeDatagram& sender, const NetAddress& to, std::vector<std::byte> bytes);
  // Takes ownership of `packet` and schedules its arrival at `at_ns`.
  void Launch(Packet packet, TimeNs at_ns);
  // Timer callback: step 5 and delivery.
  void Arrive(uint64_t packet_id);
  // The port-unreachable report for a packet from `from` to `to` that found
  // no endpoint, when SetReportNoRoute asked for it.
  void ReportNoRoute(const NetAddress& from, const NetAddress& to);
  // Marks a logged copy lost and counts it.
  void Lose(PacketLog::EntryId log_id, LinkCounters& counters, PacketLoss loss);
  LinkCounters& CountersFor(const std::string& src_host, const std::string& dst_host);

  static std::pair<std::string, std::string> UnorderedPair(std::string_view a, std::string_view b);

  SimClock& clock_;
  Describer describer_;
  size_t max_datagram_bytes_ = kDefaultMaxDatagramBytes;
  bool report_no_route_ = false;
  LinkModel links_;
  FaultDice dice_;
  FaultScript script_;
  PacketLog log_;
  // Borrowed endpoints by address; each removes itself when destroyed.
  std::unordered_map<NetAddress, FakeDatagram*> endpoints_;
  // Partitioned host pairs, stored as (smaller name, larger name).
  std::set<std::pair<std::string, std::string>> partitions_;
  // Copies in flight by packet id (ids increase in send order).
  std::map<uint64_t, Packet> in_flight_;
  uint64_t next_packet_id_ = 1;
  // Keyed by (src host, dst host); ordered so that totals sum deterministically.
  std::map<std::pair<std::string, std::string>, LinkCounters> counters_;
};

}  // namespace wharf::transport::fake
