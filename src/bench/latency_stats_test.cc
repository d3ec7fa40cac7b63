#include "bench/latency_stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace wharf::bench {
namespace {

std::vector<DurationNs> OneTo(int n) {
  std::vector<DurationNs> v(n);
  for (int i = 0; i < n; ++i) v[i] = i + 1;
  return v;
}

TEST(LatencyStatsPercentile, NearestRankOnOneToHundred) {
  const std::vector<DurationNs> v = OneTo(100);
  EXPECT_EQ(LatencyStats::Percentile(v, 0), 1);
  EXPECT_EQ(LatencyStats::Percentile(v, 1), 1);
  EXPECT_EQ(LatencyStats::Percentile(v, 50), 50);
  EXPECT_EQ(LatencyStats::Percentile(v, 50.5), 51);
  EXPECT_EQ(LatencyStats::Percentile(v, 90), 90);
  EXPECT_EQ(LatencyStats::Percentile(v, 99), 99);
  EXPECT_EQ(LatencyStats::Percentile(v, 99.9), 100);
  EXPECT_EQ(LatencyStats::Percentile(v, 100), 100);
}

TEST(LatencyStatsPercentile, ExactRanksDoNotRoundUpOnFloatingPointNoise) {
  // 99.9 % of 1000 is exactly rank 999; 0.999 * 1000 in binary is a hair above.
  EXPECT_EQ(LatencyStats::Percentile(OneTo(1000), 99.9), 999);
  EXPECT_EQ(LatencyStats::Percentile(OneTo(10000), 99.9), 9990);
  EXPECT_EQ(LatencyStats::Percentile(OneTo(1000000), 99.9), 999000);
  EXPECT_EQ(LatencyStats::Percentile(OneTo(10), 90), 9);
  EXPECT_EQ(LatencyStats::Percentile(OneTo(3), 100.0 / 3), 1);
}

TEST(LatencyStatsPercentile, EdgeCases) {
  EXPECT_EQ(LatencyStats::Percentile({}, 50), 0);
  EXPECT_EQ(LatencyStats::Percentile({7}, 0), 7);
  EXPECT_EQ(LatencyStats::Percentile({7}, 99.9), 7);
  EXPECT_EQ(LatencyStats::Percentile({1, 2}, 50), 1);
  EXPECT_EQ(LatencyStats::Percentile({1, 2}, 50.1), 2);
  EXPECT_EQ(LatencyStats::Percentile({1, 2}, -5), 1);
  EXPECT_EQ(LatencyStats::Percentile({1, 2}, 500), 2);
}

TEST(LatencyStatsSummarize, ShuffledOneToThousand) {
  std::vector<DurationNs> v = OneTo(1000);
  std::mt19937 rng(42);
  std::shuffle(v.begin(), v.end(), rng);
  LatencyStats stats;
  stats.Reserve(v.size());
  for (DurationNs x : v) stats.Record(x);
  EXPECT_EQ(stats.count(), 1000u);
  const LatencySummary s = stats.Summarize(1 * kNsPerMs);
  EXPECT_EQ(s.count, 1000u);
  EXPECT_EQ(s.min_ns, 1);
  EXPECT_EQ(s.p50_ns, 500);
  EXPECT_EQ(s.p90_ns, 900);
  EXPECT_EQ(s.p99_ns, 990);
  EXPECT_EQ(s.p999_ns, 999);
  EXPECT_EQ(s.max_ns, 1000);
  EXPECT_DOUBLE_EQ(s.mean_ns, 500.5);
  EXPECT_EQ(s.elapsed_ns, kNsPerMs);
  EXPECT_DOUBLE_EQ(s.rate_per_sec, 1'000'000.0);  // 1000 in 1 ms
  EXPECT_TRUE(std::is_sorted(stats.samples_ns().begin(), stats.samples_ns().end()));
}

TEST(LatencyStatsSummarize, SkewedTail) {
  // 990 fast samples and 10 slow ones: the tail shows from p99.9 on (and
  // p99 is the last fast one: rank 990).
  LatencyStats stats;
  for (int i = 0; i < 990; ++i) stats.Record(10'000);
  for (int i = 0; i < 10; ++i) stats.Record(500'000);
  const LatencySummary s = stats.Summarize(0);
  EXPECT_EQ(s.p50_ns, 10'000);
  EXPECT_EQ(s.p99_ns, 10'000);
  EXPECT_EQ(s.p999_ns, 500'000);
  EXPECT_EQ(s.max_ns, 500'000);
  EXPECT_DOUBLE_EQ(s.mean_ns, (990.0 * 10'000 + 10.0 * 500'000) / 1000);
}

TEST(LatencyStatsSummarize, RateFromSumWhenNoElapsedGiven) {
  LatencyStats stats;
  for (int i = 0; i < 4; ++i) stats.Record(250 * kNsPerUs);
  const LatencySummary s = stats.Summarize(0);
  EXPECT_EQ(s.elapsed_ns, kNsPerMs);
  EXPECT_DOUBLE_EQ(s.rate_per_sec, 4000.0);
}

TEST(LatencyStatsSummarize, Empty) {
  LatencyStats stats;
  const LatencySummary s = stats.Summarize(123);
  EXPECT_EQ(s.count, 0u);
  EXPECT_EQ(s.p50_ns, 0);
  EXPECT_EQ(s.rate_per_sec, 0);
  EXPECT_EQ(s.elapsed_ns, 123);
}

}  // namespace
}  // namespace wharf::bench
