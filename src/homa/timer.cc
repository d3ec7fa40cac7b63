// HomaHost's protocol timer, run every tick_ns from Poll(): receivers
// that hear nothing send RESEND (milliseconds, not microseconds: Linux can
// hold packets for several ms, and eager resends cost more than they save),
// silent peers are declared dead after homa.peer_timeout, servers ask for
// missing acks, owed acks are flushed, and idle peers are forgotten.
#include <algorithm>
#include <string>
#include <vector>

#include "homa/homa_host.h"

namespace wharf::homa {
namespace {

// Caps the probes (RESEND, NEED_ACK) of one tick: in all, and per peer. Homa
// keeps one RESEND per peer outstanding for the same reason: thousands of RPCs
// to a slow or dead peer must not turn each tick into a packet storm. A probe
// over a budget stays due and goes out on a later tick (rotation).
constexpr int kMaxProbesPerTick = 1000;
constexpr int kMaxProbesPerPeerPerTick = 16;
// A peer is presumed dead when it sent nothing for the peer timeout and
// ignored at least this many probes.
constexpr int kUnansweredProbesForDeath = 3;

}  // namespace

void HomaHost::Tick() {
  ++tick_count_;
  const TimeNs now = now_ns_;
  // Receive blocks nobody took for a while go back to the system (the
  // timer runs at least every idle tick).
  (void)receive_pool_->ReleaseIdle(now);
  const DurationNs timeout_ns = peer_timeout_ns_;
  std::vector<Rpc*> dead_clients;
  std::vector<Rpc*> dead_servers;
  // Probes due this tick; served oldest first (largest ticks_since_probe) so
  // that budgets rotate through every RPC instead of favouring the ones the
  // table happens to list first.
  struct Due {
    int waited;
    Rpc* rpc;
  };
  std::vector<Due> due;
  auto consider = [&](Rpc& rpc, int first_tick) {
    ++rpc.ticks_since_probe;
    if (rpc.silent_ticks >= first_tick && rpc.ticks_since_probe >= config_.resend_interval_ticks) {
      due.push_back({rpc.ticks_since_probe, &rpc});
    }
  };
  auto presumed_dead = [&](const Rpc& rpc) {
    return rpc.silent_ticks >= peer_timeout_ticks_ &&
           now - rpc.peer->last_heard_ns >= timeout_ns &&
           rpc.peer->probes_unanswered >= kUnansweredProbesForDeath;
  };
  // A message whose granted bytes all arrived waits for our own grant
  // scheduler, not for the peer: it needs no RESEND, only a grant pass and,
  // if the peer is otherwise quiet, a per-peer keep-alive.
  auto starved_by_us = [](const Rpc& rpc) {
    return rpc.in && rpc.in->NeedsGrants() && !rpc.in->FirstGap();
  };
  // Every RPC, oldest first: client RPCs, then server RPCs.
  for (Rpc* rpc = oldest_rpc_; rpc != nullptr; rpc = rpc->newer) {
    if (!rpc->is_client()) continue;
    ++rpc->silent_ticks;
    if (presumed_dead(*rpc)) {
      dead_clients.push_back(rpc);
    } else if (starved_by_us(*rpc)) {
      KeepAlive(*rpc, now);
    } else {
      consider(*rpc, config_.resend_ticks);
    }
  }
  for (Rpc* rpc = oldest_rpc_; rpc != nullptr; rpc = rpc->newer) {
    if (rpc->is_client()) continue;
    // The application holds the RPC: the client keeps it alive with RESENDs
    // that we answer with BUSY; no timer of ours runs.
    if (rpc->state == RpcState::kServerInService) continue;
    ++rpc->silent_ticks;
    if (presumed_dead(*rpc)) {
      dead_servers.push_back(rpc);
    } else if (rpc->state == RpcState::kServerReceiving) {
      if (starved_by_us(*rpc)) {
        KeepAlive(*rpc, now);
      } else {
        consider(*rpc, config_.resend_ticks);
      }
    } else if (rpc->state == RpcState::kServerAwaitAck) {
      consider(*rpc, config_.need_ack_ticks);
    } else if (rpc->silent_ticks >= peer_timeout_ticks_ &&
               now - rpc->peer->last_heard_ns >= timeout_ns) {
      // Sending, waiting for grants: the client probes us; if the whole
      // client went quiet, give up.
      dead_servers.push_back(rpc);
    }
  }
  // Longest-waiting first; among equals, oldest RPC first.
  std::sort(due.begin(), due.end(), [](const Due& a, const Due& b) {
    return a.waited != b.waited ? a.waited > b.waited : a.rpc->handle < b.rpc->handle;
  });
  int probes = 0;
  for (const Due& d : due) {
    if (probes >= kMaxProbesPerTick) break;
    Rpc& rpc = *d.rpc;
    if (!rpc.peer->TakeProbe(tick_count_, kMaxProbesPerPeerPerTick)) continue;
    rpc.ticks_since_probe = 0;
    ++probes;
    if (rpc.state == RpcState::kServerAwaitAck) {
      EmitControl(rpc.peer_addr, rpc.local_port, rpc.peer_port, rpc.id, wire::NeedAck{});
      ++stats_.need_acks_sent;
    } else {
      SendResend(rpc);
    }
  }
  // Failing an RPC destroys only that RPC, so the others' pointers hold.
  for (Rpc* dead : dead_clients) {
    Rpc& rpc = *dead;
    const uint64_t id = rpc.id;
    ++stats_.client_timeouts;
    FailClientRpc(rpc, UnavailableError(
                           "homa: no answer from " + rpc.peer_addr.ToString() + " for " +
                           std::to_string(peer_timeout_ns_ / kNsPerMs) + " ms (RPC " +
                           std::to_string(id) + ", homa.peer_timeout); peer presumed dead"));
  }
  for (Rpc* dead : dead_servers) {
    ++stats_.server_timeouts;
    DestroyServerRpc(*dead, /*tombstone=*/true);
  }
  FlushAcks();
  SweepIdlePeers(now);
  if (now >= next_path_refresh_ns_) {
    next_path_refresh_ns_ = now + kPathRefreshNs;
    net_->RefreshPaths();
  }
}

void HomaHost::KeepAlive(Rpc& rpc, TimeNs now) {
  grants_dirty_ = true;  // the grant pass is what moves this message on
  Peer& peer = *rpc.peer;
  const DurationNs interval_ns = config_.resend_interval_ticks * config_.tick_ns;
  // One keep-alive per peer per interval, and only when the peer has been
  // quiet that long: repeating our last GRANT makes the sender answer BUSY,
  // so neither side takes our own scheduling for the other's death.
  if (now - peer.last_heard_ns < interval_ns ||
      tick_count_ - peer.keepalive_tick < config_.resend_interval_ticks) {
    return;
  }
  peer.keepalive_tick = tick_count_;
  ++peer.probes_unanswered;
  EmitControl(rpc.peer_addr, rpc.local_port, rpc.peer_port, rpc.id,
              wire::Grant{rpc.in->granted(), static_cast<uint8_t>(config_.max_sched_priority), 0});
  ++stats_.grants_sent;
}

void HomaHost::SendResend(Rpc& rpc) {
  wire::Resend resend;
  resend.priority = static_cast<uint8_t>(config_.max_sched_priority);
  if (rpc.in) {
    auto gap = rpc.in->FirstGap();
    if (!gap) return;  // nothing missing (Tick sends keep-alives instead)
    resend.offset = gap->first;
    resend.length = gap->second - gap->first;
  } else {
    // A client with no response byte yet: ask for the start of the response.
    // A live server answers with data or BUSY, one that lost the request
    // with RPC_UNKNOWN (and we restart).
    resend.offset = 0;
    resend.length = config_.unsched_bytes;
  }
  EmitControl(rpc.peer_addr, rpc.local_port, rpc.peer_port, rpc.id, resend);
  ++stats_.resends_sent;
}

void HomaHost::FlushAcks() {
  // Only the peers owed acks: walking the whole table every tick would cost
  // max_peers steps per millisecond. A peer owed acks is not idle, so none
  // was removed meanwhile.
  for (Peer* peer : peers_owed_acks_) {
    peer->owed_acks_listed = false;
    while (!peer->pending_acks.empty()) {
      const OwedAck& first = peer->pending_acks.front();
      SendAcks(*peer, first.client_port, first.server_port);
    }
  }
  peers_owed_acks_.clear();
}

void HomaHost::OweAck(Peer& peer, const OwedAck& ack) {
  peer.pending_acks.push_back(ack);
  if (!peer.owed_acks_listed) {
    peer.owed_acks_listed = true;
    peers_owed_acks_.push_back(&peer);
  }
}

void HomaHost::SendAcks(Peer& peer, uint16_t client_port, uint16_t server_port) {
  const uint64_t floor = ClientFloor(peer, client_port, server_port);
  wire::AckList acks;
  bool sent_any = false;
  auto send = [&] {
    // The packet's rpc_id carries our floor for that pair of endpoints.
    EmitControl(peer.addr, client_port, server_port, floor, acks);
    ++stats_.acks_sent;
    acks.count = 0;
    sent_any = true;
  };
  // Keep acks for other endpoint pairs; those below the floor need no entry.
  size_t kept = 0;
  for (const OwedAck& ack : peer.pending_acks) {
    if (ack.server_port != server_port || ack.client_port != client_port) {
      peer.pending_acks[kept++] = ack;
    } else if (ack.client_id >= floor) {
      acks.acks[acks.count++] = ack.ack();
      if (acks.count == wire::kMaxAcksPerPacket) send();
    }
  }
  peer.pending_acks.resize(kept);
  if (acks.count > 0 || !sent_any) send();
}

}  // namespace wharf::homa
