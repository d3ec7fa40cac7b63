// bench/pingpong.h: what the kernel ping-pong baselines (UDP and TCP)
// share: their options and results, and the client loop that times round
// trips. A ping-pong is one client sending `size_bytes`, waiting for the
// whole echo, and only then sending the next, so each sample is one full
// round trip (sockperf's ping-pong with --full-rtt). The echo server runs in
// a forked child so the two sides sit on separate cores, as they will when
// wharf is compared against them.
//
// The socket work of each protocol is in udp_pingpong.cc / tcp_pingpong.cc;
// this file holds no socket calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "bench/affinity.h"
#include "bench/child_process.h"
#include "bench/latency_stats.h"
#include "wharf/result.h"
#include "wharf/status.h"

namespace wharf::bench {

// How both sides wait for data.
enum class WaitMode {
  kBusyPoll,  // non-blocking sockets, spin on recv (sockperf --nonblocked)
  kBlocking,  // plain blocking recv: the thread sleeps and is woken
};

// "poll" / "block", as the CLI spells them.
std::string_view WaitModeName(WaitMode mode);

struct PingPongOptions {
  std::string address =
      "127.0.0.1";                // numeric IPv4/IPv6: the server binds it, the client sends to it
  uint16_t port = 0;              // server port; 0 lets the kernel pick a free one
  size_t size_bytes = 64;         // request size; the response echoes it
  uint64_t iterations = 100'000;  // measured round trips
  uint64_t warmup = 1'000;        // round trips before measuring, not recorded
  WaitMode mode = WaitMode::kBusyPoll;
  bool pin = true;  // client on client_cpu, server on server_cpu (see affinity.h)
  int client_cpu = 0;
  int server_cpu = 1;
  // The whole run, warm-up included, stops after this long; the result then
  // covers the round trips done so far and says so (hit_time_limit).
  DurationNs time_limit_ns = 60 * kNsPerSec;
  // No reply within this long: UDP resends (the datagram is taken as lost),
  // TCP fails the run (a stream does not lose data; it is stuck).
  DurationNs reply_timeout_ns = 1 * kNsPerSec;
  // UDP: give up after this many lost round trips.
  uint64_t max_timeouts = 100;
};

// Sent to the progress callback at most every kProgressIntervalNs.
struct PingPongProgress {
  uint64_t done = 0;   // round trips completed, warm-up included
  uint64_t total = 0;  // warmup + iterations
  DurationNs elapsed_ns = 0;
};
using ProgressFn = std::function<void(const PingPongProgress&)>;
inline constexpr DurationNs kProgressIntervalNs = 250 * kNsPerMs;

struct PingPongResult {
  LatencySummary latency;       // the measured round trips only
  uint64_t warmup_done = 0;     // warm-up round trips completed
  uint64_t timeouts = 0;        // round trips resent after reply_timeout (UDP)
  bool hit_time_limit = false;  // stopped by time_limit_ns before `iterations`
  PinPlan pinning;              // where the two sides ran
  uint16_t port = 0;            // the server's port
  std::string server_exit;      // how the echo server ended ("exit code 0")
  // User + system CPU time of every process of the run (client, server and,
  // managed, wharfd) during the measured round trips; -1 if unknown.
  DurationNs cpu_ns = -1;
  int cpu_processes = 0;  // how many processes cpu_ns covers
  // Where the processes ran and which of them spun, when more than the
  // pinning says (managed rows); "" otherwise.
  std::string hosting_note;
};

// The protocol-specific client half of a run. Owned by the Run* function;
// used from one thread.
class PingPongClient {
 public:
  enum class Outcome { kOk, kTimedOut };
  virtual ~PingPongClient() = default;
  // Sends request number `seq` and waits for its whole echo until
  // `deadline_ns` (on the clock given to RunPingPongLoop).
  virtual Result<Outcome> RoundTrip(uint64_t seq, TimeNs deadline_ns) = 0;
  // Tells the server the run is over (so that it exits by itself).
  virtual void Finish() = 0;
};

// Range checks shared by both protocols; `max_size_bytes` is the protocol's.
Status ValidatePingPongOptions(const PingPongOptions& options, size_t max_size_bytes);

// The deadline a forked echo server gives itself: it exits on its own if
// the parent never tells it to stop (the parent also kills it at the end).
TimeNs ServerDeadline(const PingPongOptions& options, const Clock& clock);

// Runs the client side against an already forked `server`: pins the caller
// (restored afterwards), does warmup + iterations round trips, tells the
// server to finish and reaps it. `what` ("udp poll 64 B") prefixes errors.
// The CPU time of this process, the server and `other_pids` (wharfd) during
// the measured round trips goes into cpu_ns.
Result<PingPongResult> RunPingPongLoop(const PingPongOptions& options, const PinPlan& pinning,
                                       const Clock& clock, const ProgressFn& progress,
                                       std::string_view what, ChildProcess& server,
                                       PingPongClient& client,
                                       const std::vector<pid_t>& other_pids = {});

// Writes `seq` into the first min(8, size) bytes of `payload` and checks it,
// so a UDP client can tell the echo of a resent request from a stale one.
void StampSequence(uint64_t seq, std::byte* payload, size_t size);
bool HasSequence(uint64_t seq, const std::byte* payload, size_t size);

// Server-side poll loops check the clock only every this many empty polls.
inline constexpr uint32_t kSpinsPerClockCheck = 256;

}  // namespace wharf::bench
