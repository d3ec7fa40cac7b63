// bench/slowdown.h: the numbers `wharf bench cluster` reports, as the
// Homa papers do: RTTs grouped into message-size buckets, per bucket P50, P99
// and P99.9 of RTT and of slowdown, where
//
//   slowdown = RTT / unloaded RTT of a message of the same size,
//
// the unloaded RTT measured first in the same run (one RPC in flight,
// UnloadedBaseline::FromSamples: the P50 at each size, interpolated between
// sizes) or, as Homa's cperf does since 2025, modelled as
// base + bytes * 8 / link rate (UnloadedBaseline::LinkModel). Also the
// shortest 10% of messages, the average slowdown, and the offered and
// achieved load. Rendered as JSON; slowdown_plot.h draws it.
//
// It measures nothing: the harness hands in completed RPCs. Percentiles are
// exact nearest-rank over the samples (like latency_stats.h), not
// wharf::Histogram's bucket midpoints: a report should quote measured
// values, and a bucket's samples are sorted once, offline.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/clock.h"
#include "bench/workload.h"
#include "wharf/result.h"

namespace wharf::bench {

// One completed RPC.
struct RpcSample {
  uint64_t request_bytes = 0;  // the size drawn from the workload; buckets use it
  uint64_t response_bytes = 0;
  DurationNs rtt_ns = 0;
};

// An unloaded RTT at one size.
struct UnloadedPoint {
  uint64_t bytes = 0;
  DurationNs rtt_ns = 0;
};

// Value type. RttNs is linear in size between measured points, the smallest
// point's below them, and continues the last segment's slope (never
// negative) above them, since RTT grows about linearly with size.
class UnloadedBaseline {
 public:
  // Sizes strictly increasing, RTTs > 0, at least one point.
  static Result<UnloadedBaseline> FromPoints(std::vector<UnloadedPoint> points);
  // The P50 RTT of each distinct request size among `samples`.
  static Result<UnloadedBaseline> FromSamples(std::span<const RpcSample> samples);
  // base_rtt_ns + bytes * 8 / link_bps seconds (cperf's definition since 2025).
  static Result<UnloadedBaseline> LinkModel(DurationNs base_rtt_ns, uint64_t link_bps);

  double RttNs(uint64_t bytes) const;
  // "measured P50 at 6 sizes (64 B .. 1000000 B)" or "12000 ns + size at 25000000000 bps".
  std::string Describe() const;
  const std::vector<UnloadedPoint>& points() const { return points_; }  // empty for LinkModel

 private:
  UnloadedBaseline() = default;

  std::vector<UnloadedPoint> points_;
  DurationNs base_rtt_ns_ = 0;  // LinkModel
  uint64_t link_bps_ = 0;       // LinkModel; 0 for measured points
};

// A range of message sizes and where it sits on the plots' x axis.
struct SizeBucket {
  uint64_t min_bytes = 0;  // inclusive: the smallest workload size in it
  uint64_t max_bytes = 0;  // inclusive; a sample goes to the first bucket with max_bytes >= its size
  double cum_frac_lo = 0;  // fraction of the workload's messages shorter than this bucket's
  double cum_frac_hi = 0;  // ... at most max_bytes
};

// About `count` buckets holding equal shares of the workload's messages: the
// bucket edges are the sizes at fractions 1/count, 2/count, .., 1. A size
// that alone holds more than 1/count of the messages (W1's 8 B is 31%) gets a
// bucket of its own, so there may be fewer. count >= 1.
std::vector<SizeBucket> MakeSizeBuckets(const Workload& workload, int count);

struct BucketStats {
  SizeBucket bucket;
  uint64_t count = 0;
  DurationNs rtt_p50_ns = 0;
  DurationNs rtt_p99_ns = 0;
  DurationNs rtt_p999_ns = 0;
  double slowdown_p50 = 0;
  double slowdown_p99 = 0;
  double slowdown_p999 = 0;
};

// What one protocol+mode measured under load.
struct SeriesInput {
  std::string label;               // "wharf poll", "tcp block"; a plot line
  std::vector<RpcSample> samples;  // completed RPCs of the measured phase
  uint64_t issued_rpcs = 0;        // RPCs issued in it, completed or not
  uint64_t issued_bytes = 0;       // their request + response payload bytes
  DurationNs duration_ns = 0;      // length of the measured phase
};

// The run's shape, for the load figures.
struct LoadContext {
  double target_load = 0;  // ArrivalConfig::load
  uint64_t link_bps = 0;
  int hosts = 0;
};

struct SeriesStats {
  std::string label;
  uint64_t count = 0;
  uint64_t unbucketed = 0;  // samples larger than every bucket (not in `buckets`)
  std::vector<BucketStats> buckets;  // one per SizeBucket, in order, empty ones included
  // Over all samples.
  double mean_slowdown = 0;
  double slowdown_p50 = 0;
  double slowdown_p99 = 0;
  // The shortest 10% of messages by count (samples sorted by size, ties in
  // the order given), as cperf reports them.
  uint64_t short_count = 0;
  DurationNs short_rtt_p50_ns = 0;
  DurationNs short_rtt_p99_ns = 0;
  double short_slowdown_p50 = 0;
  double short_slowdown_p99 = 0;
  // Payload bits per second over (hosts * link_bps): the average host uplink
  // utilisation, which is what ArrivalConfig::load targets when every host is
  // a client and a server. Offered counts every issued RPC, achieved the
  // completed ones. 0 when duration or link are unknown.
  uint64_t issued_rpcs = 0;
  double offered_load = 0;
  double achieved_load = 0;
};

// InvalidArgument on an empty `buckets`; a sample with rtt_ns <= 0 is input
// from a measurement and is counted as is (slowdown 0), not rejected.
Result<SeriesStats> ComputeSeriesStats(const SeriesInput& input,
                                       const std::vector<SizeBucket>& buckets,
                                       const UnloadedBaseline& baseline, const LoadContext& load);

// Everything one workload's run reports.
struct SlowdownReport {
  std::string workload;  // Workload::Describe()
  std::string baseline;  // UnloadedBaseline::Describe()
  LoadContext load;
  std::vector<SizeBucket> buckets;
  std::vector<SeriesStats> series;
};

// JSON (durations in ns, loads as fractions of the link rate).
std::string SlowdownReportJson(const SlowdownReport& report);

// The nearest-rank percentile of ascending `sorted` (latency_stats.h's rule).
double NearestRank(const std::vector<double>& sorted, double percent);

}  // namespace wharf::bench
