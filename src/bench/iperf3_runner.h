// bench/iperf3_runner.h: the goodput baseline: one iperf3 TCP stream
// between an `iperf3 -s -1` server and an `iperf3 -c -J` client, both run
// as child processes (argv, no shell) on separate cores, and the client's
// JSON read for the receiver-side rate. It does not measure anything
// itself; iperf3 does, and this file only runs it safely: bounded in time,
// both processes killed and reaped on every path, every failure a Status
// that quotes iperf3's own error.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "bench/affinity.h"
#include "wharf/result.h"

namespace wharf::bench {

inline constexpr uint16_t kDefaultIperf3Port = 5201;

struct Iperf3Options {
  std::string binary = "iperf3";       // looked up in PATH unless it has a '/'
  std::string address = "127.0.0.1";   // numeric; the server binds it (-B), the client connects
  uint16_t port = kDefaultIperf3Port;  // 0: any free port
  // When `port` is taken, use a free one instead (and say so in the note)
  // rather than fail.
  bool fallback_if_busy = true;
  int seconds = 5;  // iperf3 -t
  bool pin = true;  // client on client_cpu, server on server_cpu
  int client_cpu = 0;
  int server_cpu = 1;
  // The server must report that it listens within this long.
  DurationNs startup_timeout_ns = 5 * kNsPerSec;
  // The client gets `seconds` plus this long before it is killed.
  DurationNs slack_ns = 15 * kNsPerSec;
};

struct Iperf3Result {
  double received_bits_per_second = 0;  // end.sum_received: goodput at the receiver
  double sent_bits_per_second = 0;      // end.sum_sent
  double seconds = 0;                   // end.sum_received.seconds
  int64_t retransmits = -1;             // end.sum_sent.retransmits; -1 if not reported
  // end.cpu_utilization_percent: the client's (host_total) and the
  // server's (remote_total) CPU as a share of one CPU over the test; -1
  // if not reported.
  double client_cpu_percent = -1;
  double server_cpu_percent = -1;
  std::string version;                  // start.version, e.g. "iperf 3.12"
  uint16_t port = 0;                    // the port actually used
  PinPlan pinning;
  std::string note;  // e.g. "port 5201 busy; used 40123"
};

// Runs one test. NotFound "iperf3 not installed: run scripts/setup" when the
// binary is missing; Unavailable with iperf3's message when it fails;
// DeadlineExceeded when either side overstays.
Result<Iperf3Result> RunIperf3(const Iperf3Options& options, const Clock& clock);

// Reads the fields above from `iperf3 -c ... -J` output. An "error" member
// becomes Unavailable quoting it; anything unparsable, InvalidArgument.
Result<Iperf3Result> ParseIperf3ClientJson(std::string_view json_text);

}  // namespace wharf::bench
