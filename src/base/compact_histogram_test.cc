#include "base/compact_histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "base/testing/exact_percentile.h"

namespace wharf {
namespace {

using testing_support::ExactPercentile;
using testing_support::WithinASixteenth;

void ExpectPercentilesWithinASixteenth(std::vector<uint64_t> values, const std::string& name) {
  CompactHistogram h;
  for (uint64_t v : values) h.Record(v);
  std::sort(values.begin(), values.end());
  ASSERT_EQ(h.Count(), values.size()) << name;
  EXPECT_EQ(h.Min(), values.front()) << name;
  EXPECT_EQ(h.Max(), values.back()) << name;
  for (double p : {0.0, 0.1, 1.0, 10.0, 25.0, 50.0, 75.0, 90.0, 99.0, 99.9, 100.0}) {
    EXPECT_TRUE(WithinASixteenth(h.Percentile(p), ExactPercentile(values, p))) << name << " p" << p;
  }
}

TEST(CompactHistogramTest, EmptyHistogramReportsZeros) {
  CompactHistogram h;
  EXPECT_EQ(h.Count(), 0u);
  EXPECT_EQ(h.Min(), 0u);
  EXPECT_EQ(h.Max(), 0u);
  EXPECT_EQ(h.OverflowCount(), 0u);
  EXPECT_EQ(h.Percentile(0), 0u);
  EXPECT_EQ(h.Percentile(50), 0u);
  EXPECT_EQ(h.Percentile(100), 0u);
}

TEST(CompactHistogramTest, BucketsTileTheRangeAndAreAtMostAnEighthOfTheirLowerBound) {
  EXPECT_EQ(CompactHistogram::BucketLower(0), 0u);
  for (size_t i = 0; i < CompactHistogram::kBuckets; ++i) {
    const uint64_t lower = CompactHistogram::BucketLower(i);
    const uint64_t upper = CompactHistogram::BucketUpper(i);
    ASSERT_LE(lower, upper) << i;
    if (i > 0) {
      ASSERT_EQ(lower, CompactHistogram::BucketUpper(i - 1) + 1) << i;
    }
    const uint64_t width = upper - lower + 1;
    if (lower < 16) {
      EXPECT_EQ(width, 1u) << i;
    } else {
      EXPECT_LE(8 * width, lower) << i;
    }
    EXPECT_EQ(CompactHistogram::BucketIndex(lower), i);
    EXPECT_EQ(CompactHistogram::BucketIndex(upper), i);
  }
  EXPECT_EQ(CompactHistogram::BucketUpper(CompactHistogram::kBuckets - 1), (uint64_t{1} << 36) - 1);
  // About 1.1 KiB, no heap.
  EXPECT_LE(sizeof(CompactHistogram), 1152u);
}

TEST(CompactHistogramTest, ValuesBelowSixteenAreExact) {
  for (uint64_t v = 0; v < 16; ++v) {
    CompactHistogram h;
    h.Record(v);
    h.Record(v);
    EXPECT_EQ(h.Percentile(50), v);
    EXPECT_EQ(h.Percentile(99.9), v);
  }
  CompactHistogram h;
  for (uint64_t v = 0; v < 16; ++v) h.Record(v);
  EXPECT_EQ(h.Percentile(50), 7u);   // rank 8 of 16
  EXPECT_EQ(h.Percentile(75), 11u);  // rank 12
}

TEST(CompactHistogramTest, PercentilesAreWithinASixteenthOfExactNearestRank) {
  std::mt19937_64 rng(42);
  std::vector<uint64_t> uniform;
  std::uniform_int_distribution<uint64_t> uniform_dist(0, 1'000'000);
  for (int i = 0; i < 20000; ++i) uniform.push_back(uniform_dist(rng));
  ExpectPercentilesWithinASixteenth(uniform, "uniform");

  std::vector<uint64_t> exponential;
  std::exponential_distribution<double> exp_dist(1.0 / 50'000.0);
  for (int i = 0; i < 20000; ++i) exponential.push_back(static_cast<uint64_t>(exp_dist(rng)));
  ExpectPercentilesWithinASixteenth(exponential, "exponential");

  std::vector<uint64_t> lognormal;
  std::lognormal_distribution<double> log_dist(11.0, 1.5);
  for (int i = 0; i < 20000; ++i) {
    lognormal.push_back(
        std::min<uint64_t>(static_cast<uint64_t>(log_dist(rng)), CompactHistogram::kMaxTrackable));
  }
  ExpectPercentilesWithinASixteenth(lognormal, "lognormal");

  std::vector<uint64_t> bimodal;
  std::normal_distribution<double> fast(20'000, 2'000), slow(5'000'000, 300'000);
  for (int i = 0; i < 20000; ++i) {
    bimodal.push_back(static_cast<uint64_t>(std::max(0.0, i % 10 == 0 ? slow(rng) : fast(rng))));
  }
  ExpectPercentilesWithinASixteenth(bimodal, "bimodal");

  // The worst case of the bound: every value at the top of its bucket.
  std::vector<uint64_t> tops;
  for (size_t i = 16; i < CompactHistogram::kBuckets; ++i) {
    tops.push_back(CompactHistogram::BucketUpper(i));
  }
  ExpectPercentilesWithinASixteenth(tops, "bucket tops");
  ExpectPercentilesWithinASixteenth(std::vector<uint64_t>(100, 123'456), "constant");
}

TEST(CompactHistogramTest, ValuesAbove2To36AreOverflowWithExactMax) {
  CompactHistogram h;
  for (int i = 0; i < 98; ++i) h.Record(1000);
  h.Record(CompactHistogram::kMaxTrackable);  // the last value with a bucket
  EXPECT_EQ(h.OverflowCount(), 0u);
  h.Record(CompactHistogram::kMaxTrackable + 1);
  h.Record(uint64_t{1} << 40);
  EXPECT_EQ(h.Count(), 101u);
  EXPECT_EQ(h.OverflowCount(), 2u);
  EXPECT_EQ(h.Min(), 1000u);
  EXPECT_EQ(h.Max(), uint64_t{1} << 40);
  EXPECT_TRUE(WithinASixteenth(h.Percentile(50), 1000));
  EXPECT_TRUE(WithinASixteenth(h.Percentile(98), CompactHistogram::kMaxTrackable));  // rank 99
  // Ranks 100 and 101 are overflowed: the only one of them known is Max.
  EXPECT_EQ(h.Percentile(99), uint64_t{1} << 40);
  EXPECT_EQ(h.Percentile(99.5), uint64_t{1} << 40);
  EXPECT_EQ(h.Percentile(100), uint64_t{1} << 40);

  CompactHistogram only_overflow;
  only_overflow.Record(UINT64_MAX);
  EXPECT_EQ(only_overflow.Count(), 1u);
  EXPECT_EQ(only_overflow.Min(), UINT64_MAX);
  EXPECT_EQ(only_overflow.Percentile(50), UINT64_MAX);
}

TEST(CompactHistogramTest, MergeEqualsRecordingBoth) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> dist(10.0, 2.0);
  CompactHistogram a, b, both;
  for (int i = 0; i < 5000; ++i) {
    const uint64_t v = static_cast<uint64_t>(dist(rng));
    (i % 3 == 0 ? a : b).Record(v);
    both.Record(v);
  }
  b.Record(uint64_t{1} << 38);  // an overflow on one side
  both.Record(uint64_t{1} << 38);
  CompactHistogram merged = a;
  merged.Merge(b);
  EXPECT_EQ(merged.Count(), both.Count());
  EXPECT_EQ(merged.OverflowCount(), 1u);
  EXPECT_EQ(merged.Min(), both.Min());
  EXPECT_EQ(merged.Max(), both.Max());
  for (double p : {0.0, 1.0, 50.0, 90.0, 99.0, 99.9, 100.0}) {
    EXPECT_EQ(merged.Percentile(p), both.Percentile(p)) << p;
  }

  // Merging an empty histogram changes nothing; merging into one copies.
  CompactHistogram unchanged = merged;
  unchanged.Merge(CompactHistogram{});
  EXPECT_EQ(unchanged.Count(), merged.Count());
  EXPECT_EQ(unchanged.Min(), merged.Min());
  CompactHistogram empty;
  empty.Merge(a);
  EXPECT_EQ(empty.Count(), a.Count());
  EXPECT_EQ(empty.Min(), a.Min());
  EXPECT_EQ(empty.Max(), a.Max());
  EXPECT_EQ(empty.Percentile(50), a.Percentile(50));
}

TEST(CompactHistogramTest, ResetForgetsEverything) {
  CompactHistogram h;
  h.Record(5);
  h.Record(uint64_t{1} << 50);
  h.Reset();
  EXPECT_EQ(h.Count(), 0u);
  EXPECT_EQ(h.OverflowCount(), 0u);
  EXPECT_EQ(h.Min(), 0u);
  EXPECT_EQ(h.Max(), 0u);
  EXPECT_EQ(h.Percentile(50), 0u);
  h.Record(700);
  EXPECT_EQ(h.Min(), 700u);
  EXPECT_EQ(h.Max(), 700u);
  EXPECT_EQ(h.Percentile(0), 700u);
}

TEST(CompactHistogramTest, PercentileArgumentIsClamped) {
  CompactHistogram h;
  for (uint64_t v = 100; v <= 10000; v += 100) h.Record(v);
  EXPECT_EQ(h.Percentile(-5), 100u);
  EXPECT_EQ(h.Percentile(std::numeric_limits<double>::quiet_NaN()), 100u);
  EXPECT_EQ(h.Percentile(150), 10000u);
  EXPECT_EQ(h.Percentile(1e-9), h.Percentile(1.0));  // rank 1 either way
}

}  // namespace
}  // namespace wharf
