// bench/ucx_perftest_runner.h: the UCX baseline: one `ucx_perftest` test
// (Debian's ucx-utils) between a server and a client run as child
// processes (argv through /usr/bin/env, which sets UCX_TLS and
// UCX_NET_DEVICES; no shell) on separate cores, and the client's "Final:"
// line read. Like iperf3_runner.h it measures nothing itself: it runs
// ucx_perftest safely (bounded in time, both processes killed and reaped on
// every path, every failure a Status quoting ucx_perftest's output).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "bench/affinity.h"
#include "wharf/result.h"

namespace wharf::bench {

struct UcxPerftestOptions {
  std::string binary = "ucx_perftest";  // looked up in PATH unless it has a '/'
  std::string address = "127.0.0.1";    // numeric IPv4; the client connects to it
  // ucx_perftest -t: "ucp_am_lat" (active-message ping-pong), "ucp_am_bw",
  // "ucp_put_bw", ...
  std::string test = "ucp_am_lat";
  uint64_t size_bytes = 64;
  uint64_t iterations = 20'000;
  // UCX_TLS and UCX_NET_DEVICES for both sides ("" leaves UCX's default).
  std::string tls = "tcp";
  std::string devices = "lo";
  bool pin = true;  // client on client_cpu, server on server_cpu (-c)
  int client_cpu = 0;
  int server_cpu = 1;
  DurationNs timeout_ns = 120 * kNsPerSec;  // for the whole test
};

struct UcxPerftestResult {
  // The "Final:" line: latency in µs (one-way: ucx_perftest halves each
  // round trip of a *_lat test), bandwidth in MB/s (10^6 bytes), messages/s.
  uint64_t iterations = 0;
  double p50_latency_us = 0;
  double average_latency_us = 0;
  double overall_latency_us = 0;
  double average_bandwidth_mbs = 0;
  double overall_bandwidth_mbs = 0;
  double average_message_rate = 0;
  double overall_message_rate = 0;
  PinPlan pinning;
};

// Runs one test. NotFound "ucx_perftest not installed: run scripts/setup"
// when the binary is missing; Unavailable quoting its output when it fails;
// DeadlineExceeded when it overstays.
Result<UcxPerftestResult> RunUcxPerftest(const UcxPerftestOptions& options, const Clock& clock);

// Reads the client's output: the numbers of its "Final:" line.
// InvalidArgument, quoting the output, when there is none.
Result<UcxPerftestResult> ParseUcxPerftestOutput(std::string_view text);

}  // namespace wharf::bench
