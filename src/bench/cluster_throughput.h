// bench/cluster_throughput.h: the throughput phase of a `wharf bench
// cluster` series (issue 11's "RPC throughput rows"): 64 B RPCs from host 0
// to host 1 with 1, 32 and 256 kept in flight, RPC/s, latency and CPU per
// RPC. Host 1 runs a serve-only cluster-node (`--threads 0`), host 0 one
// `--closed-loop N` node per in-flight count, one after another, while the
// series' wharfds (managed) are still up. The runner lifts the bottleneck
// from the two hosts' links meanwhile (cluster_runner.cc): 64 B RPCs would
// otherwise measure the link's header capacity, not the protocols.
//
// CPU per RPC = (client node's CPU over its measured window, from its
// summary + the server node's and the two hosts' wharfds' CPU over the same
// window, read here with CpuMeter) / RPCs answered in the window. Which
// processes it includes is in each row.
//
// It spawns, waits and computes; the series' daemons and node flags come
// from its caller: cluster_runner.cc (hosts of the cluster), or
// throughput_runner.cc (`wharf bench throughput`: loopback or a veth pair,
// pinned, 64 B RPCs and one-way goodput rows alike).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "bench/bench_hosts.h"
#include "wharf/result.h"

namespace wharf::bench {

struct ThroughputConfig {
  DurationNs duration_ns = 5 * kNsPerSec;  // measured window per in-flight count; 0: no phase
  std::vector<int> in_flight = {1, 32, 256};
  uint64_t bytes = 64;
  DurationNs warmup_ns = 500 * kNsPerMs;
};

// One series, as the phase needs it.
struct ThroughputSeries {
  std::string label;  // "homa embedded", "udp"
  std::string proto;  // homa, tcp, udp
  std::string mode;   // embedded, managed, kernel
  // A cluster-node argv for `host` with every flag but the role ones
  // (--threads, --closed-loop, --duration, --out ...), starting at
  // `start_at` (CLOCK_REALTIME ns).
  std::function<std::vector<std::string>(int host, int64_t start_at)> node_argv;
  // The wharfds of host 0 and host 1 (managed), whose CPU the rows include.
  std::vector<pid_t> daemon_pids;
  std::function<void(const std::string&)> progress;  // may be empty
};

struct ThroughputRow {
  std::string label, proto, mode;
  int in_flight = 0;
  uint64_t bytes = 0;
  uint64_t rpcs = 0;          // answered inside the window
  uint64_t failed = 0;        // error answers, refused issues, timeouts
  DurationNs elapsed_ns = 0;  // the window
  double rpc_per_sec = 0;
  double p50_us = 0, p99_us = 0;
  DurationNs client_cpu_ns = -1;  // -1: unknown
  DurationNs server_cpu_ns = -1;
  DurationNs daemon_cpu_ns = -1;          // -1 also when there are no daemons
  double cpu_ns_per_rpc = -1;             // -1: unknown (a CPU reading failed, or no RPC)
  DurationNs total_cpu_ns = -1;           // what cpu_ns_per_rpc divides; -1: unknown
  // The whole machine's busy CPUs over the window (/proc/stat: every
  // process and the kernel's softirqs), e.g. 1.6 of 2; -1: unknown.
  double cpus_busy = -1;
  std::vector<std::string> cpu_includes;  // "client node h0", "server node h1", "wharfd h0", ...
  std::string client_summary;             // the client node's summary JSON, as printed
};

// Runs the phase for one series (nothing when config.duration_ns is 0):
// host 1 serves, host 0 is the client.
// An error (a node that failed or wrote no summary) stops the phase.
Result<std::vector<ThroughputRow>> RunThroughputPhase(const BenchHosts& hosts,
                                                      const ThroughputSeries& series,
                                                      const ThroughputConfig& config,
                                                      const Clock& clock);

// The rows as a JSON array (results.json's "throughput").
std::string ThroughputRowsJson(const std::vector<ThroughputRow>& rows);

// The table on stdout: "RPC throughput, 64 B, host 0 -> host 1, through the
// 1gbit tbf:" and one line per row. Prints nothing for no rows.
void PrintThroughputTable(const std::vector<ThroughputRow>& rows, const std::string& link_rate);

}  // namespace wharf::bench
