// bench/report.h: BaselineReport, the results of one `wharf bench
// baseline` invocation, and its two renderings: the table a person reads
// and the JSON a script keeps. It runs nothing; bench_command.cc fills it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/iperf3_runner.h"
#include "bench/pingpong.h"
#include "wharf/status.h"

namespace wharf::bench {

// One ping-pong row: which baseline, and what it measured.
struct PingPongRow {
  std::string proto;  // "udp", "tcp", "shm", "wharf", "wharf-managed", ...
  WaitMode mode = WaitMode::kBusyPoll;
  size_t size_bytes = 0;
  std::string address;
  PingPongResult result;

  // "udp poll 64 B"
  std::string Name() const;
};

struct BaselineReport {
  std::vector<PingPongRow> pingpong;
  std::optional<Iperf3Result> goodput;  // set when --goodput ran
  int goodput_seconds = 0;
  uint64_t iterations = 0;  // requested per row
  uint64_t warmup = 0;
};

// CPU time per measured round trip in us, or -1 when unknown.
double CpuUsPerRoundTrip(const PingPongResult& result);

// "140,000"
std::string WithThousands(uint64_t value);

// The table (one line per row, a goodput line, then notes), e.g.
//   baseline     p50 us   p90 us   p99 us  p99.9 us   max us  mean us    RTT/s CPU us/RT
//   udp poll 64 B   6.7      7.4      9.8      48.1    210.3      7.0  140,000      14.1
// (the name column is 36 wide), then notes: pinning, hosting, time limits.
std::string FormatTable(const BaselineReport& report);

// The same as a JSON document (all durations in ns, rates per second).
std::string FormatJson(const BaselineReport& report);

// Writes `text` to `path` (replacing it); errors name the path.
Status WriteTextFile(const std::string& path, const std::string& text);

}  // namespace wharf::bench
