// LivenessTimer: one tick's walk over every live RPC. Receivers that hear
// nothing probe with RESEND after milliseconds, not microseconds (Linux can
// hold packets for several ms, and eager resends cost more than they save);
// silent peers are presumed dead after homa.peer_timeout; servers ask for
// missing acks.
#include "homa/timer.h"

#include <algorithm>

#include "homa/peer_table.h"

namespace wharf::homa {

LivenessTimer::LivenessTimer(const HomaConfig& config, TimeNs now)
    : tick_ns_(config.tick_ns),
      unsched_bytes_(config.unsched_bytes),
      resend_ticks_(config.resend_ticks),
      resend_interval_ticks_(config.resend_interval_ticks),
      need_ack_ticks_(config.need_ack_ticks),
      peer_timeout_ns_(config.EffectivePeerTimeoutNs()),
      peer_timeout_ticks_((peer_timeout_ns_ + config.tick_ns - 1) / config.tick_ns),
      next_tick_ns_(now + config.tick_ns),
      next_path_refresh_ns_(now + kPathRefreshNs) {}

bool LivenessTimer::PresumedDead(const Rpc& rpc, TimeNs now) const {
  return rpc.silent_ticks >= peer_timeout_ticks_ &&
         now - rpc.peer->last_heard_ns >= peer_timeout_ns_ &&
         rpc.peer->probes_unanswered >= kUnansweredProbesForDeath;
}

void LivenessTimer::Consider(Rpc& rpc, int first_probe_tick) {
  ++rpc.ticks_since_probe;
  if (rpc.silent_ticks >= first_probe_tick && rpc.ticks_since_probe >= resend_interval_ticks_) {
    due_.push_back({rpc.ticks_since_probe, &rpc});
  }
}

void LivenessTimer::KeepAlive(Rpc& rpc, TimeNs now) {
  plan_.grant_pass = true;  // the grant pass is what moves this message on
  Peer& peer = *rpc.peer;
  const DurationNs interval_ns = resend_interval_ticks_ * tick_ns_;
  // One keep-alive per peer per interval, and only when the peer has been
  // quiet that long: repeating our last GRANT makes the sender answer BUSY,
  // so neither side takes our own scheduling for the other's death.
  if (now - peer.last_heard_ns < interval_ns ||
      tick_count_ - peer.keepalive_tick < resend_interval_ticks_) {
    return;
  }
  peer.keepalive_tick = tick_count_;
  ++peer.probes_unanswered;
  plan_.keepalives.push_back(&rpc);
}

void LivenessTimer::AddProbe(Rpc& rpc) {
  if (rpc.state == RpcState::kServerAwaitAck) {
    plan_.probes.push_back({&rpc, /*need_ack=*/true, 0, 0});
  } else if (!rpc.in) {
    // A client with no response byte yet: ask for the start of the response.
    // A live server answers with data or BUSY, one that lost the request
    // with RPC_UNKNOWN (and we restart).
    plan_.probes.push_back({&rpc, /*need_ack=*/false, 0, unsched_bytes_});
  } else if (auto gap = rpc.in->FirstGap()) {
    plan_.probes.push_back({&rpc, /*need_ack=*/false, gap->first, gap->second - gap->first});
  }
}

const LivenessTimer::Plan& LivenessTimer::Tick(TimeNs now, RpcRegistry& rpcs) {
  ++tick_count_;
  plan_.keepalives.clear();
  plan_.probes.clear();
  plan_.dead_clients.clear();
  plan_.dead_servers.clear();
  plan_.grant_pass = false;
  due_.clear();
  // A message whose granted bytes all arrived waits for our own grant
  // scheduler, not for the peer: it needs no RESEND, only a grant pass and,
  // if the peer is otherwise quiet, a per-peer keep-alive.
  auto starved_by_us = [](const Rpc& rpc) {
    return rpc.in && rpc.in->NeedsGrants() && !rpc.in->FirstGap();
  };
  // Every RPC, oldest first: client RPCs, then server RPCs.
  for (Rpc* rpc = rpcs.oldest(); rpc != nullptr; rpc = rpc->newer) {
    if (!rpc->is_client()) continue;
    ++rpc->silent_ticks;
    if (PresumedDead(*rpc, now)) {
      plan_.dead_clients.push_back(rpc);
    } else if (starved_by_us(*rpc)) {
      KeepAlive(*rpc, now);
    } else {
      Consider(*rpc, resend_ticks_);
    }
  }
  for (Rpc* rpc = rpcs.oldest(); rpc != nullptr; rpc = rpc->newer) {
    if (rpc->is_client()) continue;
    // The application holds the RPC: the client keeps it alive with RESENDs
    // that we answer with BUSY; no timer of ours runs.
    if (rpc->state == RpcState::kServerInService) continue;
    ++rpc->silent_ticks;
    if (PresumedDead(*rpc, now)) {
      plan_.dead_servers.push_back(rpc);
    } else if (rpc->state == RpcState::kServerReceiving) {
      if (starved_by_us(*rpc)) {
        KeepAlive(*rpc, now);
      } else {
        Consider(*rpc, resend_ticks_);
      }
    } else if (rpc->state == RpcState::kServerAwaitAck) {
      Consider(*rpc, need_ack_ticks_);
    } else if (rpc->silent_ticks >= peer_timeout_ticks_ &&
               now - rpc->peer->last_heard_ns >= peer_timeout_ns_) {
      // Sending, waiting for grants: the client probes us; if the whole
      // client went quiet, give up.
      plan_.dead_servers.push_back(rpc);
    }
  }
  // Longest-waiting first; among equals, oldest RPC first: budgets rotate
  // through every RPC instead of favouring the ones listed first.
  std::sort(due_.begin(), due_.end(), [](const DueProbe& a, const DueProbe& b) {
    return a.waited != b.waited ? a.waited > b.waited : a.rpc->handle < b.rpc->handle;
  });
  int probes = 0;
  for (const DueProbe& d : due_) {
    if (probes >= kMaxProbesPerTick) break;
    Rpc& rpc = *d.rpc;
    if (!rpc.peer->TakeProbe(tick_count_, kMaxProbesPerPeerPerTick)) continue;
    rpc.ticks_since_probe = 0;
    ++probes;
    AddProbe(rpc);
  }
  plan_.refresh_paths = now >= next_path_refresh_ns_;
  if (plan_.refresh_paths) next_path_refresh_ns_ = now + kPathRefreshNs;
  last_tick_ns_ = now;
  next_tick_ns_ = now + tick_ns_;
  return plan_;
}

}  // namespace wharf::homa
