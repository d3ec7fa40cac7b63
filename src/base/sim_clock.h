// base/sim_clock.h: SimClock, a Clock for tests whose time moves only when
// told, with timers that fire in deadline order.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <utility>

#include "base/clock.h"

namespace wharf {

// Owned by a test. Single-threaded: all calls from one thread. Timers are
// callbacks that may schedule or cancel other timers (including ones due at the
// current instant, which then fire in the same Advance call).
class SimClock final : public Clock {
 public:
  using TimerId = uint64_t;

  explicit SimClock(TimeNs start_ns = 0, int64_t wall_offset_ns = 1'700'000'000LL * kNsPerSec)
      : now_ns_(start_ns), wall_offset_ns_(wall_offset_ns) {}

  TimeNs NowNs() const override { return now_ns_; }
  int64_t WallNs() const override { return wall_offset_ns_ + now_ns_; }

  // Schedules `fn` at `at_ns` (clamped to now). Timers due at the same instant
  // fire in the order they were scheduled.
  TimerId ScheduleAt(TimeNs at_ns, std::function<void()> fn);
  TimerId ScheduleAfter(DurationNs delay_ns, std::function<void()> fn) {
    return ScheduleAt(now_ns_ + delay_ns, std::move(fn));
  }
  // Returns false when the timer already fired or was cancelled.
  bool Cancel(TimerId id);

  // Moves time to `t_ns`, firing every timer due at or before it in deadline
  // order; during each callback NowNs() is that timer's deadline. Returns the
  // number of timers fired. Time never moves backwards.
  int AdvanceTo(TimeNs t_ns);
  int AdvanceBy(DurationNs d_ns) { return AdvanceTo(now_ns_ + d_ns); }

  // Jumps to the earliest pending timer and fires everything due then.
  // Returns false when no timer is pending.
  bool RunNext();

  // Deadline of the earliest pending timer, or kNever.
  TimeNs NextDeadline() const;
  size_t PendingTimers() const { return timers_.size(); }

 private:
  TimeNs now_ns_;
  int64_t wall_offset_ns_;
  uint64_t next_seq_ = 1;
  // Keyed by (deadline, scheduling sequence); the sequence is the TimerId.
  std::map<std::pair<TimeNs, uint64_t>, std::function<void()>> timers_;
  std::map<TimerId, TimeNs> deadline_of_;
};

}  // namespace wharf
