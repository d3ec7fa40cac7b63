// homa/peer_table.h: Peer, what this endpoint remembers about one remote
// address across RPCs: the peer's priority cutoffs, acks owed to it, the
// at-most-once floors of its clients, and our outstanding client RPCs to it.
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
#include "transport/net_address.h"
#include "wire/packet.h"

namespace wharf::homa {

// Server-side memory of one client (address + port) for at-most-once: every
// client id below `floor` is finished, and `tombstones` lists finished ids at
// or above it. A request packet for either is a late duplicate and is dropped.
struct ClientRecord {
  uint64_t floor = 0;
  std::set<uint64_t> tombstones;
  // Ids of this client's RPCs that still have server state here, so that a
  // rising floor can release them without scanning every RPC.
  std::set<uint64_t> live;

  bool IsFinished(uint64_t client_id) const {
    return client_id < floor || tombstones.contains(client_id);
  }
};

struct Peer {
  transport::NetAddress addr;
  uint64_t id = 0;  // small unique number, the grant scheduler's peer key
  // Message bytes per DATA packet to this peer: its path's datagram limit
  // minus the DATA header (set when the peer is first seen).
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
  // Last tick we sent it a keep-alive GRANT (see HomaTransport::KeepAlive).
  int64_t keepalive_tick = -(1 << 20);
  // Acks we owe this peer's servers; piggybacked on DATA, or sent as ACK.
  std::vector<wire::Ack> pending_acks;
  // Our unfinished client RPC ids to each of its ports (the floor we report).
  std::map<uint16_t, std::set<uint64_t>> outstanding;
  // Its clients (by their port) as seen by our server side.
  std::map<uint16_t, ClientRecord> clients;

  // Priority for unscheduled data of a message of `length` bytes.
  uint8_t UnschedPriority(uint32_t length) const;

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

// Owned by HomaTransport. Peers live as long as the transport (a later change
// garbage-collects idle peers; see docs/protocol.md).
class PeerTable {
 public:
  explicit PeerTable(const HomaConfig& config) : config_(config) {}
  Peer& Get(const transport::NetAddress& addr);
  Peer* Find(const transport::NetAddress& addr);
  size_t size() const { return peers_.size(); }
  template <typename Fn>
  void ForEach(Fn&& fn) {
    for (auto& [addr, peer] : peers_) fn(*peer);
  }

 private:
  const HomaConfig& config_;
  uint64_t next_id_ = 1;
  std::unordered_map<transport::NetAddress, std::unique_ptr<Peer>> peers_;
};

}  // namespace wharf::homa
