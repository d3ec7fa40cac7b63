// bench/cluster_runner.h: the workload runs of `wharf bench cluster`
// on a cluster that is already up with its bottleneck: for each protocol x
// mode, a wharfd per host (managed), an unloaded pass (host 0 -> host 1,
// one RPC at a time over UnloadedSizes) and then the loaded run (a
// cluster-node on every host, started together), the samples collected,
// SeriesStats computed, then the throughput phase (cluster_throughput.h,
// while the series' daemons are still up); then DIR/results.json,
// DIR/slowdown.png/.svg and the comparison tables on stdout.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "netns/netns_cluster.h"
#include "wharf/result.h"
#include "wharf/status.h"

namespace wharf::bench {

struct ClusterRunConfig {
  std::string workload = "w4";
  std::string workload_dir;  // empty: DefaultWorkloadDir()
  uint64_t max_message = 1'000'000;  // cut longer messages to this; 0: the full distribution
  uint64_t response_size = 0;        // bytes of every response; 0: echo the request
  double load = 0.8;
  std::string link_rate = "100mbit";
  uint64_t link_bps = 0;
  int priority_levels = 8;  // of the bottleneck queues (for the report)
  // KEY=VALUE wharf settings for every node's endpoints and wharfd (--set).
  std::vector<std::string> settings;
  DurationNs duration_ns = 0;
  std::string duration = "30s";
  int threads = 2;
  int max_outstanding = 64;
  uint64_t seed = 1;
  int unloaded_per_size = 20;
  std::vector<std::string> protos;  // homa, tcp, kernel-udp, kernel-tcp, grpc
  std::vector<std::string> modes;   // embedded, managed
  // The throughput phase of each series: a closed loop per in-flight
  // count, each measured this long (0: no phase).
  DurationNs throughput_duration_ns = 5 * kNsPerSec;
  std::string throughput_duration = "5s";
  std::vector<int> throughput_in_flight = {1, 32, 256};
  std::string out_dir;
  // wharf-grpc-node, which runs the grpc series' nodes (FindGrpcNode when
  // empty).
  std::string grpc_node;
  std::function<void(const std::string&)> progress;  // one line of progress
};

// The series a config runs, as (proto, mode): wharf protocols once per
// mode, the baselines (kernel-udp, kernel-tcp, grpc) once each, labelled
// with their names.
std::vector<std::pair<std::string, std::string>> ClusterSeries(const ClusterRunConfig& config);

// The gRPC node (a separate executable, built only with gRPC) beside the
// wharf binary `wharf_binary`: in the same directory (installed) or in its
// grpc/ subdirectory (the build tree). NotFound, saying how to get it, if
// neither holds an executable wharf-grpc-node.
Result<std::string> FindGrpcNode(const std::string& wharf_binary);

// The server port of `proto`'s nodes (and a managed series' wharfds' homa
// listener): homa 4000, tcp 4001, kernel-udp 4002, kernel-tcp 4003, grpc
// 4004 (wharf-grpc-node's convention).
int ClusterNodePort(const std::string& proto);

// The KEY=VALUE wharf settings every wharf node and wharfd of a run gets:
// HomaSettingsForLink (cluster_tuning.h), then the config's own (--set),
// which win.
std::vector<std::string> WharfSettings(const ClusterRunConfig& config, int mtu);

// Runs everything; an error stops the runs (what finished is not written).
Status RunClusterWorkloads(netns::NetnsCluster& cluster, const ClusterRunConfig& config);

}  // namespace wharf::bench
