// bench/shm_pingpong.h: the raw shared-memory ping-pong baseline: a
// parent (client) and a forked child (echo server) exchanging fixed-size
// messages through one shm::Region, requests on the command ring and replies
// on the completion ring, payloads in the heap (requests in the first half,
// replies in the second, as an application and wharfd share it). Both sides
// busy-poll (--mode poll) or spin briefly and then sleep on eventfd
// doorbells with the ring's sleep/wake protocol (--mode block). It is the
// floor wharfd's same-host path is compared against: no daemon, no
// validation, one copy per round trip (the server builds its reply from the
// request). See pingpong.h for the options and what is measured.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/clock.h"
#include "bench/pingpong.h"
#include "wharf/result.h"

namespace wharf::bench {

// The largest request (as for TCP); each heap half holds one, page-rounded.
inline constexpr size_t kMaxShmRequestBytes = 16 << 20;

// --mode block: empty polls of the ring before a side announces it will
// sleep and sleeps on its doorbell: one, as wharf's block rows run with
// endpoint.spin = 0, so that a round trip pays for two wake-ups. (With a
// thousand polls, about a microsecond, the answer of a peer on the other
// CPU usually arrived before the sleep and "block" measured spinning.)
inline constexpr uint32_t kShmBlockSpinPolls = 1;

// Runs one ping-pong. options.address and options.port are not used.
Result<PingPongResult> RunShmPingPong(const PingPongOptions& options, const Clock& clock,
                                      const ProgressFn& progress = {});

}  // namespace wharf::bench
