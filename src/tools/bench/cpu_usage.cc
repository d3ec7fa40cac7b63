// Process CPU time through the kernel's per-process CPU-time clocks.
#include "tools/bench/cpu_usage.h"

#include <time.h>

#include <cerrno>
#include <string>

namespace wharf::tools::bench {

Result<DurationNs> ProcessCpuNs(pid_t pid) {
  clockid_t id = CLOCK_PROCESS_CPUTIME_ID;
  if (pid != 0) {
    const int err = ::clock_getcpuclockid(pid, &id);
    if (err != 0) {
      return NotFoundError("CPU clock of process " + std::to_string(pid) + ": " +
                           ErrnoToStatus(err, "clock_getcpuclockid").ToString());
    }
  }
  timespec ts{};
  if (::clock_gettime(id, &ts) != 0) {
    return NotFoundError("CPU time of process " + std::to_string(pid) + ": " +
                         ErrnoToStatus(errno, "clock_gettime").ToString());
  }
  return static_cast<DurationNs>(ts.tv_sec) * kNsPerSec + ts.tv_nsec;
}

void CpuMeter::Start() { start_ns_ = Total(); }

DurationNs CpuMeter::Stop() {
  if (start_ns_ < 0) return -1;
  const DurationNs end_ns = Total();
  return end_ns < 0 ? -1 : end_ns - start_ns_;
}

DurationNs CpuMeter::Total() const {
  DurationNs sum = 0;
  for (pid_t pid : pids_) {
    Result<DurationNs> ns = ProcessCpuNs(pid);
    if (!ns.ok()) return -1;
    sum += *ns;
  }
  return sum;
}

}  // namespace wharf::tools::bench
