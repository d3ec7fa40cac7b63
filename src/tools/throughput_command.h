// `wharf bench throughput`: issue 12's throughput targets in one run, as
// ratios against baselines measured in the same run: 64 B RPCs at several
// in-flight counts over homa:// and tcp:// (embedded and managed) against
// gRPC, and 1 MiB one-way goodput against one iperf3 TCP stream, on
// loopback and over a veth pair between two namespaces. The flags are
// bench/throughput_plan.h's ThroughputOptions; the run is
// bench/throughput_runner.h, the tables and JSON
// bench/throughput_report.h. This file holds the flags, the signal
// guard, the progress lines and the output.
#pragma once

#include "bench/throughput_plan.h"

namespace CLI {
class App;
}  // namespace CLI

namespace wharf::tools {

// Adds `throughput` under `bench`; returns it.
CLI::App* AddBenchThroughputCommand(CLI::App& bench, bench::ThroughputOptions& options);

// 0: every series and baseline measured; 1: something failed (the tables
// and JSON still hold the rest); 2: bad flags; 77: --path veth where
// network namespaces cannot be built (not root).
int RunBenchThroughput(const bench::ThroughputOptions& options);

}  // namespace wharf::tools
