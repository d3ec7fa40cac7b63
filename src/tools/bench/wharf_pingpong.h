// tools/bench/wharf_pingpong.h: wharf itself in the benchmark harness: the
// same ping-pong as the kernel baselines (forked echo server, pinned sides,
// RunPingPongLoop), but through the public API in embedded mode; and
// one-way goodput of large RPC requests, the counterpart of iperf3.
#pragma once

#include <cstdint>
#include <string>

#include "base/clock.h"
#include "tools/bench/pingpong.h"
#include "wharf/result.h"

namespace wharf::tools::bench {

// kBusyPoll: both endpoints spin (endpoint.spin = 1 s, longer than any gap);
// kBlocking: endpoint.spin = 0, every wait sleeps in epoll. `scheme` is the
// transport: "homa" or "tcp".
Result<PingPongResult> RunWharfPingPong(const PingPongOptions& options, const std::string& scheme,
                                        const Clock& clock, const ProgressFn& progress);

struct GoodputOptions {
  std::string scheme = "homa";  // the transport wharf uses
  std::string address = "127.0.0.1";
  size_t message_bytes = 1 << 20;  // request size; responses are empty
  int window = 4;                  // requests in flight
  double seconds = 5;
  bool pin = true;
  int client_cpu = 0;
  int server_cpu = 1;
};

struct GoodputResult {
  double bits_per_second = 0;  // request payload bytes delivered, per second
  uint64_t messages = 0;
  double seconds = 0;
};

Result<GoodputResult> RunWharfGoodput(const GoodputOptions& options, const Clock& clock);

}  // namespace wharf::tools::bench
