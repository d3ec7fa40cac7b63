// engine/peer_rtt_table.h: PeerRttTable, the round trips of the calls and
// messages an engine's host sent, per peer: passive measurement from the
// applications' own traffic, at no extra packets. The engine records each
// answered request's round trip (send to the kernel's receive stamp of the
// answer where the transport has one, else to the poll that delivered it;
// the server's handling included) and each request that failed or
// timed out; whoever hosts the engine (wharfd's mesh service) takes what
// is new now and then and keeps the windows and history itself.
//
// Bounded: at most `max_peers` peers, each a CompactHistogram (1,112
// bytes) and a few counters; a peer unheard of for `idle_timeout_ns` is
// forgotten at the next Take, or when a new peer needs its place. A new
// peer that finds the table full of active ones is not tracked
// (counters().untracked). It does not know schemes, windows or formats.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <unordered_map>

#include "base/clock.h"
#include "base/compact_histogram.h"
#include "transport/net_address.h"

namespace wharf::engine {

// A peer as measured: the engine's transport index and the peer's address
// (every endpoint there together).
struct PeerRttKey {
  uint8_t transport = 0;
  transport::NetAddress address;
  friend bool operator==(const PeerRttKey&, const PeerRttKey&) = default;
};

struct PeerRttKeyHash {
  size_t operator()(const PeerRttKey& k) const noexcept {
    return std::hash<transport::NetAddress>()(k.address) ^ (size_t{k.transport} * 0x9E3779B97F4A7C15ULL);
  }
};

// What one peer saw since the last Take.
struct PeerRttDelta {
  const PeerRttKey& peer;
  const CompactHistogram& round_trips;  // answered requests, in ns
  uint64_t failures;                    // unanswered: failed or timed out
};

// Owned by an Engine; single-threaded like it.
class PeerRttTable {
 public:
  struct Options {
    // 0 turns measuring off (the engine then reads no clock for it).
    size_t max_peers = 256;
    DurationNs idle_timeout_ns = 60 * kNsPerSec;
  };
  struct Counters {
    uint64_t round_trips = 0;  // answered requests recorded
    uint64_t failures = 0;     // unanswered ones recorded
    uint64_t untracked = 0;    // not recorded: a new peer found the table full
    uint64_t evicted = 0;      // peers forgotten after idle_timeout_ns
  };

  explicit PeerRttTable(Options options) : options_(options) {}

  bool enabled() const { return options_.max_peers > 0; }
  // An answer from `peer` `rtt_ns` after its request left; at `now`.
  void RecordRoundTrip(const PeerRttKey& peer, TimeNs now, DurationNs rtt_ns);
  // A request to `peer` that got no answer (the transport gave up, or its
  // deadline passed first).
  void RecordFailure(const PeerRttKey& peer, TimeNs now);

  // Many at once, measured elsewhere: another table's Take (wharfd keeps
  // what a detaching application's engine had not handed out yet).
  void Add(const PeerRttKey& peer, TimeNs now, const CompactHistogram& round_trips,
           uint64_t failures);

  // Hands `visit` every peer with something recorded since the last Take,
  // then clears that; forgets peers idle for idle_timeout_ns at `now`.
  void Take(TimeNs now, const std::function<void(const PeerRttDelta&)>& visit);

  size_t size() const { return peers_.size(); }
  const Counters& counters() const { return counters_; }

 private:
  struct Entry {
    CompactHistogram round_trips;
    uint64_t failures = 0;
    TimeNs last_ns = 0;
  };

  // The entry of `peer`, made if there is room (after forgetting idle
  // peers, at most once per kFullScanInterval); null if there is none.
  Entry* Find(const PeerRttKey& peer, TimeNs now);
  void EvictIdle(TimeNs now);

  // A full table of active peers is scanned for idle ones at most this
  // often, so that a stream of new peers costs a lookup each, not a scan.
  static constexpr DurationNs kFullScanInterval = kNsPerSec;

  const Options options_;
  // Node-based: an entry is 1.1 KiB, and a rehash then moves pointers only.
  std::unordered_map<PeerRttKey, Entry, PeerRttKeyHash> peers_;
  TimeNs next_full_scan_ns_ = 0;
  Counters counters_;
};

}  // namespace wharf::engine
