// Slowdown arithmetic: the unloaded baseline, size buckets, per-bucket
// percentiles, the shortest 10%, loads, and the JSON rendering.
#include "bench/slowdown.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "bench/latency_stats.h"

namespace wharf::bench {
namespace {

using Json = nlohmann::ordered_json;  // keeps the members in the order written

std::vector<DurationNs> SortedRtts(const std::vector<RpcSample>& samples,
                                   const std::vector<size_t>& indices) {
  std::vector<DurationNs> out;
  out.reserve(indices.size());
  for (size_t i : indices) out.push_back(samples[i].rtt_ns);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<double> SortedSlowdowns(const std::vector<double>& slowdowns,
                                    const std::vector<size_t>& indices) {
  std::vector<double> out;
  out.reserve(indices.size());
  for (size_t i : indices) out.push_back(slowdowns[i]);
  std::sort(out.begin(), out.end());
  return out;
}

double LoadFraction(uint64_t bytes, DurationNs duration_ns, const LoadContext& load) {
  if (duration_ns <= 0 || load.link_bps == 0 || load.hosts <= 0) return 0;
  const double bits_per_sec = static_cast<double>(bytes) * 8 * kNsPerSec / static_cast<double>(duration_ns);
  return bits_per_sec / (static_cast<double>(load.link_bps) * load.hosts);
}

}  // namespace

double NearestRank(const std::vector<double>& sorted, double percent) {
  const size_t n = sorted.size();
  if (n == 0) return 0;
  percent = std::clamp(percent, 0.0, 100.0);
  const long double exact = static_cast<long double>(percent) / 100.0L * n;
  auto rank = static_cast<size_t>(std::ceil(exact - exact * 1e-12L));
  rank = std::clamp<size_t>(rank, 1, n);
  return sorted[rank - 1];
}

Result<UnloadedBaseline> UnloadedBaseline::FromPoints(std::vector<UnloadedPoint> points) {
  if (points.empty()) return InvalidArgumentError("unloaded baseline: expected at least one size, got none");
  for (size_t i = 0; i < points.size(); ++i) {
    if (points[i].rtt_ns <= 0) {
      return InvalidArgumentError("unloaded baseline: expected an RTT > 0 at " +
                                  std::to_string(points[i].bytes) + " B, got " +
                                  std::to_string(points[i].rtt_ns) + " ns");
    }
    if (i > 0 && points[i].bytes <= points[i - 1].bytes) {
      return InvalidArgumentError("unloaded baseline: expected sizes increasing, got " +
                                  std::to_string(points[i].bytes) + " B after " +
                                  std::to_string(points[i - 1].bytes) + " B");
    }
  }
  UnloadedBaseline b;
  b.points_ = std::move(points);
  return b;
}

Result<UnloadedBaseline> UnloadedBaseline::FromSamples(std::span<const RpcSample> samples) {
  std::map<uint64_t, std::vector<DurationNs>> by_size;
  for (const RpcSample& s : samples) by_size[s.request_bytes].push_back(s.rtt_ns);
  std::vector<UnloadedPoint> points;
  for (auto& [bytes, rtts] : by_size) {
    std::sort(rtts.begin(), rtts.end());
    points.push_back({bytes, LatencyStats::Percentile(rtts, 50)});
  }
  return FromPoints(std::move(points));
}

Result<UnloadedBaseline> UnloadedBaseline::LinkModel(DurationNs base_rtt_ns, uint64_t link_bps) {
  if (base_rtt_ns <= 0) {
    return InvalidArgumentError("unloaded baseline: expected a base RTT > 0, got " +
                                std::to_string(base_rtt_ns) + " ns");
  }
  if (link_bps == 0) return InvalidArgumentError("unloaded baseline: expected a link rate > 0, got 0");
  UnloadedBaseline b;
  b.base_rtt_ns_ = base_rtt_ns;
  b.link_bps_ = link_bps;
  return b;
}

double UnloadedBaseline::RttNs(uint64_t bytes) const {
  if (link_bps_ != 0) {
    return static_cast<double>(base_rtt_ns_) +
           static_cast<double>(bytes) * 8 * kNsPerSec / static_cast<double>(link_bps_);
  }
  const auto x = static_cast<double>(bytes);
  if (bytes <= points_.front().bytes) return static_cast<double>(points_.front().rtt_ns);
  // The segment [lo, hi] holding bytes, or the last one when above them all.
  auto hi = std::lower_bound(points_.begin(), points_.end(), bytes,
                             [](const UnloadedPoint& p, uint64_t v) { return p.bytes < v; });
  if (hi == points_.end()) {
    if (points_.size() == 1) return static_cast<double>(points_.back().rtt_ns);
    hi = std::prev(points_.end());
  }
  const auto lo = std::prev(hi);
  const double x0 = static_cast<double>(lo->bytes);
  const double x1 = static_cast<double>(hi->bytes);
  const double y0 = static_cast<double>(lo->rtt_ns);
  const double y1 = static_cast<double>(hi->rtt_ns);
  double slope = (y1 - y0) / (x1 - x0);
  if (x > x1) slope = std::max(slope, 0.0);  // noise must not make big messages free
  if (x > x1) return y1 + slope * (x - x1);
  return y0 + slope * (x - x0);
}

std::string UnloadedBaseline::Describe() const {
  if (link_bps_ != 0) {
    return std::to_string(base_rtt_ns_) + " ns + size at " + std::to_string(link_bps_) + " bps";
  }
  return "measured P50 at " + std::to_string(points_.size()) + " sizes (" +
         std::to_string(points_.front().bytes) + " B .. " + std::to_string(points_.back().bytes) + " B)";
}

std::vector<SizeBucket> MakeSizeBuckets(const Workload& workload, int count) {
  count = std::max(count, 1);
  std::vector<SizeBucket> buckets;
  uint64_t previous_edge = 0;
  bool first = true;
  for (int k = 1; k <= count; ++k) {
    uint64_t edge = k == count ? workload.max_bytes()
                               : workload.SizeAtFraction(static_cast<double>(k) / count);
    if (!first && edge <= previous_edge) continue;
    SizeBucket b;
    b.min_bytes = first ? workload.min_bytes() : workload.SizeAtFraction(std::nextafter(
                                                     workload.CumulativeFraction(previous_edge), 2.0));
    b.max_bytes = edge;
    b.cum_frac_lo = first ? 0.0 : workload.CumulativeFraction(previous_edge);
    b.cum_frac_hi = workload.CumulativeFraction(edge);
    buckets.push_back(b);
    previous_edge = edge;
    first = false;
  }
  return buckets;
}

Result<SeriesStats> ComputeSeriesStats(const SeriesInput& input,
                                       const std::vector<SizeBucket>& buckets,
                                       const UnloadedBaseline& baseline, const LoadContext& load) {
  if (buckets.empty()) return InvalidArgumentError("slowdown: expected at least one size bucket, got none");
  const std::vector<RpcSample>& samples = input.samples;
  SeriesStats out;
  out.label = input.label;
  out.count = samples.size();
  out.issued_rpcs = input.issued_rpcs;

  std::vector<double> slowdowns(samples.size());
  std::vector<std::vector<size_t>> members(buckets.size());
  long double slowdown_sum = 0;
  uint64_t completed_bytes = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    const RpcSample& s = samples[i];
    slowdowns[i] = static_cast<double>(s.rtt_ns) / baseline.RttNs(s.request_bytes);
    slowdown_sum += slowdowns[i];
    completed_bytes += s.request_bytes + s.response_bytes;
    auto it = std::lower_bound(buckets.begin(), buckets.end(), s.request_bytes,
                               [](const SizeBucket& b, uint64_t v) { return b.max_bytes < v; });
    if (it == buckets.end()) {
      ++out.unbucketed;
    } else {
      members[it - buckets.begin()].push_back(i);
    }
  }

  for (size_t b = 0; b < buckets.size(); ++b) {
    BucketStats stats;
    stats.bucket = buckets[b];
    stats.count = members[b].size();
    const std::vector<DurationNs> rtts = SortedRtts(samples, members[b]);
    const std::vector<double> slows = SortedSlowdowns(slowdowns, members[b]);
    stats.rtt_p50_ns = LatencyStats::Percentile(rtts, 50);
    stats.rtt_p99_ns = LatencyStats::Percentile(rtts, 99);
    stats.rtt_p999_ns = LatencyStats::Percentile(rtts, 99.9);
    stats.slowdown_p50 = NearestRank(slows, 50);
    stats.slowdown_p99 = NearestRank(slows, 99);
    stats.slowdown_p999 = NearestRank(slows, 99.9);
    out.buckets.push_back(stats);
  }

  std::vector<size_t> all(samples.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  if (!samples.empty()) {
    out.mean_slowdown = static_cast<double>(slowdown_sum / samples.size());
    const std::vector<double> sorted = SortedSlowdowns(slowdowns, all);
    out.slowdown_p50 = NearestRank(sorted, 50);
    out.slowdown_p99 = NearestRank(sorted, 99);

    // The shortest 10%: at least one message.
    std::stable_sort(all.begin(), all.end(), [&](size_t a, size_t b) {
      return samples[a].request_bytes < samples[b].request_bytes;
    });
    all.resize(std::max<size_t>(1, samples.size() / 10));
    out.short_count = all.size();
    const std::vector<DurationNs> rtts = SortedRtts(samples, all);
    const std::vector<double> slows = SortedSlowdowns(slowdowns, all);
    out.short_rtt_p50_ns = LatencyStats::Percentile(rtts, 50);
    out.short_rtt_p99_ns = LatencyStats::Percentile(rtts, 99);
    out.short_slowdown_p50 = NearestRank(slows, 50);
    out.short_slowdown_p99 = NearestRank(slows, 99);
  }
  out.offered_load = LoadFraction(input.issued_bytes, input.duration_ns, load);
  out.achieved_load = LoadFraction(completed_bytes, input.duration_ns, load);
  return out;
}

std::string SlowdownReportJson(const SlowdownReport& report) {
  Json series = Json::array();
  for (const SeriesStats& s : report.series) {
    Json buckets = Json::array();
    for (const BucketStats& b : s.buckets) {
      buckets.push_back({{"min_bytes", b.bucket.min_bytes},
                         {"max_bytes", b.bucket.max_bytes},
                         {"cum_frac_lo", b.bucket.cum_frac_lo},
                         {"cum_frac_hi", b.bucket.cum_frac_hi},
                         {"count", b.count},
                         {"rtt_p50_ns", b.rtt_p50_ns},
                         {"rtt_p99_ns", b.rtt_p99_ns},
                         {"rtt_p999_ns", b.rtt_p999_ns},
                         {"slowdown_p50", b.slowdown_p50},
                         {"slowdown_p99", b.slowdown_p99},
                         {"slowdown_p999", b.slowdown_p999}});
    }
    series.push_back({{"label", s.label},
                      {"count", s.count},
                      {"unbucketed", s.unbucketed},
                      {"issued_rpcs", s.issued_rpcs},
                      {"offered_load", s.offered_load},
                      {"achieved_load", s.achieved_load},
                      {"mean_slowdown", s.mean_slowdown},
                      {"slowdown_p50", s.slowdown_p50},
                      {"slowdown_p99", s.slowdown_p99},
                      {"shortest_10pct",
                       {{"count", s.short_count},
                        {"rtt_p50_ns", s.short_rtt_p50_ns},
                        {"rtt_p99_ns", s.short_rtt_p99_ns},
                        {"slowdown_p50", s.short_slowdown_p50},
                        {"slowdown_p99", s.short_slowdown_p99}}},
                      {"buckets", std::move(buckets)}});
  }
  Json doc = {{"workload", report.workload},
              {"unloaded_baseline", report.baseline},
              {"target_load", report.load.target_load},
              {"link_bps", report.load.link_bps},
              {"hosts", report.load.hosts},
              {"series", std::move(series)}};
  return doc.dump(2) + "\n";
}

}  // namespace wharf::bench
