// bench/cluster_node.h: `wharf bench cluster-node`, the hidden
// subcommand each host of a `wharf bench cluster` run executes inside its
// namespace: an echo server plus open-loop client threads (cluster_load.h)
// over one protocol (cluster_transports.h), samples to a file
// (cluster_samples.h) and a one-line JSON summary on stdout; or, with
// --closed-loop N, one closed-loop client (the throughput rows). Flags and file
// format: docs/benchmarks.md, "The cluster node".
//
// The run is transport-neutral: the protocol comes in as a pair of
// factories (ClusterNodeTransports), so that wharf-grpc-node (src/bench/grpc)
// runs the same node, flags, samples and summary over gRPC without gRPC
// linking into wharf.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/cluster_transports.h"

namespace CLI {
class App;
}  // namespace CLI

namespace wharf::bench {

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
  // 0: responses echo the request; N > 0: every response is N bytes.
  uint64_t response_size = 0;
  double load = 0.8;
  // tc units or bits/s; "default" or 0 leaves homa's link rate to wharf.
  std::string link_rate = "100mbit";
  // Embedded endpoints keep wharf's default settings (NodeTransportConfig).
  bool endpoint_defaults = false;
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
  std::vector<std::string> settings;  // KEY=VALUE wharf settings (--set)
  // --closed-loop N: instead of the above, one client thread keeping N RPCs
  // of --size bytes in flight to --peer (cluster_load.h's RunClosedLoop)
  // for --warmup then --duration; no echo server, no sample file.
  int closed_loop = 0;
  uint64_t size = 64;
  std::string warmup = "500ms";
};

// The transport part of `options` (--proto ... --set): addresses split,
// --link-rate parsed ("default" and 0: link_bps 0), KEY=VALUE checked.
Result<NodeTransportConfig> NodeTransportFromOptions(const ClusterNodeOptions& options);

// What a node serves and sends with, for the protocols it accepts.
struct ClusterNodeTransports {
  std::function<Result<std::unique_ptr<EchoServer>>(const NodeTransportConfig&)> start_echo_server;
  // One client thread's transport (at most `max_outstanding` in flight).
  std::function<Result<std::unique_ptr<LoadTransport>>(const NodeTransportConfig&, const Clock&,
                                                       int max_outstanding)>
      open_load_transport;
};

// wharf's own: homa and tcp through wharf, kernel-udp and kernel-tcp on
// kernel sockets (cluster_transports.h).
ClusterNodeTransports BuiltinClusterNodeTransports();

// Adds the node's flags to `app` (the `cluster-node` subcommand, or the
// whole command line of another node binary); --proto takes `protos`.
void AddClusterNodeFlags(CLI::App& app, ClusterNodeOptions& options,
                         const std::vector<std::string>& protos);

// Adds the hidden `cluster-node` under `bench` (protos homa, tcp,
// kernel-udp, kernel-tcp); returns it.
CLI::App* AddBenchClusterNodeCommand(CLI::App& bench, ClusterNodeOptions& options);

// Runs the node with `transports`. 0 on success, 1 on a failure (printed on
// stderr).
int RunBenchClusterNode(const ClusterNodeOptions& options,
                        const ClusterNodeTransports& transports);

}  // namespace wharf::bench
