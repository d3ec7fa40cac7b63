// tools/grpc/echo_client.h: the load side of wharf-grpc-node, on gRPC's
// asynchronous completion-queue client API, so many RPCs are in flight
// without a thread each: every client thread owns one completion queue, its
// own connection to each peer, and a pool of call slots it reuses.
//
//   RunThroughput: a closed loop of `in_flight` RPCs of `bytes` to one
//     target for a duration; RPC/s and CPU per RPC (issue 11's RPC
//     throughput rows).
//   RunOpenLoop: the open-loop Poisson load of `wharf bench cluster`
//     (arrivals.h), every RPC timed from its planned send time, for the
//     sample file (cluster_text_samples.h).
//
// Both check every echo: a response of the wrong size or with other bytes is
// an echo mismatch, counted (and, open loop, counted as failed), never a crash.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/clock.h"
#include "tools/bench/arrivals.h"
#include "tools/bench/cluster_text_samples.h"
#include "tools/bench/workload.h"
#include "wharf/result.h"

namespace wharf::tools::grpc_node {

struct ThroughputOptions {
  std::string target;  // "127.0.0.1:7000"
  int in_flight = 32;  // 1..4096
  uint64_t bytes = 64;  // request and echoed response payload
  DurationNs duration_ns = 2 * kNsPerSec;
};

struct ThroughputResult {
  uint64_t completed = 0;        // RPCs answered with the right echo in the window
  uint64_t failed = 0;           // gRPC errors
  uint64_t echo_mismatches = 0;  // answered with the wrong bytes
  DurationNs elapsed_ns = 0;
  DurationNs cpu_ns = -1;  // this process's CPU over the window; -1 unknown

  double RpcsPerSec() const;
  double CpuNsPerRpc() const;  // -1 when unknown or nothing completed
};

// Fills the window with `in_flight` RPCs, reissuing each as it completes;
// RPCs still open at the end are waited for but not counted.
Result<ThroughputResult> RunThroughput(const ThroughputOptions& options, Clock& clock);

struct OpenLoopOptions {
  std::vector<std::string> peers;  // address:port of every host, by host index
  int host = 0;                    // this node's index in peers
  bench::ArrivalConfig arrivals;   // hosts must be peers.size()
  const bench::Workload* workload = nullptr;  // borrowed, outlives the run
  uint64_t seed = 1;
  DurationNs duration_ns = 2 * kNsPerSec;  // sending window
  // After the window, how long RPCs still open may take before they are
  // cancelled and counted failed.
  DurationNs drain_ns = 5 * kNsPerSec;
  // On `clock`: when the window opens (now if in the past). Each client
  // thread first opens its connections with one uncounted RPC to every peer.
  TimeNs start_ns = 0;
};

struct OpenLoopResult {
  std::vector<bench::ClusterSample> samples;  // per thread, in completion order
  bench::ClusterSampleSummary summary;        // cpu_ns left -1: the caller knows the process
  uint64_t echo_mismatches = 0;               // included in summary.failed
};

Result<OpenLoopResult> RunOpenLoop(const OpenLoopOptions& options, Clock& clock);

}  // namespace wharf::tools::grpc_node
