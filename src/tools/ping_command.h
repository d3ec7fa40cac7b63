// `wharf ping`: measures RPC round trips to a `wharf serve`, like ping(8):
// count, size, interval and concurrency; prints RTT percentiles, loss and
// rate, with a progress line on stderr for long runs (on a terminal only).
// Every echo is checked byte for byte. Its closed loop is the benchmark
// harness's (the same slots, batching and wait), so that what it shows a
// user is what `wharf bench throughput` measures.
#pragma once

#include <string>

#include "tools/common_flags.h"

namespace CLI {
class App;
}

namespace wharf::tools {

struct PingOptions {
  std::string target;
  int count = 10;
  size_t size = 64;
  double interval_s = 0;    // between sends (per slot); 0 = back to back
  int concurrency = 1;      // RPCs in flight at once
  double timeout_s = 5;     // per RPC
  bool quiet = false;       // no progress line
  bool server_stats = false;  // ask the server how often it ran our requests
  bool stats = false;         // print our transport's counters at the end
  bool messages = false;      // echo messages over a connection instead of RPCs
  EndpointFlags endpoint;
};

void AddPingFlags(CLI::App& app, PingOptions& options);
int RunPing(const PingOptions& options);

}  // namespace wharf::tools
