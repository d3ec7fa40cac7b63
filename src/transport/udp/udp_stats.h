// transport/udp/udp_stats.h: UdpStats, the counters of one UdpDatagram.
// Its parts (the receiver, the path table) count into the same struct, so
// that stats() is one live view.
#pragma once

#include <cstdint>

namespace wharf::transport {

// Counters since Open. Monotonic; read them with stats().
struct UdpStats {
  // Datagrams the kernel accepted (a GSO send counts each segment).
  uint64_t sent = 0;
  // sendmmsg calls that accepted at least one message.
  uint64_t send_batches = 0;
  // Messages that carried two or more datagrams as one GSO send.
  uint64_t gso_sends = 0;
  // Of those, messages whose parts were copied into one buffer first
  // (UdpOptions::gso_copy_min_bytes).
  uint64_t gso_copied_sends = 0;
  // Datagrams handed out by Receive.
  uint64_t received = 0;
  // Kernel receive buffers that held two or more datagrams (GRO) and were
  // split here.
  uint64_t gro_coalesced = 0;
  // Datagrams dropped on receive because they were larger than
  // MaxDatagramBytes() (MSG_TRUNC, or an oversized GRO segment).
  uint64_t truncated = 0;
  // ECONNREFUSED reports consumed. The kernel delivers them only when the
  // socket asked for ICMP errors (IP_RECVERR) and always on the call after
  // the one that provoked them, so the datagram that met the error is
  // retried, not dropped.
  uint64_t refused = 0;
  // Datagrams dropped because the kernel rejected their destination
  // (no route, host down, firewall) or a refusal repeated.
  uint64_t send_dropped = 0;
  // 1 once a GSO send failed where the same datagrams sent plain succeeded,
  // which turns GSO off for this socket.
  uint64_t gso_fallbacks = 0;
  // ICMP reports read from the error queues and handed out by
  // TakePathErrors (port / host / network unreachable, ...).
  uint64_t path_errors = 0;
  // Entries of the remote path-MTU cache dropped because it was full.
  uint64_t path_cache_evictions = 0;
  // Datagrams sent through the hot-peer socket; whether it was opened (1);
  // how often it was handed over to a new peer; attempts to open or hand
  // it over that the kernel refused.
  uint64_t hot_sends = 0;
  uint64_t hot_sockets_opened = 0;
  uint64_t hot_handovers = 0;
  uint64_t hot_socket_failures = 0;
  // Adaptive GRO (LoopbackGro::kAdaptive): times it was turned on and off,
  // and turn-offs put back because a datagram was already queued (it may
  // be a coalesced buffer, which only reads with GRO on can split).
  uint64_t gro_enabled_times = 0;
  uint64_t gro_disabled_times = 0;
  uint64_t gro_disable_deferred = 0;
};

}  // namespace wharf::transport
