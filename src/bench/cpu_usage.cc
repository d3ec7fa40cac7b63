// Process CPU time through the kernel's per-process CPU-time clocks.
#include "bench/cpu_usage.h"

#include <time.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <string>

namespace wharf::bench {

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

Result<MachineCpu> ParseProcStat(std::string_view text) {
  if (!text.starts_with("cpu ")) return InvalidArgumentError("/proc/stat: no 'cpu ' line first");
  std::istringstream in{std::string(text.substr(4, text.find('\n')))};
  // user nice system idle iowait irq softirq steal (guest time is in user).
  uint64_t v[8] = {};
  for (uint64_t& x : v) {
    if (!(in >> x)) return InvalidArgumentError("/proc/stat: short 'cpu' line");
  }
  MachineCpu cpu;
  cpu.busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
  cpu.total = cpu.busy + v[3] + v[4];
  return cpu;
}

Result<MachineCpu> ReadMachineCpu() {
  std::ifstream file("/proc/stat");
  if (!file) return UnavailableError("cannot read /proc/stat");
  std::string line;
  std::getline(file, line);
  return ParseProcStat(line);
}

double BusyFraction(const Result<MachineCpu>& start, const Result<MachineCpu>& end) {
  if (!start.ok() || !end.ok() || end->total <= start->total) return -1;
  return static_cast<double>(end->busy - start->busy) /
         static_cast<double>(end->total - start->total);
}

}  // namespace wharf::bench
