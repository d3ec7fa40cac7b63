// bench/cluster_load.h: the client side of a `wharf bench cluster`
// node, transport-neutral: the open-loop driver that issues each RPC at the
// time its ArrivalGenerator says (never waiting for earlier answers), keeps
// at most `max_outstanding` in flight per thread (dropping and counting
// beyond that), times the answers and counts everything; and the unloaded
// pass (one RPC at a time over a size ladder); and the closed loop of the
// throughput rows (a fixed number of RPCs kept in flight, each re-issued
// as it completes).
//
// A LoadTransport does the sending; the driver reads time from an injected
// Clock, so tests drive it with SimClock and a fake transport.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "bench/arrivals.h"
#include "bench/slowdown.h"
#include "wharf/status.h"

namespace wharf::bench {

// Told by a LoadTransport when an RPC it issued finished.
class CompletionSink {
 public:
  virtual ~CompletionSink() = default;
  // `tag` is the Issue's; `ok` false for an error answer. An unknown or
  // already finished tag (input from the network) is ignored.
  virtual void Done(uint32_t tag, bool ok) = 0;
};

// One client thread's connection to the servers. Single-threaded.
class LoadTransport {
 public:
  virtual ~LoadTransport() = default;
  // Starts an echo RPC of `bytes` to host `server`, identified by `tag`
  // (< max_outstanding). Returns at once; an error means it was not sent.
  virtual Status Issue(uint32_t tag, int server, uint64_t bytes) = 0;
  // Waits until the Clock reaches `deadline` or at least one RPC finished,
  // reporting every finished one to `sink`. May return early.
  virtual void Wait(TimeNs deadline, CompletionSink& sink) = 0;
  // The transport's counters ("homa.data_sent", ...); none by default.
  virtual std::vector<std::pair<std::string, uint64_t>> Counters() const { return {}; }
  // Around a burst of Issue calls (a closed loop refilling its window): a
  // transport that can send them together does so by EndBurst.
  virtual void BeginBurst() {}
  virtual void EndBurst() {}
  // The first error answer's status, for the summary ("" if none).
  virtual std::string first_error() const { return {}; }
};

struct OpenLoopOptions {
  TimeNs start_ns = 0;          // on the driver's Clock: send offsets count from here
  DurationNs duration_ns = 0;   // no RPC is issued at or after start + duration
  DurationNs drain_ns = 0;      // then wait this long for outstanding answers
  int max_outstanding = 64;     // per thread, >= 1
  // What the servers answer with: 0 echoes the request, N > 0 answers
  // every RPC with N bytes (--response-size). The driver does not ask for
  // it (the servers are configured); it records it in the samples and
  // counts it in issued_bytes.
  uint64_t response_bytes = 0;
};

struct LoadCounters {
  uint64_t issued = 0;        // handed to the transport
  uint64_t issued_bytes = 0;  // request + response payload of those
  uint64_t completed = 0;
  uint64_t failed = 0;        // Issue errors and error answers
  uint64_t dropped = 0;       // not issued: max_outstanding in flight
  uint64_t unfinished = 0;    // issued, no answer by the end of the drain
};

struct LoadResult {
  std::vector<RpcSample> samples;  // completed RPCs, in completion order
  LoadCounters counters;
  // How late each issue was against its schedule (ns), in issue order.
  std::vector<DurationNs> lateness_ns;
};

// Room for one thread's expected RPCs plus a margin, made before the start:
// the vectors' pages are written once now (up to kOpenLoopTouchedSamples of
// each), since a page's first touch while measuring is a stall of ~11 us in
// a VM here. Pass the result to RunOpenLoop.
inline constexpr size_t kOpenLoopTouchedSamples = size_t{1} << 20;
LoadResult PrepareOpenLoop(const ArrivalGenerator& generator, const OpenLoopOptions& options);

// Runs one thread's schedule. `generator` is consumed. `prepared`: from
// PrepareOpenLoop, or empty (the room is then reserved at the start).
LoadResult RunOpenLoop(ArrivalGenerator& generator, LoadTransport& transport, const Clock& clock,
                       const OpenLoopOptions& options, LoadResult prepared = {});

struct UnloadedOptions {
  int server = 1;
  std::vector<uint64_t> sizes;  // cluster_samples.h's UnloadedSizes
  int per_size = 20;
  DurationNs rpc_timeout_ns = 5 * kNsPerSec;  // an RPC unanswered this long is abandoned
  // After this many abandoned in a row the pass ends: the sizes are in
  // increasing order, so the larger ones would be lost too (kernel-udp's
  // large messages overflow a slow link's queue and never arrive), and
  // each would cost the whole timeout.
  int give_up_after = 3;
  uint64_t response_bytes = 0;  // as OpenLoopOptions': 0 echoes
};

// One RPC at a time, `per_size` of each size, in size order, until
// `give_up_after` in a row go unanswered.
LoadResult RunUnloaded(LoadTransport& transport, const Clock& clock,
                       const UnloadedOptions& options);

struct ClosedLoopOptions {
  int server = 1;
  uint64_t bytes = 64;
  int in_flight = 1;  // RPCs kept outstanding, >= 1; the transport's bound must be >= it
  // Completions are counted in [start + warmup, start + warmup + duration),
  // start being when RunClosedLoop is called.
  DurationNs warmup_ns = 500 * kNsPerMs;
  DurationNs duration_ns = 5 * kNsPerSec;
  // An RPC unanswered this long is abandoned (failed, timed_out) and its
  // slot re-issued: lost UDP datagrams are never answered.
  DurationNs rpc_timeout_ns = 1 * kNsPerSec;
  // Room for this many round trips (8 bytes each), so that the window
  // rarely grows the vector; 0: ClosedLoopSampleRoom's estimate.
  size_t reserve_samples = 0;
  // Called (on the driver's thread) when the window opens and when it
  // closes, e.g. to read the process's CPU time. May be empty.
  std::function<void()> window_opened;
  std::function<void()> window_closed;
};

struct ClosedLoopResult {
  uint64_t rpcs = 0;       // answered (ok) inside the window
  uint64_t failed = 0;     // inside the window: Issue errors, error answers, timeouts
  uint64_t timed_out = 0;  // of `failed`: abandoned after rpc_timeout_ns
  uint64_t issued = 0;     // handed to the transport, warm-up included
  uint64_t unfinished = 0; // in flight when the window closed
  int max_in_flight = 0;   // never above in_flight
  DurationNs elapsed_ns = 0;  // the window's length (duration_ns)
  // Issue-to-answer time of each of the `rpcs`, in completion order.
  std::vector<DurationNs> rtt_ns;
};

// Keeps `in_flight` RPCs of `bytes` to `server` outstanding, re-issuing each
// as it completes (after the transport's Wait returns, never from inside
// it), for warm-up + duration; the RPCs still in flight at the end are
// abandoned. After a failed Issue or an error answer (counted) issuing
// pauses for 1 ms, so that a peer refusing at once does not make the loop
// spin; the free slots are re-issued after the pause. A tag is
// reused when its RPC times out: should the answer still come (after the
// timeout), it is taken for the new RPC's.
// `prepared`: from PrepareClosedLoop, or empty (the room is then reserved
// when it starts, its pages left to the window).
ClosedLoopResult RunClosedLoop(LoadTransport& transport, const Clock& clock,
                               const ClosedLoopOptions& options, ClosedLoopResult prepared = {});

// The room for round trips: reserve_samples, or else duration_ns at
// kClosedLoopRoomPerSec (above every rate measured here), between 64Ki and
// 16Mi samples. Outgrowing the old fixed 1Mi at ~1M RPC/s copied 8 MiB
// mid-window.
inline constexpr uint64_t kClosedLoopRoomPerSec = 1'500'000;
size_t ClosedLoopSampleRoom(const ClosedLoopOptions& options);

// That room, made before the start with its pages written (up to
// kClosedLoopTouchedSamples): a page's first touch inside the window was a
// stall of ~11 us in a VM here, every 512 RPCs, and the peer waited too.
// Call it before waiting for the common start; pass it to RunClosedLoop.
inline constexpr size_t kClosedLoopTouchedSamples = size_t{1} << 22;
ClosedLoopResult PrepareClosedLoop(const ClosedLoopOptions& options);

// P99 and max of `lateness` (0 when empty); sorts it.
struct Lateness {
  DurationNs p99_ns = 0;
  DurationNs max_ns = 0;
};
Lateness SummarizeLateness(std::vector<DurationNs>& lateness);

}  // namespace wharf::bench
