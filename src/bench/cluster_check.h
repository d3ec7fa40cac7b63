// bench/cluster_check.h: the pieces of `wharf bench cluster` around the
// cluster itself: the reserved namespace prefix and the start-up sweep of
// clusters left by crashed runs, a UDP ping between two hosts, and one
// iperf3 TCP stream between two hosts to see what rate the bottleneck lets
// through. The cluster is netns/netns_cluster.h, the bottleneck
// netns/bottleneck.h, signal handling cluster_guard.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "netns/netns_cluster.h"
#include "bench/bench_hosts.h"
#include "bench/iperf3_runner.h"
#include "wharf/result.h"

namespace wharf::bench {

// Namespaces of `wharf bench cluster` are "wbc-<pid>-<n>-{sw,h<i>}"; no test
// or other tool uses this prefix, so the sweep below touches only bench runs.
inline constexpr std::string_view kBenchClusterPrefix = "wbc";

// Removes the clusters of earlier bench runs whose process is gone (killed,
// crashed), with the processes still inside them; a cluster whose run is
// still alive (the pid in its tag, started before the namespace) is left
// alone. Appends the removed namespace names to `removed` when given.
Status SweepStaleBenchClusters(std::vector<std::string>* removed = nullptr);

struct UdpPingResult {
  int sent = 0;
  int received = 0;
  DurationNs min_rtt_ns = 0;
  DurationNs avg_rtt_ns = 0;
  DurationNs max_rtt_ns = 0;
};

// Sends `count` 64-byte UDP probes from host `from` to host `to` and echoes
// each back, all from this thread (one socket created inside each host's
// namespace; a socket stays in the namespace it was made in). A probe not
// back within `timeout_ns` counts as lost. Errors only for socket failures.
Result<UdpPingResult> UdpPing(const netns::NetnsCluster& cluster, int from, int to, int count,
                              DurationNs timeout_ns, const Clock& clock);

// Runs `iperf3 -s -1` on host `server` and `iperf3 -c -t seconds -J` on host
// `client` (port 5201: the namespaces are fresh), and returns what the
// client reported. Bounded: both are killed after seconds + 20 s.
Result<Iperf3Result> RunIperf3Between(const netns::NetnsCluster& cluster, int client, int server,
                                      int seconds, const std::string& binary = "iperf3");
// The same between two BenchHosts sides (each pinned to its CPU, if any),
// on `port`.
Result<Iperf3Result> RunIperf3OnHosts(const BenchHosts& hosts, int client, int server,
                                      int seconds, const std::string& binary, uint16_t port);

// The TCP goodput a link of `mtu` carries per bit the tbf lets through: the
// payload of one full frame (mtu - 20 IP - 20 TCP - 12 timestamp option)
// over what tbf counts for it (mtu + 14 Ethernet header). 0.956 at 1500.
double TcpGoodputPerWireBit(int mtu);

}  // namespace wharf::bench
