// Tests for Workload: CSV errors, the step-CDF rule, truncation, the means of
// W1-W5 against data/workloads/README.md, and sampling checked statistically.
#include "bench/workload.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace wharf::bench {
namespace {

using ::testing::HasSubstr;

Workload Parse(const std::string& text) {
  Result<Workload> w = Workload::ParseCsv(text, "t.csv");
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  return w.ok() ? *w : Workload::Fixed(0);
}

std::string ParseError(const std::string& text) {
  Result<Workload> w = Workload::ParseCsv(text, "t.csv");
  EXPECT_FALSE(w.ok());
  return w.ok() ? "" : w.status().ToString();
}

Workload Load(const std::string& name) {
  Result<Workload> w = Workload::FromSpec(name, DefaultWorkloadDir());
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  return w.ok() ? *w : Workload::Fixed(1);
}

TEST(WorkloadParseTest, ReadsRowsAndName) {
  Workload w = Parse("bytes,cdf\n10,0.25\n20,0.5\r\n\n40,1.0\n");
  ASSERT_EQ(w.points().size(), 3u);
  EXPECT_EQ(w.points()[1].bytes, 20u);
  EXPECT_DOUBLE_EQ(w.points()[1].cdf, 0.5);
  EXPECT_EQ(w.name(), "t");
  EXPECT_FALSE(w.is_fixed());
  EXPECT_DOUBLE_EQ(w.mean_bytes(), 10 * 0.25 + 20 * 0.25 + 40 * 0.5);
}

TEST(WorkloadParseTest, BadHeader) {
  EXPECT_THAT(ParseError("size,p\n10,1\n"), HasSubstr("t.csv:1: expected the header 'bytes,cdf', got 'size,p'"));
  EXPECT_THAT(ParseError(""), HasSubstr("t.csv: expected the header 'bytes,cdf', got an empty file"));
  EXPECT_THAT(ParseError("bytes,cdf\n"), HasSubstr("expected rows after the header"));
}

TEST(WorkloadParseTest, BadFields) {
  EXPECT_THAT(ParseError("bytes,cdf\n10\n"), HasSubstr("t.csv:2: expected two fields"));
  EXPECT_THAT(ParseError("bytes,cdf\n10,0.5,1\n"), HasSubstr("t.csv:2: expected two fields"));
  EXPECT_THAT(ParseError("bytes,cdf\nten,1\n"), HasSubstr("t.csv:2: bytes: "));
  EXPECT_THAT(ParseError("bytes,cdf\n-5,1\n"), HasSubstr("t.csv:2: bytes: "));
  EXPECT_THAT(ParseError("bytes,cdf\n10,half\n"), HasSubstr("t.csv:2: cdf: "));
}

TEST(WorkloadParseTest, BytesMustIncrease) {
  EXPECT_THAT(ParseError("bytes,cdf\n10,0.5\n\n10,1\n"),
              HasSubstr("t.csv:4: expected bytes greater than 10 (line 2), got '10'"));
  EXPECT_THAT(ParseError("bytes,cdf\n10,0.5\n9,1\n"), HasSubstr("t.csv:3: expected bytes greater than 10"));
}

TEST(WorkloadParseTest, CdfInRangeAndNotDecreasing) {
  EXPECT_THAT(ParseError("bytes,cdf\n10,1.5\n"), HasSubstr("t.csv:2: expected a cdf in [0, 1], got '1.5'"));
  EXPECT_THAT(ParseError("bytes,cdf\n10,-0.1\n20,1\n"), HasSubstr("t.csv:2: expected a cdf in [0, 1]"));
  EXPECT_THAT(ParseError("bytes,cdf\n10,0.6\n20,0.5\n30,1\n"),
              HasSubstr("t.csv:3: expected a cdf of at least 0.6"));
  // Equal cdfs are allowed (a size nobody sends).
  EXPECT_EQ(Parse("bytes,cdf\n10,0.5\n20,0.5\n30,1\n").points().size(), 3u);
}

TEST(WorkloadParseTest, LastCdfMustBeOne) {
  EXPECT_THAT(ParseError("bytes,cdf\n10,0.5\n20,0.9\n"),
              HasSubstr("t.csv:3: expected the last cdf to be 1, got 0.9"));
  // Within rounding of 1 is 1.
  EXPECT_EQ(Parse("bytes,cdf\n10,0.5\n20,0.9999999999999\n").points().back().cdf, 1.0);
}

TEST(WorkloadSpecTest, NamesAndFixedSizes) {
  EXPECT_EQ(Load("w3").name(), "w3");
  EXPECT_EQ(Load("W1").name(), "w1");
  Workload fixed = Load("100000");
  EXPECT_TRUE(fixed.is_fixed());
  EXPECT_EQ(fixed.min_bytes(), 100000u);
  EXPECT_EQ(fixed.mean_bytes(), 100000.0);
  EXPECT_EQ(Load("64B").max_bytes(), 64u);
  EXPECT_EQ(Load("1MiB").max_bytes(), 1048576u);
  Result<Workload> bad = Workload::FromSpec("w9", DefaultWorkloadDir());
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().ToString(), HasSubstr("expected w1..w5 or a message size"));
  Result<Workload> missing = Workload::FromSpec("w2", "/nonexistent-dir");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().ToString(), HasSubstr("/nonexistent-dir/w2.csv"));
}

TEST(WorkloadSampleTest, StepRule) {
  Workload w = Parse("bytes,cdf\n10,0.25\n20,0.5\n40,1\n");
  EXPECT_EQ(w.Sample(0.0), 10u);
  EXPECT_EQ(w.Sample(0.25), 10u);  // first row with cdf >= u
  EXPECT_EQ(w.Sample(std::nextafter(0.25, 1.0)), 20u);
  EXPECT_EQ(w.Sample(0.5), 20u);
  EXPECT_EQ(w.Sample(0.75), 40u);
  EXPECT_EQ(w.Sample(std::nextafter(1.0, 0.0)), 40u);
  EXPECT_EQ(w.Sample(1.0), 40u);
  EXPECT_EQ(w.Sample(7.0), 40u);  // clamped
  EXPECT_EQ(w.SizeAtFraction(0.3), 20u);
}

TEST(WorkloadSampleTest, CumulativeFractions) {
  Workload w = Parse("bytes,cdf\n10,0.25\n20,0.5\n40,1\n");
  EXPECT_EQ(w.CumulativeFraction(9), 0.0);
  EXPECT_EQ(w.CumulativeFraction(10), 0.25);
  EXPECT_EQ(w.CumulativeFraction(39), 0.5);
  EXPECT_EQ(w.CumulativeFraction(40), 1.0);
  EXPECT_EQ(w.CumulativeFraction(1000), 1.0);
  EXPECT_EQ(w.FractionBelow(10), 0.0);
  EXPECT_EQ(w.FractionBelow(20), 0.25);
  EXPECT_EQ(w.FractionBelow(0), 0.0);
}

TEST(WorkloadSampleTest, TruncationCutsToTheLimit) {
  Workload w = Parse("bytes,cdf\n10,0.25\n20,0.5\n40,0.75\n80,1\n");
  Workload cut = w.Truncated(30);
  ASSERT_EQ(cut.points().size(), 3u);
  EXPECT_EQ(cut.points()[2].bytes, 30u);
  EXPECT_EQ(cut.points()[2].cdf, 1.0);
  EXPECT_EQ(cut.Sample(0.6), 30u);
  EXPECT_EQ(cut.Sample(0.9), 30u);
  EXPECT_EQ(cut.max_bytes(), 30u);
  EXPECT_DOUBLE_EQ(cut.mean_bytes(), 10 * 0.25 + 20 * 0.25 + 30 * 0.5);
  EXPECT_DOUBLE_EQ(cut.full_mean_bytes(), w.mean_bytes());
  EXPECT_EQ(cut.CumulativeFraction(29), 0.5);
  EXPECT_EQ(cut.CumulativeFraction(30), 1.0);
  EXPECT_EQ(cut.Describe(), "t (cut at 30 B)");
  // A limit at a row's size folds that row and the rest into it.
  EXPECT_EQ(w.Truncated(40).points().size(), 3u);
  EXPECT_EQ(w.Truncated(40).points()[2].cdf, 1.0);
  // A limit above everything changes nothing; 0 removes it.
  EXPECT_EQ(w.Truncated(1000).points().size(), 4u);
  EXPECT_EQ(w.Truncated(1000).Describe(), "t");
  EXPECT_EQ(cut.Truncated(0).points().size(), 4u);
  EXPECT_EQ(Workload::Fixed(5000).Truncated(1000).Sample(0.5), 1000u);
}

// The means in data/workloads/README.md (and /work/shared/workloads), full
// and cut at 1 MB, to the 0.1 B they are quoted to.
TEST(WorkloadMeanTest, MatchesPublishedTable) {
  struct Row {
    const char* name;
    double full;
    double cut;
  };
  const Row rows[] = {{"w1", 189.2, 189.2},
                      {"w2", 441.6, 433.3},
                      {"w3", 2927.7, 2423.1},
                      {"w4", 127796.6, 60175.1},
                      {"w5", 2564689.7, 385315.5}};
  for (const Row& row : rows) {
    Workload w = Load(row.name);
    EXPECT_NEAR(w.mean_bytes(), row.full, 0.05) << row.name;
    Workload cut = w.Truncated(kHomaTruncationBytes);
    EXPECT_NEAR(cut.mean_bytes(), row.cut, 0.05) << row.name;
    EXPECT_NEAR(cut.full_mean_bytes(), row.full, 0.05) << row.name;
  }
  EXPECT_EQ(Load("w3").points().size(), 842u);
  EXPECT_EQ(Load("w5").max_bytes(), 29400000u);
  EXPECT_EQ(Load("w5").Truncated(kHomaTruncationBytes).max_bytes(), kHomaTruncationBytes);
}

// 200k draws per workload: the Kolmogorov-Smirnov distance between the
// drawn sizes and the CSV's CDF (evaluated at every row, where a step CDF
// can differ most) is below 0.005 (the 99.9% critical value for this n is
// about 1.95 / sqrt(n) = 0.0044).
void CheckDistribution(const Workload& w, uint64_t seed) {
  constexpr int kSamples = 200000;
  std::mt19937_64 rng(seed);
  const std::vector<CdfPoint>& points = w.points();
  std::vector<uint64_t> counts(points.size(), 0);
  for (int i = 0; i < kSamples; ++i) {
    const uint64_t size = w.Sample(rng);
    auto it = std::lower_bound(points.begin(), points.end(), size,
                               [](const CdfPoint& p, uint64_t v) { return p.bytes < v; });
    ASSERT_TRUE(it != points.end() && it->bytes == size) << w.Describe() << " drew " << size;
    ++counts[it - points.begin()];
  }
  double ks = 0;
  uint64_t cumulative = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    cumulative += counts[i];
    ks = std::max(ks, std::fabs(static_cast<double>(cumulative) / kSamples - points[i].cdf));
  }
  EXPECT_LT(ks, 0.005) << w.Describe();
}

// The sample mean is within 2% of the exact mean. The heavy tails make the
// spread of a sample mean large (W3's sizes have a standard deviation 23x
// their mean), so the number of draws is chosen per workload to make 2% four
// standard errors: n = (4 * cv / 0.02)^2, at least 200k (W3 full: 21M draws).
void CheckMean(const Workload& w, uint64_t seed) {
  long double second_moment = 0;
  double previous = 0;
  for (const CdfPoint& p : w.points()) {
    second_moment += static_cast<long double>(p.bytes) * p.bytes * (p.cdf - previous);
    previous = p.cdf;
  }
  const double mean = w.mean_bytes();
  const double cv = std::sqrt(static_cast<double>(second_moment) - mean * mean) / mean;
  const auto samples = static_cast<uint64_t>(std::max(200000.0, std::pow(4 * cv / 0.02, 2)));
  std::mt19937_64 rng(seed);
  long double sum = 0;
  for (uint64_t i = 0; i < samples; ++i) sum += w.Sample(rng);
  const double sample_mean = static_cast<double>(sum / samples);
  EXPECT_NEAR(sample_mean / mean, 1.0, 0.02)
      << w.Describe() << ": mean of " << samples << " draws " << sample_mean << ", exact " << mean;
}

void CheckSampling(const Workload& w, uint64_t seed) {
  CheckDistribution(w, seed);
  CheckMean(w, seed + 1000);
}

TEST(WorkloadSampleTest, MatchesEachCsvFullAndTruncated) {
  uint64_t seed = 11;
  for (const char* name : {"w1", "w2", "w3", "w4", "w5"}) {
    Workload w = Load(name);
    CheckSampling(w, seed++);
    CheckSampling(w.Truncated(kHomaTruncationBytes), seed++);
  }
}

TEST(WorkloadSampleTest, SameSeedSameSizes) {
  Workload w = Load("w4");
  std::mt19937_64 a(7);
  std::mt19937_64 b(7);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(w.Sample(a), w.Sample(b));
}

}  // namespace
}  // namespace wharf::bench
