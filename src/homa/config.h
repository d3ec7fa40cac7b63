// homa/config.h: every tunable of the Homa-style protocol, with its default,
// and the check of a whole configuration (config.cc). docs/protocol.md
// explains each; the config key is the field name under `homa:` in
// wharfd.yaml / endpoint options (e.g. homa.unsched_bytes).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "base/clock.h"
#include "wharf/status.h"
#include "wire/packet.h"

namespace wharf::homa {

struct HomaConfig {
  // Every other setting is the host's (HomaHost: one socket, all its
  // endpoints). This one is only the id of the endpoint HomaTransport::Create
  // opens: the sport of what it sends and the dport it accepts
  // (docs/protocol.md section 4). wire::kDefaultEndpoint unless set; more
  // endpoints, by id or by name (wire::EndpointIdForName), open with
  // HomaHost::OpenEndpoint.
  uint16_t endpoint_id = wire::kDefaultEndpoint;

  // Largest message (request or response) accepted or sent. Homa's kernel
  // module stops at 1 MB; we keep a 32-bit length on the wire.
  uint32_t max_message_bytes = 64u << 20;

  // Bytes a sender transmits before hearing any GRANT: about one
  // bandwidth-delay product, rounded up to whole packets.
  uint32_t unsched_bytes = 60'000;

  // Receiver: how many incoming messages it grants to at once (at most one
  // per sending peer), and the total granted-but-not-received bytes it allows
  // across them. The per-message window is max_incoming_bytes / (N + 1) for N
  // grantable messages (Homa's dynamic window), at least one packet.
  // 4 MB rather than Homa's 400 KB: the bound must cover the link rate times
  // the time a grant takes to come back, and a user-space receiver's grant
  // loop takes 100 us or more (wake-ups, batches), not Homa's ~10 us. With
  // 400 KB, 1 MiB messages over a veth pair at ~50 Gbit/s fell into a
  // grant-starved regime half the time (24 instead of 56 Gbit/s).
  int overcommit = 8;
  uint32_t max_incoming_bytes = 4'000'000;

  // Share of granted bytes (per mille) given to the oldest message instead of
  // the shortest, so large messages never starve under SRPT; each FIFO grant
  // is fifo_grant_bytes.
  int grant_fifo_permille = 50;
  uint32_t fifo_grant_bytes = 50'000;

  // Priorities (0 lowest .. 7 highest). Unscheduled data of a message of
  // length L goes at the highest priority p with L <= unsched_cutoffs[p];
  // scheduled data at 0..max_sched_priority, best message highest.
  std::array<uint32_t, wire::kNumPriorities> unsched_cutoffs = {0, 0, 0, 0, 1'000'000'000,
                                                                15'000, 2'800, 200};
  uint16_t cutoff_version = 1;
  int max_sched_priority = 3;
  // Control packets (GRANT, RESEND, ACK...) always use this priority.
  uint8_t control_priority = 7;

  // Pacer: the sender estimates the NIC queue from link_bps and keeps at most
  // max_nic_backlog_ns of data queued below it; messages shorter than
  // pacer_bypass_bytes skip the pacer. The backlog must outlast the sender's
  // wake-up between pacer slots, or the link idles: a thread that sleeps
  // wakes 50-100 us late on a loaded 2-CPU VM (timer slack and the cross-CPU
  // wake-up), so 100 us rather than the 2-5 us of Homa's spinning pacer.
  uint64_t link_bps = 25'000'000'000;
  // homa.link_rate: auto (the default) paces at link_bps only the paths
  // that cross a device with a wire: a path through a software device (a
  // veth pair between network namespaces, a tun; transport::Datagram::
  // IsSoftwarePath) is left unpaced like a local one, since its "link" runs
  // as fast as the CPUs hand packets on and no device queue builds below the
  // socket. A configured rate (false here) paces every path that leaves the
  // host, which is what a veth that leads on to a NIC (a container behind
  // a bridge or NAT) or a shaped link (tc) needs.
  bool link_rate_auto = true;
  DurationNs max_nic_backlog_ns = 100 * kNsPerUs;
  uint32_t pacer_bypass_bytes = 1'000;

  // Timers. The protocol timer ticks every tick_ns. A receiver that has heard
  // nothing for resend_ticks sends RESEND, then again every
  // resend_interval_ticks. A server whose response is fully sent asks for
  // an ACK after need_ack_ticks.
  DurationNs tick_ns = 1 * kNsPerMs;
  int resend_ticks = 5;
  int resend_interval_ticks = 5;
  int need_ack_ticks = 2;
  // Peer death by silence: an RPC fails with kUnavailable once it and its
  // peer have been silent this long and the peer ignored 3 probes. Seconds,
  // not milliseconds: a live process can be paused that long (SIGSTOP, page
  // faults, a debugger, CPU quota), and a dead one is usually reported much
  // sooner by the kernel (ICMP port / host unreachable ends its RPCs at once).
  DurationNs peer_timeout_ns = 5 * kNsPerSec;
  // Deprecated (homa.timeout_ticks): when > 0, overrides peer_timeout_ns
  // with timeout_ticks * tick_ns.
  int timeout_ticks = 0;
  // A client whose request the server keeps answering with RPC_UNKNOWN
  // restarts it at most this often, then fails the RPC with kUnavailable.
  int max_restarts = 100;

  // Memory bound for incoming messages across all RPCs: a new incoming
  // message that would exceed it is dropped (the sender retries later).
  uint64_t max_incoming_buffer_bytes = 1ull << 30;

  // Bounded per-peer state (every table keyed by a remote has a cap, an idle
  // timeout and counters). At most max_peers remote addresses are known at
  // once; a new one beyond that replaces an idle one or is refused (its
  // packet dropped, homa.peers_refused). A peer with no live RPC that has
  // sent nothing for peer_idle_timeout_ns is forgotten, with its
  // at-most-once records.
  uint32_t max_peers = 16'384;
  DurationNs peer_idle_timeout_ns = 30 * kNsPerSec;
  // At-most-once records per peer: client endpoints remembered (a request
  // from one more is dropped) and finished ids above each client's ack floor
  // (past the cap the oldest is forgotten, homa.tombstones_evicted).
  uint32_t max_clients_per_peer = 64;
  uint32_t max_tombstones_per_client = 4'096;

  // The peer timeout in effect (peer_timeout_ns, or the deprecated ticks).
  DurationNs EffectivePeerTimeoutNs() const {
    return timeout_ticks > 0 ? timeout_ticks * tick_ns : peer_timeout_ns;
  }
};

// OK if `config` can run on a socket whose datagrams hold `max_datagram_bytes`;
// else kInvalidArgument naming the key ("homa.overcommit: expected 1..64").
Status ValidateConfig(const HomaConfig& config, size_t max_datagram_bytes);

}  // namespace wharf::homa
