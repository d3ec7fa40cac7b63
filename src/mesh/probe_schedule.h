// mesh/probe_schedule.h: ProbeSchedule, when each probe target is due. It
// spreads the targets' probes evenly over their intervals, with jitter, and
// stretches every interval alike when together they would exceed the
// daemon's total probe rate. It holds times and indices only: what a target
// is and how it is probed is the Prober's.
//
// Why the spreading and the jitter: mesh probers whose hosts all probe at the
// top of each interval measure their own bursts (goldpinger's p99 of seconds
// on 250 nodes came from synchronised rounds). Here target i of n starts at
// (i + 1/2) / n of its interval, shifted by a random fraction of one slot,
// and each later probe follows the last after interval x (1 +- kJitter),
// uniform: the mean rate is exact, and no two hosts (each seeds with its own
// random epoch) stay in step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <vector>

#include "base/clock.h"

namespace wharf::mesh {

// Owned by the Prober; single-threaded like it.
class ProbeSchedule {
 public:
  // Each probe follows the one before after interval x (1 + u), u uniform in
  // [-kJitter, kJitter].
  static constexpr double kJitter = 0.1;
  // A loop this late (or one interval, if longer) catches up by sending
  // back to back; later than that it skips probes. Wake-ups on a busy host
  // come a few hundred microseconds late, which must not cost a target
  // probed every 100 us its probes.
  static constexpr DurationNs kCatchUpSlack = kNsPerMs;

  explicit ProbeSchedule(uint64_t seed) : random_(seed) {}

  // Replaces every target: target i is due every intervals[i] (> 0), spread
  // as the file comment says from `now`. When the intervals together ask
  // for more than max_per_second probes (0: no cap), each is multiplied by
  // the same factor (stretch()) so that they ask for exactly that.
  void Reset(std::span<const DurationNs> intervals, double max_per_second, TimeNs now);

  // The index of a target due by `horizon` (>= now; the earliest due
  // first), or none. Its next probe is scheduled as it is returned: one
  // interval after the time it was due, or one interval after `now` when
  // the loop is further behind than kCatchUpSlack and one interval (it then
  // skips probes rather than sending a burst; skipped() counts them).
  std::optional<size_t> TakeDue(TimeNs now, TimeNs horizon);
  std::optional<size_t> TakeDue(TimeNs now) { return TakeDue(now, now); }
  // When the next target is due; kNever without targets.
  TimeNs NextDue() const { return heap_.empty() ? kNever : heap_.front().due; }

  // The factor every interval was multiplied by (1 when under the cap).
  double stretch() const { return stretch_; }
  // Probes per second all targets ask for together, after stretching.
  double rate_per_second() const { return rate_per_second_; }
  // Probes dropped because the caller came back later than one interval
  // after they were due.
  uint64_t skipped() const { return skipped_; }
  size_t size() const { return intervals_.size(); }

 private:
  struct Due {
    TimeNs due;
    size_t target;
  };
  // Heap order: the earliest due on top.
  static bool Later(const Due& a, const Due& b) { return a.due > b.due; }
  // interval x (1 + u), u uniform in [-kJitter, kJitter].
  DurationNs Jittered(DurationNs interval);

  std::mt19937_64 random_;
  // Per target, after stretching.
  std::vector<DurationNs> intervals_;
  std::vector<Due> heap_;
  double stretch_ = 1.0;
  double rate_per_second_ = 0;
  uint64_t skipped_ = 0;
};

}  // namespace wharf::mesh
