// bench/affinity.h: CPU pinning for the two sides of a baseline. The
// comparison DESIGN.md §7 wants is client and server busy-polling on separate
// cores (the machine this was written for has exactly two), so by default the
// client runs on one CPU and the server on another, when this process may
// use both. It does not decide anything about wharf's own threads.
#pragma once

#include <sched.h>

#include <string>

#include "wharf/result.h"
#include "wharf/status.h"

namespace wharf::bench {

// Where the two sides of a run go. pin == false leaves both to the scheduler.
struct PinPlan {
  bool pin = false;
  int client_cpu = -1;
  int server_cpu = -1;
  // Why pinning is off when it was asked for ("only 1 CPU allowed"), or "".
  std::string note;
};

// Pins when `want_pin` and both CPUs are distinct and in this process's
// allowed set (sched_getaffinity); otherwise returns pin = false and a note.
PinPlan PlanPinning(bool want_pin, int client_cpu, int server_cpu);

// Number of CPUs this process may run on.
int AllowedCpuCount();

// Pins the calling thread to one CPU; async-signal-safe (a bare system call),
// so a freshly forked child may call it. Returns false on failure.
bool PinCallingThread(int cpu);

// Pins the calling thread for its lifetime and restores the previous mask
// on destruction, so a benchmark run leaves the caller (the CLI, a test
// process) as it found it. Owned by the benchmark loop; same thread only.
class ScopedCpuPin {
 public:
  // cpu < 0: does nothing.
  static Result<ScopedCpuPin> Pin(int cpu);
  ScopedCpuPin(ScopedCpuPin&& other) noexcept;
  ScopedCpuPin& operator=(ScopedCpuPin&&) = delete;
  ScopedCpuPin(const ScopedCpuPin&) = delete;
  ScopedCpuPin& operator=(const ScopedCpuPin&) = delete;
  ~ScopedCpuPin();

 private:
  ScopedCpuPin() = default;
  bool restore_ = false;
  cpu_set_t previous_{};
};

}  // namespace wharf::bench
