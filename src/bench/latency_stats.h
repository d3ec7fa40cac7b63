// bench/latency_stats.h: LatencyStats, the exact record of a benchmark's
// round-trip times, and LatencySummary, the numbers a report prints from it
// (count, percentiles, max, mean, rate). It does not time anything itself:
// callers measure with an injected Clock and hand in durations.
//
// Samples are kept exactly (8 bytes each) and sorted when summarised, rather
// than binned in wharf::Histogram: a benchmark report should quote the
// measured p99.9, not a bucket midpoint, and runs are bounded (a million
// samples is 8 MB and sorts in well under a second).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/clock.h"

namespace wharf::bench {

// What a report quotes about one set of samples. All durations in ns.
struct LatencySummary {
  uint64_t count = 0;
  DurationNs min_ns = 0;
  DurationNs p50_ns = 0;
  DurationNs p90_ns = 0;
  DurationNs p99_ns = 0;
  DurationNs p999_ns = 0;  // p99.9
  DurationNs max_ns = 0;
  double mean_ns = 0;
  // Wall-clock span the samples were taken over (see LatencyStats::Summarize).
  DurationNs elapsed_ns = 0;
  // count / elapsed: round trips per second with one request in flight.
  double rate_per_sec = 0;
};

// Owned by one benchmark loop; not thread-safe.
class LatencyStats {
 public:
  // Pre-allocates room for `count` samples so that Record does not allocate
  // inside the timed loop.
  void Reserve(size_t count) { samples_ns_.reserve(count); }

  void Record(DurationNs sample_ns) { samples_ns_.push_back(sample_ns); }

  size_t count() const { return samples_ns_.size(); }
  const std::vector<DurationNs>& samples_ns() const { return samples_ns_; }

  // Sorts the samples (in place) and summarises them. `elapsed_ns` is the
  // wall-clock span of the measured phase, which gives the rate; pass 0 to
  // use the sum of the samples instead (the same thing for a closed loop
  // with one request in flight, minus the loop's own overhead).
  LatencySummary Summarize(DurationNs elapsed_ns);

  // The nearest-rank percentile of `sorted_ns` (ascending): the smallest
  // sample such that at least `percent` % of all samples are <= it, i.e.
  // element ceil(percent/100 * n) - 1. 0 for an empty vector; percent is
  // clamped to [0, 100], and 0 gives the minimum.
  static DurationNs Percentile(const std::vector<DurationNs>& sorted_ns, double percent);

 private:
  std::vector<DurationNs> samples_ns_;  // unsorted until Summarize
};

}  // namespace wharf::bench
