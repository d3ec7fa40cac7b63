// integration/call_stream.h: a client that keeps a fixed number of echo RPCs
// in flight to one server through the public API, for the liveness tests:
// they pause, starve, kill or cut off the server while the stream runs, then
// check what became of every call (ok, failed, how long it took) and compare
// the count of successes with the server's own execution count.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>

#include "wharf/endpoint.h"

namespace wharf::integration {

// Borrows the endpoint, which must outlive it. Not thread-safe; progress
// happens only inside its member functions (they wait on the calls).
class CallStream {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  // Each call carries PatternBuffer(size, id) with a distinct id (so `wharf
  // serve` can count duplicates per id) and has `deadline`.
  CallStream(Endpoint& client, std::string target, int depth, size_t size = 64,
             std::chrono::nanoseconds deadline = std::chrono::seconds(30));

  // Keeps `depth` calls in flight until `until`, collecting the finished.
  void RunUntil(TimePoint until);
  // Issues `n` more calls without waiting.
  void Issue(int n);
  // Waits for every call in flight, at most until `until`; false if some
  // were still pending then.
  bool Drain(TimePoint until);

  int issued() const { return issued_; }
  int ok() const { return ok_; }
  int failed() const { return failed_; }
  int in_flight() const { return static_cast<int>(flight_.size()); }
  // Echoes that came back wrong (counted in failed() too).
  int corrupt() const { return corrupt_; }
  // Calls that failed with kUnavailable.
  int unavailable() const { return unavailable_; }
  const Status& first_failure() const { return first_failure_; }
  // The longest a successful call took, from issue to being seen done.
  std::chrono::nanoseconds max_ok_latency() const { return max_ok_latency_; }
  // When the first and the last failure were seen (meaningful if failed()).
  TimePoint first_failure_at() const { return first_failure_at_; }
  TimePoint last_failure_at() const { return last_failure_at_; }

 private:
  struct Call {
    uint64_t id;
    TimePoint issued_at;
    Completion done;
  };
  // Waits up to `slice` on the oldest call, then collects every finished one.
  void Reap(std::chrono::nanoseconds slice);

  Endpoint& client_;
  const std::string target_;
  const int depth_;
  const size_t size_;
  const std::chrono::nanoseconds deadline_;
  std::deque<Call> flight_;
  uint64_t next_id_ = 0;
  int issued_ = 0;
  int ok_ = 0;
  int failed_ = 0;
  int corrupt_ = 0;
  int unavailable_ = 0;
  Status first_failure_;
  std::chrono::nanoseconds max_ok_latency_{0};
  TimePoint first_failure_at_{};
  TimePoint last_failure_at_{};
};

}  // namespace wharf::integration
