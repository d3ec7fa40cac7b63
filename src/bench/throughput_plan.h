// bench/throughput_plan.h: what a `wharf bench throughput` run does,
// from its flags: the paths (loopback: two addresses of this namespace;
// veth: two namespaces on one veth pair), the series (each wharf protocol
// per mode, each baseline once), the 64 B RPC rows and the one-way goodput
// rows, the window lengths and the CPU pinning. Validation only; the run is
// throughput_runner.h, the tables and JSON throughput_report.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/clock.h"
#include "bench/affinity.h"
#include "wharf/result.h"

namespace wharf::bench {

// The flags, as given (tools/throughput_command.cc adds them).
struct ThroughputOptions {
  std::vector<std::string> paths = {"loopback", "veth"};
  int mtu = 1500;
  // homa, tcp, grpc; kernel-udp and kernel-tcp as extra baselines.
  std::vector<std::string> protos = {"homa", "tcp", "grpc", "grpc-sync"};
  std::vector<std::string> modes = {"embedded", "managed"};
  std::string size = "64";
  std::vector<int> in_flight = {1, 32, 256};
  int rounds = 3;
  std::string duration = "2s";
  std::string warmup = "500ms";
  std::string goodput_size = "1MiB";
  std::vector<int> goodput_in_flight = {4};
  int goodput_seconds = 3;
  bool no_rpc = false;
  bool no_goodput = false;
  int client_cpu = 0;
  int server_cpu = 1;
  bool no_pin = false;
  std::vector<std::string> settings;  // KEY=VALUE for every wharf endpoint and wharfd
  std::string iperf3_binary = "iperf3";
  std::string json_path;
  bool no_progress = false;
};

// One series: a protocol in a mode ("homa managed"), or a baseline ("grpc").
struct ThroughputSeriesSpec {
  std::string proto;  // homa, tcp, grpc, grpc-sync, kernel-udp, kernel-tcp
  std::string mode;   // embedded, managed; "embedded" for the baselines
  std::string label;  // "homa embedded", "grpc"
  bool wharf = false;
  bool managed = false;
};

struct ThroughputPlan {
  std::vector<std::string> paths;  // loopback, veth; each once, in the given order
  int mtu = 1500;
  std::vector<ThroughputSeriesSpec> series;
  bool rpc = true;
  uint64_t size = 64;
  std::vector<int> in_flight;
  DurationNs duration_ns = 0;
  DurationNs warmup_ns = 0;
  bool goodput = true;
  uint64_t goodput_bytes = 0;
  std::vector<int> goodput_in_flight;
  int goodput_seconds = 3;
  // Every series and iperf3 measured once per round, rounds one after the
  // other; rows and ratios are medians over the rounds (throughput_rounds.h).
  int rounds = 3;
  // Client side (client node, its wharfd, iperf3 -c) on client_cpu, server
  // side on server_cpu; -1 each when not pinned.
  PinPlan pin;
};

// Checks and parses the flags. kInvalidArgument names the flag.
Result<ThroughputPlan> PlanThroughput(const ThroughputOptions& options);

// The series of `protos` x `modes`: wharf protocols (homa, tcp) once per
// mode, the baselines once each; duplicates dropped, order kept.
std::vector<ThroughputSeriesSpec> ThroughputSeriesFor(const std::vector<std::string>& protos,
                                                   const std::vector<std::string>& modes);

// Whether a series gets goodput rows: every one but gRPC (the goodput
// baseline is iperf3).
bool HasGoodputRows(const ThroughputSeriesSpec& series);
// grpc or grpc-sync: wharf-grpc-node's series.
bool IsGrpc(const std::string& proto);
// The series wharf-grpc-node runs: gRPC's, and homa-typed (wharf's
// generated code on the same echo.proto).
bool RunsOnProtoNode(const std::string& proto);

}  // namespace wharf::bench
