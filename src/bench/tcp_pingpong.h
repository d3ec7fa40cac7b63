// bench/tcp_pingpong.h: the kernel TCP ping-pong baseline (TCP_NODELAY
// on both ends): one connection, the client writes `size_bytes` and reads
// the whole echo back before the next request; the echo server, in a forked
// child, writes back whatever it reads. Busy-poll or blocking (pingpong.h).
#pragma once

#include <cstddef>

#include "base/clock.h"
#include "bench/pingpong.h"
#include "wharf/result.h"

namespace wharf::bench {

// Requests above this are refused (each side holds one request in memory).
inline constexpr size_t kMaxTcpRequestBytes = 16 << 20;

// Runs one ping-pong. A reply that does not complete within reply_timeout_ns
// fails the run: a stream that stalls has no resend to count as a loss.
Result<PingPongResult> RunTcpPingPong(const PingPongOptions& options, const Clock& clock,
                                      const ProgressFn& progress = {});

}  // namespace wharf::bench
