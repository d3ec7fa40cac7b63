#include "base/histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace wharf {
namespace {

std::vector<HistogramBucket> Buckets(const Histogram& h) {
  std::vector<HistogramBucket> out;
  h.ForEachBucket([&](const HistogramBucket& b) { out.push_back(b); });
  return out;
}

bool SameBuckets(const std::vector<HistogramBucket>& a, const std::vector<HistogramBucket>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const HistogramBucket& x, const HistogramBucket& y) {
                      return x.lower == y.lower && x.upper == y.upper && x.count == y.count;
                    });
}

// The nearest-rank percentile of sorted values, with the rank computed as
// Histogram::Percentile computes it, so that both name the same sample.
uint64_t ExactPercentile(const std::vector<uint64_t>& sorted, double p) {
  if (p <= 0) return sorted.front();
  if (p >= 100) return sorted.back();
  long double rank = std::ceil(static_cast<long double>(p) / 100.0L * sorted.size());
  size_t r = std::clamp<size_t>(static_cast<size_t>(rank), 1, sorted.size());
  return sorted[r - 1];
}

void ExpectPercentilesWithinOnePercent(std::vector<uint64_t> values, const std::string& name) {
  Histogram h;
  for (uint64_t v : values) h.Record(v);
  std::sort(values.begin(), values.end());
  ASSERT_EQ(h.Count(), values.size());
  EXPECT_EQ(h.Min(), values.front()) << name;
  EXPECT_EQ(h.Max(), values.back()) << name;
  for (double p : {0.0, 0.1, 1.0, 10.0, 25.0, 50.0, 75.0, 90.0, 99.0, 99.9, 99.99, 100.0}) {
    const double exact = static_cast<double>(ExactPercentile(values, p));
    const double got = static_cast<double>(h.Percentile(p));
    EXPECT_LE(std::abs(got - exact), 0.01 * exact) << name << " p" << p << " exact " << exact;
  }
}

TEST(HistogramTest, EmptyHistogramReportsZeros) {
  Histogram h;
  EXPECT_EQ(h.Count(), 0u);
  EXPECT_EQ(h.Min(), 0u);
  EXPECT_EQ(h.Max(), 0u);
  EXPECT_EQ(h.Mean(), 0.0);
  EXPECT_EQ(h.P50(), 0u);
  EXPECT_EQ(h.Percentile(100), 0u);
  EXPECT_TRUE(Buckets(h).empty());
}

TEST(HistogramTest, BucketsTileTheWholeRange) {
  EXPECT_EQ(Histogram::BucketLower(0), 0u);
  EXPECT_EQ(Histogram::BucketUpper(Histogram::kMaxBuckets - 1), UINT64_MAX);
  for (size_t i = 0; i < Histogram::kMaxBuckets; ++i) {
    ASSERT_EQ(Histogram::BucketIndex(Histogram::BucketLower(i)), i);
    ASSERT_EQ(Histogram::BucketIndex(Histogram::BucketUpper(i)), i);
    if (i + 1 < Histogram::kMaxBuckets) {
      ASSERT_EQ(Histogram::BucketLower(i + 1), Histogram::BucketUpper(i) + 1) << i;
    }
  }
}

TEST(HistogramTest, BucketBoundsAreWithinOnePercentOfEveryValue) {
  std::mt19937_64 rng(7);
  std::vector<uint64_t> values = {0, 1, 127, 128, 255, 256, 257, 1000, UINT64_MAX};
  for (int i = 0; i < 100000; ++i) values.push_back(rng() >> (rng() % 64));
  for (uint64_t v : values) {
    const size_t i = Histogram::BucketIndex(v);
    const uint64_t lower = Histogram::BucketLower(i);
    const uint64_t upper = Histogram::BucketUpper(i);
    ASSERT_LE(lower, v);
    ASSERT_GE(upper, v);
    // Width below 1% of the value (fits: widths are at most 2^56).
    ASSERT_LE((upper - lower) * 100, v) << v;
  }
}

TEST(HistogramTest, MinMaxAndMeanAreExact) {
  Histogram h;
  for (uint64_t v : {1'000'003u, 17u, 123'456'789u, 999u}) h.Record(v);
  EXPECT_EQ(h.Count(), 4u);
  EXPECT_EQ(h.Min(), 17u);
  EXPECT_EQ(h.Max(), 123'456'789u);
  EXPECT_DOUBLE_EQ(h.Mean(), (1'000'003.0 + 17 + 123'456'789 + 999) / 4);
  EXPECT_EQ(h.Percentile(0), 17u);
  EXPECT_EQ(h.Percentile(100), 123'456'789u);
}

TEST(HistogramTest, RecordsZeroAndUint64Max) {
  Histogram h;
  h.Record(0);
  h.Record(UINT64_MAX);
  EXPECT_EQ(h.Count(), 2u);
  EXPECT_EQ(h.Min(), 0u);
  EXPECT_EQ(h.Max(), UINT64_MAX);
  EXPECT_DOUBLE_EQ(h.Mean(), static_cast<double>(UINT64_MAX) / 2);
  EXPECT_EQ(h.P50(), 0u);
  // The top bucket's midpoint, not its end: within 0.4% of the value.
  EXPECT_GE(static_cast<double>(h.P99()), 0.996 * static_cast<double>(UINT64_MAX));
  EXPECT_EQ(h.Percentile(100), UINT64_MAX);
  auto buckets = Buckets(h);
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_EQ(buckets[0].lower, 0u);
  EXPECT_EQ(buckets[0].upper, 0u);
  EXPECT_EQ(buckets[1].upper, UINT64_MAX);
  EXPECT_EQ(buckets[1].count, 1u);
}

TEST(HistogramTest, RecordWithCountEqualsRepeatedRecord) {
  Histogram repeated, counted;
  for (int i = 0; i < 1000; ++i) repeated.Record(5000);
  for (int i = 0; i < 10; ++i) repeated.Record(77);
  counted.Record(5000, 1000);
  counted.Record(77, 10);
  counted.Record(123, 0);  // a zero count records nothing, not even min
  EXPECT_EQ(counted.Count(), repeated.Count());
  EXPECT_EQ(counted.Min(), 77u);
  EXPECT_EQ(counted.Max(), repeated.Max());
  EXPECT_DOUBLE_EQ(counted.Mean(), repeated.Mean());
  EXPECT_TRUE(SameBuckets(Buckets(counted), Buckets(repeated)));
  EXPECT_EQ(counted.P50(), repeated.P50());
}

TEST(HistogramTest, PercentilesMatchExactOnLogUniformData) {
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> decade(0.0, 12.0);  // 1 ns to 1000 s
  std::vector<uint64_t> values(200'000);
  for (auto& v : values) v = static_cast<uint64_t>(std::pow(10.0, decade(rng)));
  ExpectPercentilesWithinOnePercent(std::move(values), "log-uniform");
}

TEST(HistogramTest, PercentilesMatchExactOnLogNormalData) {
  std::mt19937_64 rng(2);
  std::lognormal_distribution<double> rtt(std::log(20'000.0), 1.0);  // ~20 us median
  std::vector<uint64_t> values(200'000);
  for (auto& v : values) v = static_cast<uint64_t>(rtt(rng));
  ExpectPercentilesWithinOnePercent(std::move(values), "log-normal");
}

TEST(HistogramTest, PercentilesMatchExactOnBimodalData) {
  // Short messages around 8 us, a 5% tail of long ones around 2 ms.
  std::mt19937_64 rng(3);
  std::normal_distribution<double> fast(8'000.0, 1'000.0);
  std::normal_distribution<double> slow(2'000'000.0, 300'000.0);
  std::bernoulli_distribution is_slow(0.05);
  std::vector<uint64_t> values(200'000);
  for (auto& v : values) {
    v = static_cast<uint64_t>(std::max(0.0, is_slow(rng) ? slow(rng) : fast(rng)));
  }
  ExpectPercentilesWithinOnePercent(std::move(values), "bimodal");
}

TEST(HistogramTest, PercentilesMatchExactOverTheFullRange) {
  std::mt19937_64 rng(4);
  std::vector<uint64_t> values(100'000);
  for (auto& v : values) v = rng() >> (rng() % 64);
  ExpectPercentilesWithinOnePercent(std::move(values), "full-range");
}

TEST(HistogramTest, PercentileClampsItsArgument) {
  Histogram h;
  for (uint64_t v = 1000; v <= 5000; v += 1000) h.Record(v);
  EXPECT_EQ(h.Percentile(-5), 1000u);
  EXPECT_EQ(h.Percentile(250), 5000u);
  EXPECT_EQ(h.Percentile(std::numeric_limits<double>::quiet_NaN()), 1000u);
}

TEST(HistogramTest, MergeEqualsRecordingEverythingInOne) {
  std::mt19937_64 rng(5);
  std::lognormal_distribution<double> dist(std::log(50'000.0), 1.5);
  Histogram all, a, b;
  for (int i = 0; i < 100'000; ++i) {
    const auto v = static_cast<uint64_t>(dist(rng));
    all.Record(v);
    (i % 3 == 0 ? a : b).Record(v);
  }
  Histogram merged;
  merged.Merge(a);
  merged.Merge(b);
  merged.Merge(Histogram());  // merging an empty histogram changes nothing
  EXPECT_EQ(merged.Count(), all.Count());
  EXPECT_EQ(merged.Min(), all.Min());
  EXPECT_EQ(merged.Max(), all.Max());
  EXPECT_DOUBLE_EQ(merged.Mean(), all.Mean());
  EXPECT_TRUE(SameBuckets(Buckets(merged), Buckets(all)));
  for (double p : {1.0, 50.0, 99.0, 99.9}) EXPECT_EQ(merged.Percentile(p), all.Percentile(p));
}

TEST(HistogramTest, ResetForgetsEverything) {
  Histogram h(1000);
  h.Record(10);
  h.Record(5000);
  h.Reset();
  EXPECT_EQ(h.Count(), 0u);
  EXPECT_EQ(h.Min(), 0u);
  EXPECT_EQ(h.Max(), 0u);
  EXPECT_EQ(h.OverflowCount(), 0u);
  EXPECT_TRUE(Buckets(h).empty());
  h.Record(42);
  EXPECT_EQ(h.Min(), 42u);
  EXPECT_EQ(h.Max(), 42u);
}

TEST(HistogramTest, ValuesAboveMaxValueOverflow) {
  Histogram h(1'000'000);
  EXPECT_EQ(h.MaxTrackable(), 1'000'000u);
  for (int i = 0; i < 98; ++i) h.Record(500);
  h.Record(2'000'000);
  h.Record(3'000'000);
  EXPECT_EQ(h.Count(), 100u);
  EXPECT_EQ(h.OverflowCount(), 2u);
  EXPECT_EQ(h.Max(), 3'000'000u);  // still exact
  EXPECT_EQ(h.P50(), 500u);
  EXPECT_EQ(h.Percentile(99.5), 3'000'000u);  // among the overflow: the known max
  uint64_t in_buckets = 0;
  h.ForEachBucket([&](const HistogramBucket& b) {
    EXPECT_LE(b.upper, Histogram::BucketUpper(Histogram::BucketIndex(1'000'000)));
    in_buckets += b.count;
  });
  EXPECT_EQ(in_buckets, 98u);
}

TEST(HistogramTest, MergeIntoSmallerRangeCountsOverflow) {
  Histogram wide, narrow(10'000);
  wide.Record(100);
  wide.Record(1'000'000, 3);
  narrow.Record(20'000);
  narrow.Merge(wide);
  EXPECT_EQ(narrow.Count(), 5u);
  EXPECT_EQ(narrow.OverflowCount(), 4u);
  EXPECT_EQ(narrow.Min(), 100u);
  EXPECT_EQ(narrow.Max(), 1'000'000u);
}

TEST(HistogramTest, ForEachBucketVisitsInIncreasingOrder) {
  Histogram h;
  for (uint64_t v : {9'000'000u, 3u, 70'000u, 3u, 512u}) h.Record(v);
  auto buckets = Buckets(h);
  ASSERT_EQ(buckets.size(), 4u);
  for (size_t i = 1; i < buckets.size(); ++i) EXPECT_GT(buckets[i].lower, buckets[i - 1].upper);
  EXPECT_EQ(buckets[0].count, 2u);
}

}  // namespace
}  // namespace wharf
