// bench/probe_floor.h: the least CPU a UDP mesh prober can spend per probe
// on this machine, as the baseline for wharfd's own figure (scripts/
// mesh-bench, docs/mesh.md "Cost").
//
// Two threads, each pinned to its CPU and each with one kernel UDP socket,
// do only what a probe needs at the system-call level and nothing of wharf:
// the prober sends `probes_per_pass` probes every `pass_ns` (one datagram
// and one send call each, as wharfd sends them: sending a pass in one
// sendmmsg hurts the applications' p99, docs/mesh.md), asks the kernel for
// each one's transmit stamp and reads a pass's stamps in one call, then
// blocks until answers arrive or the next pass is due; the responder blocks,
// reads what arrived in one call and answers each datagram with one send.
// Both sockets take kernel receive stamps. The CPU time of each thread
// (CLOCK_THREAD_CPUTIME_ID: on loopback a send also runs the receiver's
// network stack, as it does for wharfd) divided by the probes sent is the
// floor.
#pragma once

#include <cstdint>
#include <string>

#include "base/clock.h"
#include "wharf/result.h"

namespace wharf::bench {

struct ProbeFloorOptions {
  std::string host = "127.0.0.1";  // both sockets bind here (numeric)
  uint32_t rate = 10'000;          // probes per second
  DurationNs pass_ns = kNsPerMs;   // probes due within a pass leave together
  DurationNs duration_ns = 5 * kNsPerSec;
  DurationNs warmup_ns = 200 * kNsPerMs;  // probing before the CPU is counted
  uint32_t probe_bytes = 24;              // payload of a probe and of its answer
  bool transmit_stamps = true;            // ask for each probe's transmit stamp
  int prober_cpu = 0;                     // -1: not pinned
  int responder_cpu = 1;
};

struct ProbeFloorResult {
  uint64_t probes_sent = 0;  // while measuring
  uint64_t answers = 0;      // answers read while measuring
  uint64_t transmit_stamps = 0;
  uint64_t receive_stamps = 0;  // answers that carried a kernel receive stamp
  DurationNs prober_cpu_ns = 0;
  DurationNs responder_cpu_ns = 0;
  DurationNs measured_ns = 0;

  double ProberNsPerProbe() const;
  double ResponderNsPerProbe() const;
};

// Runs the two threads for warmup + duration. InvalidArgument for a zero
// rate, pass or size, a size over 1,024 bytes or a non-numeric host;
// FailedPrecondition when a thread cannot be pinned; socket errors as the
// kernel reported them.
Result<ProbeFloorResult> MeasureProbeFloor(const ProbeFloorOptions& options);

}  // namespace wharf::bench
