// Tests for the load nodes' sample file: a round trip, and each way a file
// can be malformed (truncated, wrong version, missing key, bad sample).
#include "tools/bench/cluster_text_samples.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace wharf::tools::bench {
namespace {

using ::testing::HasSubstr;

ClusterSampleHeader Header() {
  return {.proto = "grpc",
          .host = 1,
          .hosts = 4,
          .workload = "w4 (cut at 1000000 B)",
          .load = 0.8,
          .link_bps = 1'000'000'000,
          .duration_ns = 2'000'000'000,
          .seed = 7};
}

std::string Line(const ClusterSample& s) {
  char buffer[kClusterSampleLineMax];
  return std::string(buffer, FormatClusterSample(s, buffer, sizeof(buffer)));
}

std::string GoodFile() {
  return FormatClusterSampleHeader(Header()) + Line({10, 2, 64, 64, 48211}) +
         Line({2000, 0, 1000000, 100, 9000000}) +
         FormatClusterSampleSummary({.issued = 3, .completed = 2, .failed = 1, .cpu_ns = 12345});
}

std::string ParseError(const std::string& text) {
  Result<ClusterSampleFile> f = ParseClusterSamples(text, "h1.samples");
  EXPECT_FALSE(f.ok());
  return f.ok() ? "" : f.status().ToString();
}

TEST(ClusterSamplesTest, RoundTrip) {
  Result<ClusterSampleFile> f = ParseClusterSamples(GoodFile(), "h1.samples");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->header.proto, "grpc");
  EXPECT_EQ(f->header.host, 1);
  EXPECT_EQ(f->header.hosts, 4);
  EXPECT_EQ(f->header.workload, "w4 (cut at 1000000 B)");
  EXPECT_DOUBLE_EQ(f->header.load, 0.8);
  EXPECT_EQ(f->header.link_bps, 1'000'000'000u);
  EXPECT_EQ(f->header.duration_ns, 2'000'000'000);
  EXPECT_EQ(f->header.seed, 7u);
  ASSERT_EQ(f->samples.size(), 2u);
  EXPECT_EQ(f->samples[1].send_offset_ns, 2000);
  EXPECT_EQ(f->samples[1].server, 0);
  EXPECT_EQ(f->samples[1].request_bytes, 1000000u);
  EXPECT_EQ(f->samples[1].response_bytes, 100u);
  EXPECT_EQ(f->samples[1].rtt_ns, 9000000);
  EXPECT_EQ(f->summary.issued, 3u);
  EXPECT_EQ(f->summary.failed, 1u);
  EXPECT_EQ(f->summary.cpu_ns, 12345);
}

TEST(ClusterSamplesTest, SampleLineFormat) {
  EXPECT_EQ(Line({1, 2, 3, 4, 5}), "s 1 2 3 4 5\n");
}

TEST(ClusterSamplesTest, MissingEndIsAnError) {
  std::string text = GoodFile();
  text = text.substr(0, text.find("end "));
  EXPECT_THAT(ParseError(text), HasSubstr("no 'end' line"));
}

TEST(ClusterSamplesTest, WrongVersion) {
  std::string text = GoodFile();
  text[text.find(" 1\n")] = '_';  // "wharf-cluster-samples_1"
  EXPECT_THAT(ParseError(text), HasSubstr("h1.samples:1: expected 'wharf-cluster-samples 1'"));
}

TEST(ClusterSamplesTest, MissingHeaderKey) {
  std::string text = GoodFile();
  size_t at = text.find("seed 7\n");
  text.erase(at, 7);
  EXPECT_THAT(ParseError(text), HasSubstr("header key 'seed' missing"));
}

TEST(ClusterSamplesTest, BadSampleLine) {
  std::string text = GoodFile();
  size_t at = text.find("s 10 2 64 64 48211");
  text.replace(at, 18, "s 10 2 64 64");
  EXPECT_THAT(ParseError(text), HasSubstr("h1.samples:11: expected 5 numbers"));
}

TEST(ClusterSamplesTest, NegativeRttRefused) {
  std::string text = GoodFile();
  size_t at = text.find("48211");
  text.replace(at, 5, "-5");
  EXPECT_THAT(ParseError(text), HasSubstr("h1.samples:11:"));
}

TEST(ClusterSamplesTest, CompletedMustMatchSampleLines) {
  std::string text = FormatClusterSampleHeader(Header()) + Line({10, 2, 64, 64, 48211}) +
                     FormatClusterSampleSummary({.issued = 3, .completed = 2, .cpu_ns = -1});
  EXPECT_THAT(ParseError(text), HasSubstr("1 sample lines but 'end' says completed 2"));
}

TEST(ClusterSamplesTest, TextAfterEnd) {
  EXPECT_THAT(ParseError(GoodFile() + "s 1 1 1 1 1\n"), HasSubstr("after the 'end' line"));
}

}  // namespace
}  // namespace wharf::tools::bench
