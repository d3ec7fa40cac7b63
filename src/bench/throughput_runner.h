// bench/throughput_runner.h: the measuring part of `wharf bench
// throughput`. For each path of the plan it sets up the two sides
// (loopback: 127.0.0.1 for the client, 127.0.0.2 for the server, in this
// namespace; veth: a direct-pair NetnsCluster, each side in its namespace),
// then for each series starts the wharfds (managed: one per side, on that
// side's CPU, listening on that side's address, so the two talk over the
// network stack) and runs the throughput phase (cluster_throughput.h) for
// the RPC rows and the goodput rows, and one iperf3 stream on the path.
// wharf runs with its defaults: no link rate, no spin override; only --set.
//
// Everything it starts is stopped before it returns (processes when their
// owners go, the cluster destroyed); on a signal the command's ClusterGuard
// removes the cluster and the children die with this process
// (PR_SET_PDEATHSIG).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "bench/throughput_report.h"
#include "wharf/result.h"

namespace wharf::bench {

struct ThroughputRunConfig {
  ThroughputPlan plan;
  std::vector<std::string> settings;  // KEY=VALUE for wharf endpoints and wharfds
  std::string self;                   // the wharf binary (nodes and wharfds)
  std::string grpc_node;              // wharf-grpc-node; empty: grpc series skipped
  std::string grpc_missing;           // why it is empty (a note in the report)
  std::string iperf3_binary = "iperf3";
  std::function<void(const std::string&)> progress;  // one line; may be empty
  // Called with a veth cluster's tag when it is up (protect it from signals)
  // and again with `up` false once it is removed.
  std::function<void(const std::string& tag, bool up)> on_cluster;
};

// Runs every path. A failed series is recorded in its path's errors and the
// run goes on; an error here is a path that could not be set up at all.
Result<ThroughputReport> RunThroughput(const ThroughputRunConfig& config, const Clock& clock);

}  // namespace wharf::bench
