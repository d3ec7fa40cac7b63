// bench/throughput_report.h: the results of a `wharf bench throughput`
// run and how they are read: per path, the RPC rows (RPC/s, latency, CPU per
// RPC) with their ratio to the gRPC row of the same in-flight count, the
// goodput rows (Gbit/s of request payload, CPU per MiB) with their ratio to
// one iperf3 TCP stream on the same path, issue 12's targets and whether
// this run met them; as tables for stdout and as JSON. Pure: no processes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bench/cluster_throughput.h"
#include "bench/iperf3_runner.h"
#include "bench/throughput_plan.h"

namespace wharf::bench {

// What one path measured.
struct ThroughputPathResult {
  std::string path;         // loopback, veth
  std::string description;  // "127.0.0.1 -> 127.0.0.2 on lo", "... one veth pair, MTU 1500"
  std::vector<ThroughputRow> rpc;
  std::vector<ThroughputRow> goodput;
  std::optional<Iperf3Result> iperf3;
  std::string iperf3_error;         // why there is no iperf3 row ("" if none was asked)
  std::vector<std::string> errors;  // series that failed ("tcp managed: ...")
  std::vector<std::string> notes;   // series skipped ("grpc: wharf-grpc-node not found")
  // The machine's CPU-to-CPU copy rate (cross_cpu_probe.h), Gbit/s, taken
  // before and after each round: a pair per round, in order. Empty when the
  // sides are not pinned to two CPUs.
  std::vector<double> cross_cpu_gbps;
  // What handing the client's CPU from one process to another costs
  // (switch_probe.h), µs, taken before each round. Empty when not pinned.
  std::vector<double> process_switch_us;
  // With --rounds N > 1, what each round measured (rows, iperf3, errors);
  // the fields above are then their medians (throughput_rounds.h).
  std::vector<ThroughputPathResult> rounds;
};

struct ThroughputReport {
  ThroughputPlan plan;
  std::vector<std::string> settings;  // --set
  std::vector<ThroughputPathResult> paths;
};

// Request payload bits per second of a goodput row (RPC/s x bytes x 8).
double GoodputBitsPerSecond(const ThroughputRow& row);
// CPU milliseconds per MiB of request payload; -1 unknown.
double CpuMsPerMiB(const ThroughputRow& row);
// The same for iperf3 (its client's and server's CPU shares); -1 unknown.
double Iperf3CpuMsPerMiB(const Iperf3Result& iperf3);

// `row`'s RPC/s over that of the `baseline` row ("grpc", the completion-
// queue server the targets are judged against, or "grpc-sync") of the same
// path and in-flight count; -1 when there is none (or it answered nothing).
// Over several rounds: the median of each round's ratio (a round measures
// the row and its baseline within a minute or so of each other, so a
// machine that slows down for a while moves both).
double RpcRatio(const ThroughputPathResult& path, const ThroughputRow& row,
                const std::string& baseline = "grpc");
// `row`'s goodput over iperf3's on the same path; -1 without iperf3. Over
// several rounds, the median of each round's ratio.
double GoodputRatio(const ThroughputPathResult& path, const ThroughputRow& row);
// The ratio of each round (one element when the run had one round; none
// when unknown), in round order.
std::vector<double> RpcRatioRounds(const ThroughputPathResult& path, const ThroughputRow& row,
                                   const std::string& baseline = "grpc");
std::vector<double> GoodputRatioRounds(const ThroughputPathResult& path, const ThroughputRow& row);

// Issue 12's targets (0: none for this row): homa 10x and tcp 5x gRPC's
// RPC/s at 32 and 256 in flight; goodput over a veth pair 1.0x (homa) and
// 0.8x (tcp) one iperf3 stream, over loopback 2x (both).
double RpcTarget(const ThroughputRow& row);
double GoodputTarget(const std::string& path, const ThroughputRow& row);

// The tables, one block per path (stdout).
std::string FormatThroughputReport(const ThroughputReport& report);
// Everything: the plan, each path's rows with their ratios and targets,
// iperf3, errors and notes.
std::string ThroughputReportJson(const ThroughputReport& report);

}  // namespace wharf::bench
