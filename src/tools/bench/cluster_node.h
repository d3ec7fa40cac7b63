// tools/bench/cluster_node.h: `wharf bench cluster-node`, the hidden
// subcommand each host of a `wharf bench cluster` run executes inside its
// namespace: an echo server plus open-loop client threads (cluster_load.h)
// over one protocol (cluster_transports.h), samples to a file
// (cluster_samples.h) and a one-line JSON summary on stdout; or, with
// --closed-loop N, one closed-loop client (the throughput rows). Flags and file
// format: docs/benchmarks.md, "The cluster node".
#pragma once

#include <cstdint>
#include <string>

namespace CLI {
class App;
}  // namespace CLI

namespace wharf::tools::bench {

struct ClusterNodeOptions {
  std::string proto = "homa";
  std::string mode = "embedded";
  std::string daemon_socket;
  int host = 0;
  std::string addresses;  // comma-separated
  int port = 4000;
  std::string workload = "w4";
  std::string workload_dir;
  uint64_t max_message = 1'000'000;
  double load = 0.8;
  std::string link_rate = "1gbit";
  int threads = 2;
  int max_outstanding = 64;
  int64_t start_at_ns = 0;  // CLOCK_REALTIME
  std::string duration = "30s";
  std::string drain = "2s";
  uint64_t seed = 1;
  bool unloaded = false;
  int peer = 1;
  int per_size = 20;
  std::string out;
  // --closed-loop N: instead of the above, one client thread keeping N RPCs
  // of --size bytes in flight to --peer (cluster_load.h's RunClosedLoop)
  // for --warmup then --duration; no echo server, no sample file.
  int closed_loop = 0;
  uint64_t size = 64;
  std::string warmup = "500ms";
};

// Adds the hidden `cluster-node` under `bench`; returns it.
CLI::App* AddBenchClusterNodeCommand(CLI::App& bench, ClusterNodeOptions& options);

// 0 on success, 1 on a failure (printed on stderr).
int RunBenchClusterNode(const ClusterNodeOptions& options);

}  // namespace wharf::tools::bench
