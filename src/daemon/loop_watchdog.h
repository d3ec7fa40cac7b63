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
//
// A slow turn is also told apart by why: the loop's thread blocked in the
// kernel (a system call waited: a lingering close, a name lookup, a write
// to a full pipe) or it was only preempted (other processes had the CPU).
// The thread's voluntary context switches say which: the loop never sleeps
// between its wake-up and its next sleep except by blocking (a yield or a
// preemption counts as involuntary). They are read once per wake-up and at
// each slow turn, never per turn.
#pragma once

#include <cstdint>

#include "base/clock.h"
#include "base/histogram.h"

namespace wharf::daemon {

struct LoopStats {
  uint64_t turns = 0;
  uint64_t stalls = 0;             // turns longer than the threshold
  uint64_t stalls_blocked = 0;     // of those, while the thread blocked in the kernel
  DurationNs threshold_ns = 0;
  DurationNs max_turn_ns = 0;
  DurationNs p99_turn_ns = 0;
  DurationNs last_stall_ns = 0;    // length of the latest stall (0: none yet)
  TimeNs last_stall_at_ns = 0;     // when it ended, on the daemon's clock
};

class LoopWatchdog {
 public:
  // The calling thread's voluntary context switches so far (injected by
  // tests; getrusage(RUSAGE_THREAD) by default).
  using SwitchCounter = uint64_t (*)();
  static uint64_t VoluntarySwitches();

  explicit LoopWatchdog(DurationNs stall_threshold_ns,
                        SwitchCounter switches = &LoopWatchdog::VoluntarySwitches);

  // The loop woke from a sleep: what it blocked in before now is not a stall.
  void Awake() { switches_seen_ = switches_(); }
  // One turn that began at `start_ns` and ended at `end_ns`.
  void Record(TimeNs start_ns, TimeNs end_ns);

  LoopStats Stats() const;

 private:
  const DurationNs threshold_ns_;
  const SwitchCounter switches_;
  uint64_t switches_seen_ = 0;  // at the last wake-up or slow turn
  uint64_t stalls_blocked_ = 0;
  // Turn times in ns; up to 1 hour in buckets, longer ones still counted.
  Histogram turns_{3600 * kNsPerSec};
  uint64_t stalls_ = 0;
  DurationNs last_stall_ns_ = 0;
  TimeNs last_stall_at_ns_ = 0;
};

}  // namespace wharf::daemon
