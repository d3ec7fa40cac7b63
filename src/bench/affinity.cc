// CPU pinning with sched_{get,set}affinity.
#include "bench/affinity.h"

#include <cerrno>

namespace wharf::bench {
namespace {

bool Allowed(const cpu_set_t& set, int cpu) {
  return cpu >= 0 && cpu < CPU_SETSIZE && CPU_ISSET(cpu, &set);
}

}  // namespace

int AllowedCpuCount() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return CPU_COUNT(&set);
}

PinPlan PlanPinning(bool want_pin, int client_cpu, int server_cpu) {
  PinPlan plan;
  if (!want_pin) return plan;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) {
    plan.note = "pinning off: sched_getaffinity failed";
    return plan;
  }
  if (CPU_COUNT(&set) < 2) {
    plan.note = "pinning off: only 1 CPU allowed";
  } else if (client_cpu == server_cpu) {
    plan.note = "pinning off: client and server CPU are the same";
  } else if (!Allowed(set, client_cpu) || !Allowed(set, server_cpu)) {
    plan.note = "pinning off: CPU " +
                std::to_string(Allowed(set, client_cpu) ? server_cpu : client_cpu) +
                " not allowed for this process";
  } else {
    plan.pin = true;
    plan.client_cpu = client_cpu;
    plan.server_cpu = server_cpu;
  }
  return plan;
}

bool PinCallingThread(int cpu) {
  if (cpu < 0 || cpu >= CPU_SETSIZE) return false;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return ::sched_setaffinity(0, sizeof(set), &set) == 0;
}

Result<ScopedCpuPin> ScopedCpuPin::Pin(int cpu) {
  ScopedCpuPin pin;
  if (cpu < 0) return pin;
  CPU_ZERO(&pin.previous_);
  if (::sched_getaffinity(0, sizeof(pin.previous_), &pin.previous_) != 0) {
    return ErrnoToStatus(errno, "sched_getaffinity");
  }
  if (!PinCallingThread(cpu)) {
    return ErrnoToStatus(errno, "sched_setaffinity(cpu " + std::to_string(cpu) + ")");
  }
  pin.restore_ = true;
  return pin;
}

ScopedCpuPin::ScopedCpuPin(ScopedCpuPin&& other) noexcept
    : restore_(other.restore_), previous_(other.previous_) {
  other.restore_ = false;
}

ScopedCpuPin::~ScopedCpuPin() {
  // Best effort: the previous mask was valid a moment ago.
  if (restore_) (void)::sched_setaffinity(0, sizeof(previous_), &previous_);
}

}  // namespace wharf::bench
