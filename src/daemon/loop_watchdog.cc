// LoopWatchdog: turn times into a histogram and a stall count.
#include "daemon/loop_watchdog.h"

#include <sys/resource.h>

namespace wharf::daemon {

uint64_t LoopWatchdog::VoluntarySwitches() {
  rusage usage{};
  if (::getrusage(RUSAGE_THREAD, &usage) != 0) return 0;
  return static_cast<uint64_t>(usage.ru_nvcsw);
}

LoopWatchdog::LoopWatchdog(DurationNs stall_threshold_ns, SwitchCounter switches)
    : threshold_ns_(stall_threshold_ns), switches_(switches), switches_seen_(switches()) {}

void LoopWatchdog::Record(TimeNs start_ns, TimeNs end_ns) {
  // A clock that steps back (a test's SimClock) makes a turn of 0, never a
  // huge unsigned one.
  const DurationNs turn_ns = end_ns > start_ns ? end_ns - start_ns : 0;
  turns_.Record(static_cast<uint64_t>(turn_ns));
  if (turn_ns > threshold_ns_) {
    ++stalls_;
    last_stall_ns_ = turn_ns;
    last_stall_at_ns_ = end_ns;
    const uint64_t switches = switches_();
    if (switches != switches_seen_) ++stalls_blocked_;
    switches_seen_ = switches;
  }
}

LoopStats LoopWatchdog::Stats() const {
  return LoopStats{
      .turns = turns_.Count(),
      .stalls = stalls_,
      .stalls_blocked = stalls_blocked_,
      .threshold_ns = threshold_ns_,
      .max_turn_ns = static_cast<DurationNs>(turns_.Max()),
      .p99_turn_ns = static_cast<DurationNs>(turns_.P99()),
      .last_stall_ns = last_stall_ns_,
      .last_stall_at_ns = last_stall_at_ns_,
  };
}

}  // namespace wharf::daemon
