// bench/switch_probe.h: what handing one CPU from a process to another
// costs on this machine right now. The probe forks a child onto the same
// CPU and the two take turns with sched_yield, as an application and its
// wharfd do in managed mode (each hand-over is a system call and a switch
// of address space).
//
// Why: managed rows pay two such switches per batch of RPCs on each CPU,
// and what one costs depends on the machine: 4.9 µs on the VM of
// 2026-11-28 (PVM, page-table isolation, no PCID), where at 32 RPCs in
// flight (two switches per 16 RPCs on each CPU) they took about a fifth of
// each CPU. `wharf bench throughput` takes it before each round so that a
// reader can tell which regime a managed row comes from (docs/benchmarks.md,
// "Machine regimes").
#pragma once

#include "base/clock.h"
#include "wharf/result.h"

namespace wharf::bench {

struct SwitchProbeOptions {
  int cpu = 0;
  // How long the two processes take turns once both run.
  DurationNs duration_ns = 50 * kNsPerMs;
};

// Microseconds per hand-over (a sched_yield that switched to the other
// process, the switch included). InvalidArgument for a negative CPU,
// FailedPrecondition when the CPU cannot be used, Unavailable when the two
// processes did not take turns (another runnable task on that CPU took most
// of the yields), the errno's status when mmap or fork fails. Never leaves
// the child behind.
Result<double> MeasureProcessSwitch(const SwitchProbeOptions& options);

}  // namespace wharf::bench
