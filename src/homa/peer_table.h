// homa/peer_table.h: Peer, what a host (HomaHost: one socket, all its
// endpoints) remembers about one remote address across RPCs: the peer's
// priority cutoffs, acks owed to it, the at-most-once floors of its clients,
// and our outstanding client RPCs to it. What is kept per endpoint pair (a
// floor, a client's record) is keyed by EndpointPair(ours, theirs).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "homa/config.h"
#include "homa/rpc.h"
#include "transport/message_transport.h"
#include "transport/datagram.h"
#include "transport/net_address.h"
#include "wire/packet.h"

namespace wharf::homa {

// The key of state kept per (our endpoint, the peer's endpoint): ack floors
// and at-most-once records hold between two endpoints, not two hosts, so a
// client's floor for one of our endpoints never touches another's RPCs.
constexpr uint32_t EndpointPair(uint16_t ours, uint16_t theirs) {
  return uint32_t{ours} << 16 | theirs;
}

// An ack we owe a server: our client endpoint `client_port` has finished RPC
// `client_id` with its endpoint `server_port`. It may ride only on a packet
// from `client_port` (the receiver reads the packet's sport as the client).
struct OwedAck {
  uint64_t client_id = 0;
  uint16_t server_port = 0;
  uint16_t client_port = 0;
  wire::Ack ack() const { return {client_id, server_port}; }
};

// Server-side memory of one client (address + port) talking to one of our
// endpoints, for at-most-once: every
// client id below `floor` is finished, and `tombstones` lists finished ids at
// or above it. A request packet for either is a late duplicate and is dropped.
struct ClientRecord {
  uint64_t floor = 0;
  std::set<uint64_t> tombstones;
  // This client's RPCs that have server state here, by client id: the
  // table that owns server RPCs. Ordered, so that a rising floor releases a
  // prefix without scanning every RPC.
  std::map<uint64_t, std::unique_ptr<Rpc>> live;

  bool IsFinished(uint64_t client_id) const {
    return client_id < floor || tombstones.contains(client_id);
  }
  Rpc* Find(uint64_t client_id) const {
    auto it = live.find(client_id);
    return it == live.end() ? nullptr : it->second.get();
  }
  // Remembers `client_id` as finished (when at or above the floor), keeping
  // at most `max_tombstones`: past that the oldest is forgotten (only a
  // duplicate of it delayed past thousands of newer RPCs could then run
  // twice). True if one was forgotten.
  bool AddTombstone(uint64_t client_id, size_t max_tombstones) {
    if (client_id < floor || !tombstones.insert(client_id).second) return false;
    if (tombstones.size() <= max_tombstones) return false;
    tombstones.erase(tombstones.begin());
    return true;
  }
};

// Client side: the unfinished RPC ids of one of our endpoints to one server
// port, whose smallest is
// the ack floor we report. Ids only grow, so Add appends to a sorted vector;
// Remove marks the id finished in place (ids are even: the low bit is the
// mark), Floor() drops finished ids from the front, and the vector is
// compacted when finished ids pile up behind a long-running RPC. No
// allocation per RPC, O(log n) Remove, amortised O(1) Floor.
class OutstandingIds {
 public:
  // Precondition: id is even and larger than every id added before.
  void Add(uint64_t id) {
    ids_.push_back(id);
    ++live_;
  }
  void Remove(uint64_t id);
  bool empty() const { return live_ == 0; }
  // The smallest unfinished id. Precondition: !empty().
  uint64_t Floor();

 private:
  std::vector<uint64_t> ids_;  // sorted; finished ones have the low bit set
  size_t head_ = 0;            // ids_[0, head_) are finished
  size_t live_ = 0;            // unfinished ids in ids_
};

struct Peer {
  transport::NetAddress addr;
  uint64_t id = 0;  // small unique number, the grant scheduler's peer key
  // Place in PeerTable's list of all peers (its idle sweep's order).
  size_t index = 0;
  // Live RPCs (client and server) with this peer: a peer with any is never
  // forgotten.
  uint32_t live_rpcs = 0;
  // Message bytes per DATA packet to this peer: its path's datagram limit
  // minus the DATA header. 0 until we first send it a message (asking the
  // transport for the path may cost system calls, which a packet from a new
  // source must not).
  uint32_t payload_bytes = 0;
  // False when the path never leaves this host (Datagram::IsLocalPath):
  // packets to it neither wait for the pacer nor count toward its backlog.
  bool paced = true;
  // The peer's cutoffs: priority for our unscheduled data to it. Until it
  // sends CUTOFFS we assume ours.
  std::array<uint32_t, wire::kNumPriorities> cutoffs{};
  uint16_t cutoff_version = 0;
  // Last tick we sent it CUTOFFS (rate limit: once per tick).
  int64_t cutoffs_sent_tick = -1;
  // Liveness is judged per peer, as in Homa: when it last sent us anything,
  // and how many probes (RESEND, NEED_ACK) went unanswered since. An RPC
  // fails for peer death only when its peer as a whole fell silent.
  TimeNs last_heard_ns = 0;
  int probes_unanswered = 0;
  // Probes sent this tick (budget per peer, so that thousands of RPCs to one
  // peer rotate through a few probes per tick instead of flooding it).
  int64_t probe_tick = -1;
  int probes_this_tick = 0;
  // Last tick we sent it a keep-alive GRANT (see HomaHost::KeepAlive).
  int64_t keepalive_tick = -(1 << 20);
  // Acks we owe this peer's servers; piggybacked on DATA, or sent as ACK.
  std::vector<OwedAck> pending_acks;
  // On HomaHost's list of peers owed acks (flushed every tick).
  bool owed_acks_listed = false;
  // Our unfinished client RPC ids, by EndpointPair(our client endpoint, its
  // server port): the floor each of our endpoints reports to each of its.
  std::map<uint32_t, OutstandingIds> outstanding;
  // Its clients as seen by our server endpoints, by EndpointPair(our server
  // endpoint, its client port).
  std::map<uint32_t, ClientRecord> clients;

  // The record of `pair` (EndpointPair(our server endpoint, client port)),
  // created if new unless `max_clients` records exist (nullptr then).
  ClientRecord* RecordFor(uint32_t pair, size_t max_clients) {
    auto it = clients.find(pair);
    if (it != clients.end()) return &it->second;
    if (clients.size() >= max_clients) return nullptr;
    return &clients[pair];
  }

  // No live RPC and no ack owed: nothing is lost if the peer is forgotten
  // but its at-most-once records.
  bool Idle() const { return live_rpcs == 0 && pending_acks.empty() && !owed_acks_listed; }

  // Priority for unscheduled data of a message of `length` bytes: `chosen`
  // when its sender chose one (0..7), else what this peer's cutoffs give.
  uint8_t UnschedPriority(uint32_t length,
                          transport::MessagePriority chosen = transport::kPriorityBySize) const;

  // Spends one probe of this tick's per-peer budget; false when spent.
  bool TakeProbe(int64_t tick, int budget) {
    if (probe_tick != tick) {
      probe_tick = tick;
      probes_this_tick = 0;
    }
    if (probes_this_tick >= budget) return false;
    ++probes_this_tick;
    ++probes_unanswered;
    return true;
  }
};

// Counters of a PeerTable. Monotonic.
struct PeerTableStats {
  uint64_t created = 0;
  uint64_t freed = 0;    // idle-expired or replaced at the cap
  uint64_t refused = 0;  // a new peer at the cap with no idle one to replace
};

// Owned by HomaHost. At most config.max_peers peers. A Peer reference
// stays valid until Remove(peer) (the host removes only idle peers,
// which no RPC and no pending work points to).
class PeerTable {
 public:
  explicit PeerTable(const HomaConfig& config) : config_(config) {}
  // Looked up for every packet: the last peer found answers without
  // hashing when the next packet is from it too. nullptr when unknown.
  Peer* Find(const transport::NetAddress& addr) {
    if (last_ != nullptr && last_->addr == addr) return last_;
    return FindSlow(addr);
  }
  // The peer at `addr`, added if new; nullptr when the table is full (the
  // caller may Remove an idle peer and try again). Counts created/refused.
  Peer* FindOrAdd(const transport::NetAddress& addr);
  // Forgets `peer` (which must be in the table); counts it freed.
  void Remove(Peer& peer);
  size_t size() const { return all_.size(); }
  bool full() const { return all_.size() >= config_.max_peers; }
  const PeerTableStats& stats() const { return stats_; }
  template <typename Fn>
  void ForEach(Fn&& fn) {
    for (Peer* peer : all_) fn(*peer);
  }
  // The next peer in a round-robin walk over the table (nullptr when
  // empty): the idle sweep examines a few per tick.
  Peer* NextInSweep() {
    if (all_.empty()) return nullptr;
    if (sweep_cursor_ >= all_.size()) sweep_cursor_ = 0;
    return all_[sweep_cursor_++];
  }
  // Asks `net` for the path to `peer` (packet size for datagrams of at most
  // `max_datagram_bytes`, pacing) before we first send it DATA. Control
  // path: may make system calls, once per peer.
  void LearnPath(Peer& peer, transport::Datagram& net, size_t max_datagram_bytes) {
    if (peer.payload_bytes == 0) LearnPathSlow(peer, net, max_datagram_bytes);
  }
  // Forgets peers that are idle and have been silent for
  // peer_idle_timeout_ns at `now`, examining the next few in the walk (a
  // full walk of max_peers takes max_peers / 64 calls): the timer's sweep.
  void SweepIdle(TimeNs now);
  // Makes room in a full table: forgets the first of the next few peers in
  // the walk that is idle and has been silent for `quiet_ns`, if any
  // (bounded work, so a flood of new sources cannot make it a scan). True
  // if one was.
  bool ReplaceIdle(TimeNs now, DurationNs quiet_ns);

 private:
  // A few multiplies over the address as words; std::hash<NetAddress> mixes
  // it byte by byte, which showed in per-packet profiles.
  struct AddressHash {
    size_t operator()(const transport::NetAddress& a) const noexcept;
  };
  Peer* FindSlow(const transport::NetAddress& addr);
  void LearnPathSlow(Peer& peer, transport::Datagram& net, size_t max_datagram_bytes);

  const HomaConfig& config_;
  uint64_t next_id_ = 1;
  std::unordered_map<transport::NetAddress, std::unique_ptr<Peer>, AddressHash> peers_;
  // Every peer, in no particular order (Remove swaps the last into the
  // hole); Peer::index is its place.
  std::vector<Peer*> all_;
  size_t sweep_cursor_ = 0;
  Peer* last_ = nullptr;  // the peer Find returned last
  PeerTableStats stats_;
};

}  // namespace wharf::homa
