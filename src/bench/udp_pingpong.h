// bench/udp_pingpong.h: the raw kernel UDP ping-pong baseline: an echo
// server in a forked child and a client on the calling thread exchanging
// one datagram at a time, both busy-polling or both blocking (see
// pingpong.h for the options and what is measured).
#pragma once

#include <cstddef>

#include "base/clock.h"
#include "bench/pingpong.h"
#include "wharf/result.h"

namespace wharf::bench {

// The largest UDP payload over IPv4.
inline constexpr size_t kMaxUdpPayloadBytes = 65'507;

// Runs one ping-pong. Every datagram carries the request's sequence number in
// its first bytes, so a reply that arrives after its request was resent
// (reply_timeout_ns) is recognised and dropped rather than timed.
Result<PingPongResult> RunUdpPingPong(const PingPongOptions& options, const Clock& clock,
                                      const ProgressFn& progress = {});

}  // namespace wharf::bench
