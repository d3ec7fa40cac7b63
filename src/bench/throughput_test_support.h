// bench/throughput_test_support.h: rows for the tests of `wharf bench
// throughput`'s report and rounds. Tests only.
#pragma once

#include <cstdint>
#include <string>

#include "bench/cluster_throughput.h"

namespace wharf::bench::testing {

// A row measured over a 1 s window (rpcs = RPC/s).
inline ThroughputRow Row(const std::string& proto, const std::string& label, int in_flight,
                         double rpc_per_sec, uint64_t bytes = 64) {
  ThroughputRow r;
  r.label = label;
  r.proto = proto;
  r.mode = "embedded";
  r.in_flight = in_flight;
  r.bytes = bytes;
  r.rpc_per_sec = rpc_per_sec;
  r.rpcs = static_cast<uint64_t>(rpc_per_sec);
  r.client_summary = "{}";
  return r;
}

}  // namespace wharf::bench::testing
