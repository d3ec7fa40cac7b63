// daemon/loop_watchdog.h: LoopWatchdog, how long each turn of wharfd's loop
// takes. A turn is one pass over every socket and session, or the work
// before a sleep; between turns the loop only spins or sleeps. Every
// application's RPCs wait while a turn runs, so a turn that takes long is a
// stall for all of them, whatever caused it (a blocking system call, a
// lookup, a huge status reply, or the CPU taken away from wharfd).
//
// Counts turns over a threshold (daemon.stall_threshold, 10 ms by default)
// and keeps the distribution of turn times in a log-linear histogram
// (bounded memory), for `wharf status` and the tests that check that nothing
// an application does stalls the loop. Owned by the Daemon; its loop thread
// only.
#pragma once

#include <cstdint>

#include "base/clock.h"
#include "base/histogram.h"

namespace wharf::daemon {

struct LoopStats {
  uint64_t turns = 0;
  uint64_t stalls = 0;             // turns longer than the threshold
  DurationNs threshold_ns = 0;
  DurationNs max_turn_ns = 0;
  DurationNs p99_turn_ns = 0;
  DurationNs last_stall_ns = 0;    // length of the latest stall (0: none yet)
  TimeNs last_stall_at_ns = 0;     // when it ended, on the daemon's clock
};

class LoopWatchdog {
 public:
  explicit LoopWatchdog(DurationNs stall_threshold_ns);

  // One turn that began at `start_ns` and ended at `end_ns`.
  void Record(TimeNs start_ns, TimeNs end_ns);

  LoopStats Stats() const;

 private:
  const DurationNs threshold_ns_;
  // Turn times in ns; up to 1 hour in buckets, longer ones still counted.
  Histogram turns_{3600 * kNsPerSec};
  uint64_t stalls_ = 0;
  DurationNs last_stall_ns_ = 0;
  TimeNs last_stall_at_ns_ = 0;
};

}  // namespace wharf::daemon
