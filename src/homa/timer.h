// homa/timer.h: LivenessTimer, the protocol timer of one host (HomaModule's
// homa_timer): every tick_ns it ages every live RPC and decides which ones
// to probe (RESEND from a receiver that hears nothing, NEED_ACK from a
// server whose answer is unacknowledged), which messages wait on our own
// grants (a keep-alive to their quiet peer instead of a RESEND), and which
// RPCs to give up on because their peer is presumed dead. It also says when
// the transport's path caches are due for a refresh.
//
// It sends nothing and ends no RPC: Tick returns its decisions as a Plan,
// which the host (homa_host.h) carries out. Probes are paced here: at most
// kMaxProbesPerTick per tick and kMaxProbesPerPeerPerTick per peer, the
// longest-waiting first, so that thousands of RPCs to a slow peer rotate
// through a few probes per tick instead of flooding it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "base/clock.h"
#include "homa/config.h"
#include "homa/rpc.h"
#include "homa/rpc_registry.h"

namespace wharf::homa {

// Owned by HomaHost. Reads and updates the liveness fields of the RPCs and
// peers it is shown (Rpc::silent_ticks, ticks_since_probe; Peer::
// probes_unanswered, probe budget, keepalive_tick); owns nothing else.
// Single-threaded: the host's thread.
class LivenessTimer {
 public:
  // Caps on the probes (RESEND, NEED_ACK) of one tick: in all, and per
  // peer. A probe over a budget stays due and goes out on a later tick.
  static constexpr int kMaxProbesPerTick = 1000;
  static constexpr int kMaxProbesPerPeerPerTick = 16;
  // A peer is presumed dead when it sent nothing for the peer timeout and
  // ignored at least this many probes.
  static constexpr int kUnansweredProbesForDeath = 3;
  // How often the transport is asked to re-read its path caches (the host's
  // interface addresses): rarely, and never on the receive path.
  static constexpr DurationNs kPathRefreshNs = 10 * kNsPerSec;
  // How often the timer runs while the host has no RPC at all.
  static constexpr DurationNs kIdleTickNs = 50 * kNsPerMs;

  // A probe to send: NEED_ACK (a server awaiting its ack), else RESEND of
  // the bytes [offset, offset + length) of rpc's incoming message (the
  // first gap; a client with no response byte yet asks for the first
  // unsched_bytes).
  struct Probe {
    Rpc* rpc;
    bool need_ack;
    uint32_t offset;
    uint32_t length;
  };

  // What one tick decided, in the order to carry it out. Pointers are the
  // registry's RPCs, valid until the first of them is freed: carry out the
  // keep-alives and probes before the deaths (freeing a dead RPC frees only
  // that one).
  struct Plan {
    // Messages waiting on our grants whose peer is quiet: repeat our last
    // GRANT, which the sender answers with BUSY (one per peer per
    // resend interval).
    std::vector<Rpc*> keepalives;
    // Probes, longest-waiting first.
    std::vector<Probe> probes;
    // Client RPCs to fail and server RPCs to forget: their peer is silent.
    std::vector<Rpc*> dead_clients;
    std::vector<Rpc*> dead_servers;
    // Some message waits on our own grant pass.
    bool grant_pass = false;
    // Time to ask the transport to refresh its path caches.
    bool refresh_paths = false;
  };

  // The first tick is due at `now` + tick_ns.
  LivenessTimer(const HomaConfig& config, TimeNs now);
  LivenessTimer(const LivenessTimer&) = delete;
  LivenessTimer& operator=(const LivenessTimer&) = delete;

  bool Due(TimeNs now) const { return now >= next_tick_ns_; }
  // When the timer wants to run next: every tick, or every kIdleTickNs
  // while the host is `idle` (no RPC, send or release pending: housekeeping
  // only), so that an idle host that sleeps costs no CPU to speak of.
  TimeNs NextDeadline(bool idle) const {
    return idle ? std::max(next_tick_ns_, last_tick_ns_ + kIdleTickNs) : next_tick_ns_;
  }

  // Runs one tick at `now` over every RPC of `rpcs`, oldest first (client
  // RPCs, then server RPCs); schedules the next. The plan is valid until the
  // next Tick.
  const Plan& Tick(TimeNs now, RpcRegistry& rpcs);

  // Ticks run so far (rate limits count in ticks).
  int64_t tick_count() const { return tick_count_; }
  // config.EffectivePeerTimeoutNs().
  DurationNs peer_timeout_ns() const { return peer_timeout_ns_; }

 private:
  // Ages a live (not presumed dead) RPC and files it where it belongs.
  void Consider(Rpc& rpc, int first_probe_tick);
  bool PresumedDead(const Rpc& rpc, TimeNs now) const;
  void KeepAlive(Rpc& rpc, TimeNs now);
  // Files the probe for `rpc` (none if nothing is missing).
  void AddProbe(Rpc& rpc);

  // Constant after construction: the HomaConfig keys of the same names.
  const DurationNs tick_ns_;
  const uint32_t unsched_bytes_;  // what a client's RESEND asks for first
  const int resend_ticks_;
  const int resend_interval_ticks_;
  const int need_ack_ticks_;
  const DurationNs peer_timeout_ns_;  // EffectivePeerTimeoutNs()
  const int64_t peer_timeout_ticks_;  // peer_timeout_ns_ in ticks, rounded up

  int64_t tick_count_ = 0;       // ticks run
  TimeNs last_tick_ns_ = 0;      // when the last one ran (0: none yet)
  TimeNs next_tick_ns_;          // when the next one is due
  TimeNs next_path_refresh_ns_;  // when Plan::refresh_paths is next set
  // Probes due this tick, with how many ticks each waited (Tick's scratch,
  // kept for its memory).
  struct DueProbe {
    int waited;
    Rpc* rpc;
  };
  std::vector<DueProbe> due_;
  Plan plan_;  // Tick's result, kept for its memory
};

}  // namespace wharf::homa
