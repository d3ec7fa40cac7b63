// LoopWatchdog: turn times into a histogram and a stall count.
#include "daemon/loop_watchdog.h"

namespace wharf::daemon {

LoopWatchdog::LoopWatchdog(DurationNs stall_threshold_ns) : threshold_ns_(stall_threshold_ns) {}

void LoopWatchdog::Record(TimeNs start_ns, TimeNs end_ns) {
  // A clock that steps back (a test's SimClock) makes a turn of 0, never a
  // huge unsigned one.
  const DurationNs turn_ns = end_ns > start_ns ? end_ns - start_ns : 0;
  turns_.Record(static_cast<uint64_t>(turn_ns));
  if (turn_ns > threshold_ns_) {
    ++stalls_;
    last_stall_ns_ = turn_ns;
    last_stall_at_ns_ = end_ns;
  }
}

LoopStats LoopWatchdog::Stats() const {
  return LoopStats{
      .turns = turns_.Count(),
      .stalls = stalls_,
      .threshold_ns = threshold_ns_,
      .max_turn_ns = static_cast<DurationNs>(turns_.Max()),
      .p99_turn_ns = static_cast<DurationNs>(turns_.P99()),
      .last_stall_ns = last_stall_ns_,
      .last_stall_at_ns = last_stall_at_ns_,
  };
}

}  // namespace wharf::daemon
