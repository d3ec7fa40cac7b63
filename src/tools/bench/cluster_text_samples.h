// tools/bench/cluster_text_samples.h: the sample file a `wharf bench cluster` load
// node writes (one per host and protocol) and the command reads back: what
// the node was asked to do, one line per completed RPC, and a closing
// summary. Plain text, so a run's raw data can be read with `less` and awk:
//
//   wharf-cluster-samples 1
//   proto grpc
//   host 0
//   hosts 4
//   workload w4 (cut at 1000000 B)
//   load 0.8
//   link_bps 1000000000
//   duration_ns 2000000000
//   seed 1
//   columns send_offset_ns server request_bytes response_bytes rtt_ns
//   s 1234 2 64 64 48211
//   ...
//   end issued 812 completed 810 failed 0 cpu_ns 351000000
//
// `s` lines: send_offset_ns is the RPC's planned send time since the run's
// start (arrivals.h), server the host index it went to, rtt_ns from the
// planned send time to the response (so a node that falls behind its
// schedule shows it as latency, as an open-loop client must). The `end` line
// is written last: a file without one is from a node that did not finish.
// `failed` counts RPCs that ended in an error; `cpu_ns` is the node's
// process CPU time (user + system) over the run, -1 when unknown.
//
// It formats and parses; it does not measure or choose file names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "wharf/result.h"

namespace wharf::tools::bench {

inline constexpr int kClusterSamplesVersion = 1;

// What the node ran; every field is written.
struct ClusterSampleHeader {
  std::string proto;     // "grpc", "homa", "tcp", "kernel-udp", ...
  int host = 0;          // this node's host index
  int hosts = 0;         // hosts in the cluster
  std::string workload;  // Workload::Describe()
  double load = 0;
  uint64_t link_bps = 0;
  DurationNs duration_ns = 0;
  uint64_t seed = 0;
};

// One completed RPC (see the file comment for the fields).
struct ClusterSample {
  DurationNs send_offset_ns = 0;
  int server = 0;
  uint64_t request_bytes = 0;
  uint64_t response_bytes = 0;
  DurationNs rtt_ns = 0;
};

struct ClusterSampleSummary {
  uint64_t issued = 0;
  uint64_t completed = 0;
  uint64_t failed = 0;
  DurationNs cpu_ns = -1;
};

struct ClusterSampleFile {
  ClusterSampleHeader header;
  std::vector<ClusterSample> samples;
  ClusterSampleSummary summary;
};

// Everything up to and including the `columns` line, newline-terminated.
std::string FormatClusterSampleHeader(const ClusterSampleHeader& header);
// One `s` line, newline-terminated, into `buffer` without allocating.
// Returns its length (buffers of kClusterSampleLineMax bytes always fit).
inline constexpr size_t kClusterSampleLineMax = 128;
size_t FormatClusterSample(const ClusterSample& sample, char* buffer, size_t size);
// The `end` line, newline-terminated.
std::string FormatClusterSampleSummary(const ClusterSampleSummary& summary);

// Parses a whole file. InvalidArgument names `source` and the line:
// "h0.samples:12: expected 5 numbers after 's', got 's 1 2 3'". A file
// without its `end` line is an error (the node did not finish).
Result<ClusterSampleFile> ParseClusterSamples(std::string_view text, std::string_view source);

}  // namespace wharf::tools::bench
