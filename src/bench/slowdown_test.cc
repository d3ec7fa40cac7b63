// Tests for the slowdown arithmetic on hand-computed inputs: baseline
// interpolation, size buckets, per-bucket and shortest-10% percentiles,
// loads, and the JSON.
#include "bench/slowdown.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace wharf::bench {
namespace {

using ::testing::HasSubstr;

Workload Quarters() {
  Result<Workload> w = Workload::ParseCsv("bytes,cdf\n10,0.25\n20,0.5\n40,0.75\n80,1\n", "q.csv");
  EXPECT_TRUE(w.ok());
  return *w;
}

TEST(UnloadedBaselineTest, InterpolatesBetweenMeasuredSizes) {
  Result<UnloadedBaseline> b = UnloadedBaseline::FromPoints({{100, 10000}, {1000, 19000}});
  ASSERT_TRUE(b.ok());
  EXPECT_DOUBLE_EQ(b->RttNs(100), 10000);
  EXPECT_DOUBLE_EQ(b->RttNs(550), 14500);
  EXPECT_DOUBLE_EQ(b->RttNs(1000), 19000);
  EXPECT_DOUBLE_EQ(b->RttNs(50), 10000);    // below: the smallest size's
  EXPECT_DOUBLE_EQ(b->RttNs(2000), 29000);  // above: the last slope, 10 ns/B
  EXPECT_EQ(b->Describe(), "measured P50 at 2 sizes (100 B .. 1000 B)");
}

TEST(UnloadedBaselineTest, ThreePointsAndNoisySlopes) {
  Result<UnloadedBaseline> b =
      UnloadedBaseline::FromPoints({{0, 4000}, {1000, 5000}, {2000, 4800}});
  ASSERT_TRUE(b.ok());
  EXPECT_DOUBLE_EQ(b->RttNs(500), 4500);
  EXPECT_DOUBLE_EQ(b->RttNs(1500), 4900);
  EXPECT_DOUBLE_EQ(b->RttNs(5000), 4800);  // a falling last segment is not extended down
  Result<UnloadedBaseline> one = UnloadedBaseline::FromPoints({{64, 7000}});
  ASSERT_TRUE(one.ok());
  EXPECT_DOUBLE_EQ(one->RttNs(1), 7000);
  EXPECT_DOUBLE_EQ(one->RttNs(1000000), 7000);
}

TEST(UnloadedBaselineTest, FromSamplesTakesP50PerSize) {
  const std::vector<RpcSample> samples = {
      {100, 100, 5}, {200, 200, 20}, {100, 100, 1}, {100, 100, 3}, {200, 200, 10}};
  Result<UnloadedBaseline> b = UnloadedBaseline::FromSamples(samples);
  ASSERT_TRUE(b.ok());
  ASSERT_EQ(b->points().size(), 2u);
  EXPECT_EQ(b->points()[0].bytes, 100u);
  EXPECT_EQ(b->points()[0].rtt_ns, 3);
  EXPECT_EQ(b->points()[1].rtt_ns, 10);  // nearest rank of 2: the smaller
}

TEST(UnloadedBaselineTest, LinkModel) {
  Result<UnloadedBaseline> b = UnloadedBaseline::LinkModel(10000, 8'000'000'000);
  ASSERT_TRUE(b.ok());
  EXPECT_DOUBLE_EQ(b->RttNs(0), 10000);
  EXPECT_DOUBLE_EQ(b->RttNs(1000), 11000);  // 8000 bits at 8 Gbps: 1 us
  EXPECT_EQ(b->Describe(), "10000 ns + size at 8000000000 bps");
}

TEST(UnloadedBaselineTest, RejectsBadInput) {
  EXPECT_THAT(UnloadedBaseline::FromPoints({}).status().ToString(), HasSubstr("at least one size"));
  EXPECT_THAT(UnloadedBaseline::FromPoints({{10, 5}, {10, 6}}).status().ToString(),
              HasSubstr("expected sizes increasing, got 10 B after 10 B"));
  EXPECT_THAT(UnloadedBaseline::FromPoints({{10, 0}}).status().ToString(),
              HasSubstr("expected an RTT > 0 at 10 B, got 0 ns"));
  EXPECT_FALSE(UnloadedBaseline::FromSamples({}).ok());
  EXPECT_FALSE(UnloadedBaseline::LinkModel(0, 1000).ok());
  EXPECT_FALSE(UnloadedBaseline::LinkModel(1000, 0).ok());
}

TEST(SizeBucketsTest, EqualSharesOfMessages) {
  std::vector<SizeBucket> b = MakeSizeBuckets(Quarters(), 2);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].min_bytes, 10u);
  EXPECT_EQ(b[0].max_bytes, 20u);
  EXPECT_EQ(b[0].cum_frac_lo, 0.0);
  EXPECT_EQ(b[0].cum_frac_hi, 0.5);
  EXPECT_EQ(b[1].min_bytes, 40u);
  EXPECT_EQ(b[1].max_bytes, 80u);
  EXPECT_EQ(b[1].cum_frac_lo, 0.5);
  EXPECT_EQ(b[1].cum_frac_hi, 1.0);
  EXPECT_EQ(MakeSizeBuckets(Quarters(), 4).size(), 4u);
  EXPECT_EQ(MakeSizeBuckets(Quarters(), 100).size(), 4u);  // never more than sizes
  EXPECT_EQ(MakeSizeBuckets(Quarters(), 0).size(), 1u);
}

TEST(SizeBucketsTest, BigSizesGetTheirOwnBucket) {
  Result<Workload> w = Workload::ParseCsv("bytes,cdf\n8,0.31\n9,0.32\n27,0.5\n100,1\n", "x");
  ASSERT_TRUE(w.ok());
  std::vector<SizeBucket> b = MakeSizeBuckets(*w, 10);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].max_bytes, 8u);
  EXPECT_EQ(b[0].cum_frac_hi, 0.31);
  EXPECT_EQ(b[1].min_bytes, 9u);
  EXPECT_EQ(b[1].max_bytes, 27u);
  EXPECT_EQ(b[1].cum_frac_lo, 0.31);
  EXPECT_EQ(b[2].min_bytes, 100u);
  EXPECT_EQ(b[2].cum_frac_lo, 0.5);
  std::vector<SizeBucket> fixed = MakeSizeBuckets(Workload::Fixed(1000), 10);
  ASSERT_EQ(fixed.size(), 1u);
  EXPECT_EQ(fixed[0].min_bytes, 1000u);
  EXPECT_EQ(fixed[0].cum_frac_hi, 1.0);
}

// Ten 10 B RPCs with RTTs 1..10 us against an unloaded 1 us (slowdowns
// 1..10), and ten 40 B RPCs at exactly their unloaded 4 us.
SeriesInput HandInput() {
  SeriesInput in;
  in.label = "wharf poll";
  for (int k = 1; k <= 10; ++k) in.samples.push_back({10, 10, 1000 * k});
  for (int k = 1; k <= 10; ++k) in.samples.push_back({40, 40, 4000});
  in.issued_rpcs = 21;
  in.issued_bytes = 1'000'000;
  in.duration_ns = kNsPerMs;
  return in;
}

TEST(SeriesStatsTest, HandComputedBuckets) {
  Result<UnloadedBaseline> base = UnloadedBaseline::FromPoints({{10, 1000}, {80, 8000}});
  ASSERT_TRUE(base.ok());
  const LoadContext load{0.5, 8'000'000'000, 2};
  Result<SeriesStats> s = ComputeSeriesStats(HandInput(), MakeSizeBuckets(Quarters(), 2), *base, load);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->label, "wharf poll");
  EXPECT_EQ(s->count, 20u);
  EXPECT_EQ(s->unbucketed, 0u);
  ASSERT_EQ(s->buckets.size(), 2u);
  const BucketStats& small = s->buckets[0];
  EXPECT_EQ(small.count, 10u);
  EXPECT_EQ(small.rtt_p50_ns, 5000);  // rank 5 of 10
  EXPECT_EQ(small.rtt_p99_ns, 10000);  // rank 10
  EXPECT_EQ(small.rtt_p999_ns, 10000);
  EXPECT_DOUBLE_EQ(small.slowdown_p50, 5);
  EXPECT_DOUBLE_EQ(small.slowdown_p99, 10);
  const BucketStats& large = s->buckets[1];
  EXPECT_EQ(large.count, 10u);
  EXPECT_EQ(large.rtt_p50_ns, 4000);
  EXPECT_DOUBLE_EQ(large.slowdown_p99, 1);  // 4 us over the interpolated 4 us at 40 B
  // All 20: slowdowns eleven 1s, then 2..10.
  EXPECT_DOUBLE_EQ(s->mean_slowdown, (55.0 + 10.0) / 20);
  EXPECT_DOUBLE_EQ(s->slowdown_p50, 1);
  EXPECT_DOUBLE_EQ(s->slowdown_p99, 10);
  // Shortest 10%: the first two 10 B RPCs, RTTs 1 and 2 us.
  EXPECT_EQ(s->short_count, 2u);
  EXPECT_EQ(s->short_rtt_p50_ns, 1000);
  EXPECT_EQ(s->short_rtt_p99_ns, 2000);
  EXPECT_DOUBLE_EQ(s->short_slowdown_p50, 1);
  EXPECT_DOUBLE_EQ(s->short_slowdown_p99, 2);
  // 1e6 B in 1 ms is 8 Gbps over 2 x 8 Gbps; completed: 20 x 2 x 25 B avg = 1000 B.
  EXPECT_EQ(s->issued_rpcs, 21u);
  EXPECT_DOUBLE_EQ(s->offered_load, 0.5);
  EXPECT_DOUBLE_EQ(s->achieved_load, 1000.0 * 8 * 1000 / 16e9);
}

TEST(SeriesStatsTest, UnbucketedEmptyBucketsAndNoLoad) {
  Result<UnloadedBaseline> base = UnloadedBaseline::FromPoints({{10, 1000}});
  ASSERT_TRUE(base.ok());
  SeriesInput in;
  in.samples = {{10, 10, 2000}, {500, 500, 3000}};  // 500 B is beyond every bucket
  Result<SeriesStats> s = ComputeSeriesStats(in, MakeSizeBuckets(Quarters(), 4), *base, {});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->unbucketed, 1u);
  ASSERT_EQ(s->buckets.size(), 4u);
  EXPECT_EQ(s->buckets[0].count, 1u);
  EXPECT_EQ(s->buckets[1].count, 0u);
  EXPECT_EQ(s->buckets[1].rtt_p99_ns, 0);
  EXPECT_EQ(s->short_count, 1u);  // at least one
  EXPECT_EQ(s->offered_load, 0.0);
  EXPECT_FALSE(ComputeSeriesStats(in, {}, *base, {}).ok());
  Result<SeriesStats> empty = ComputeSeriesStats({}, MakeSizeBuckets(Quarters(), 4), *base, {});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->count, 0u);
  EXPECT_EQ(empty->mean_slowdown, 0.0);
}

TEST(NearestRankTest, MatchesLatencyStatsRule) {
  const std::vector<double> v = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_EQ(NearestRank(v, 50), 5);
  EXPECT_EQ(NearestRank(v, 51), 6);
  EXPECT_EQ(NearestRank(v, 0), 1);
  EXPECT_EQ(NearestRank(v, 100), 10);
  EXPECT_EQ(NearestRank({}, 50), 0);
}

TEST(SlowdownJsonTest, HoldsTheNumbers) {
  Result<UnloadedBaseline> base = UnloadedBaseline::FromPoints({{10, 1000}, {80, 8000}});
  ASSERT_TRUE(base.ok());
  SlowdownReport report;
  report.workload = "q";
  report.baseline = base->Describe();
  report.load = {0.5, 8'000'000'000, 2};
  report.buckets = MakeSizeBuckets(Quarters(), 2);
  Result<SeriesStats> s = ComputeSeriesStats(HandInput(), report.buckets, *base, report.load);
  ASSERT_TRUE(s.ok());
  report.series.push_back(*s);
  const nlohmann::json j = nlohmann::json::parse(SlowdownReportJson(report));
  EXPECT_EQ(j["workload"], "q");
  EXPECT_EQ(j["hosts"], 2);
  EXPECT_EQ(j["link_bps"], 8'000'000'000u);
  ASSERT_EQ(j["series"].size(), 1u);
  const nlohmann::json& series = j["series"][0];
  EXPECT_EQ(series["label"], "wharf poll");
  EXPECT_EQ(series["shortest_10pct"]["rtt_p99_ns"], 2000);
  ASSERT_EQ(series["buckets"].size(), 2u);
  EXPECT_EQ(series["buckets"][0]["max_bytes"], 20);
  EXPECT_EQ(series["buckets"][0]["slowdown_p50"], 5.0);
  EXPECT_EQ(series["buckets"][1]["cum_frac_hi"], 1.0);
}

}  // namespace
}  // namespace wharf::bench
