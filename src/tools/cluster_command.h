// `wharf bench cluster`: the multi-host benchmark (issue 11). Brings up
// --hosts network namespaces on a bridge (198.18.0.0/15) with a bottleneck
// of --link-rate (strict-priority queues, or one FIFO) on every host's
// links, checks connectivity and the rate the bottleneck lets through, writes DIR/cluster.json and takes
// everything down, also on Ctrl-C (bench/cluster_guard.h); a cluster
// left by a killed run is swept at the next start. The workload runs are in
// bench/cluster_runner.h (results.json, slowdown.png). The cluster
// code is in src/netns/; this file holds the flags, the sequence and the
// printing.
#pragma once

#include <string>
#include <vector>

#include "bench/cluster_node.h"

namespace CLI {
class App;
}  // namespace CLI

namespace wharf::tools {

struct BenchClusterOptions {
  int hosts = 4;                     // 2 to 16 network namespaces
  std::string workload = "w4";       // w1..w5 (../shared/workloads) or a fixed size in bytes
  // Longer messages are cut to this (Homa's papers' 1 MB); 0: the full distribution.
  uint64_t max_message = 1'000'000;
  uint64_t response_size = 0;        // bytes of every response; 0: echo the request
  double load = 0.8;                 // offered load as a fraction of --link-rate
  std::string link_rate = "100mbit";  // tc rate of every host's bottleneck (see --help)
  int priorities = 8;                // strict-priority queues per bottleneck (1: FIFO)
  std::string duration = "30s";      // per protocol and mode
  std::vector<std::string> protos = {"homa", "tcp", "kernel-udp", "kernel-tcp", "grpc"};
  std::vector<std::string> modes = {"embedded", "managed"};
  std::string out_dir = "wharf-bench-cluster";
  bool keep = false;                 // leave the cluster up (debugging)
  std::string iperf3_binary = "iperf3";
  bool no_progress = false;
  // Client threads per host and the in-flight bound per thread (defaults
  // that leave the 2-CPU machine's CPUs below the network's limit).
  int threads = 2;
  int max_outstanding = 64;
  uint64_t seed = 1;
  int unloaded_per_size = 20;
  std::string workload_dir;  // empty: the source tree's data/workloads
  std::vector<std::string> settings;  // --set KEY=VALUE for wharf nodes and wharfds
  // The throughput rows (bench/cluster_throughput.h): per series and
  // in-flight count, a closed loop of 64 B RPCs h0 -> h1 measured this long
  // ("0" skips them).
  std::string throughput_duration = "5s";
  std::vector<int> throughput_in_flight = {1, 32, 256};

  // The hidden `wharf bench cluster-node` (bench/cluster_node.h),
  // registered beside `cluster`.
  bench::ClusterNodeOptions node;
  CLI::App* node_command = nullptr;
};

// Adds `cluster` under `bench`; returns it.
CLI::App* AddBenchClusterCommand(CLI::App& bench, BenchClusterOptions& options);

// The exit code: 0 when the cluster came up, every host answered and the
// cluster was taken down (or kept); 1 on a failure; 77 when this machine
// cannot build network namespaces (not root), so that test runners skip.
int RunBenchCluster(const BenchClusterOptions& options);

}  // namespace wharf::tools
