// bench/cross_cpu_probe.h: how fast this machine moves data from one
// CPU to another right now. A thread pinned to `from_cpu` writes 64 KiB
// blocks into a ring that a thread pinned to `to_cpu` copies out, as a
// sender's kernel fills socket buffers that the receiver's kernel empties.
//
// Why: on the VM these benchmarks were written on, this rate flips for
// minutes at a time between about 260 and 480 Gbit/s (the host moves the
// virtual CPUs, nothing in the guest changes), and every bulk row moves with
// it: homa 1 MiB over loopback 71 vs 111 Gbit/s, in step with the probe.
// `wharf bench throughput` takes it before and after each round so that a
// reader can tell which regime a figure comes from (docs/benchmarks.md,
// "Machine regimes").
#pragma once

#include "base/clock.h"
#include "wharf/result.h"

namespace wharf::bench {

struct CrossCpuProbeOptions {
  int from_cpu = 0;
  int to_cpu = 1;
  // How long the producer keeps writing (the probe then drains the ring).
  DurationNs duration_ns = 100 * kNsPerMs;
};

// Gbit/s copied through the ring. InvalidArgument when the CPUs are equal
// or negative (both threads must run at once; on one CPU they would only
// take turns), FailedPrecondition when a thread cannot be pinned there.
Result<double> MeasureCrossCpuCopy(const CrossCpuProbeOptions& options);

}  // namespace wharf::bench
