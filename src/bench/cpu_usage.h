// bench/cpu_usage.h: CPU time (user + system, all threads) of the
// processes a benchmark run involves: the client (this process), the echo
// server and, in managed mode, wharfd. A run snapshots them when measuring
// starts and when it ends, so "CPU per round trip" covers the measured round
// trips only, whatever the processes did before (start-up, warm-up).
//
// It reads each process's CPU-time clock (clock_getcpuclockid), which the
// kernel keeps in nanoseconds; /proc/PID/stat or getrusage of a reaped child
// would count in 10 ms ticks or include the warm-up.
#pragma once

#include <sys/types.h>

#include <string_view>
#include <vector>

#include "base/clock.h"
#include "wharf/result.h"

namespace wharf::bench {

// CPU time `pid` has used so far (0: this process); NotFound once it is gone.
Result<DurationNs> ProcessCpuNs(pid_t pid);

// The CPU time of a fixed set of processes, between Start and Stop.
class CpuMeter {
 public:
  // `pids`: the processes to count; 0 is this process.
  explicit CpuMeter(std::vector<pid_t> pids) : pids_(std::move(pids)) {}

  // Snapshots every process; a process that cannot be read makes the
  // result unknown (Stop returns -1), not wrong.
  void Start();
  // CPU used by all of them since Start, or -1 when unknown (not started,
  // or a process could not be read at either end).
  DurationNs Stop();

 private:
  // Sum over pids_, or -1 if one could not be read.
  DurationNs Total() const;

  std::vector<pid_t> pids_;
  DurationNs start_ns_ = -1;
};

// The whole machine's CPU time from /proc/stat's "cpu" line, in clock
// ticks: every process and the kernel's own work (softirqs of packets
// forwarded between namespaces run wherever they fall, ksoftirqd included),
// so it tells whether the CPUs or the network limited a run.
struct MachineCpu {
  uint64_t busy = 0;   // user nice system irq softirq steal
  uint64_t total = 0;  // busy + idle + iowait
};
// Parses /proc/stat text; kInvalidArgument without a "cpu " line.
Result<MachineCpu> ParseProcStat(std::string_view text);
Result<MachineCpu> ReadMachineCpu();
// The busy share of the time between `start` and `end` (0..1; -1 if unknown).
double BusyFraction(const Result<MachineCpu>& start, const Result<MachineCpu>& end);

}  // namespace wharf::bench
