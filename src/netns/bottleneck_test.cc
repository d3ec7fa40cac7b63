// Tests for the pure parts of the bottleneck: tc rate parsing and
// formatting, tbf sizing, and reading `tc -s` counters. (Installing tbfs on
// a real cluster and the rate they hold are tested in
// tests/netns/bench_cluster_test.cc, which needs root.)
#include "netns/bottleneck.h"

#include <gtest/gtest.h>

namespace wharf::netns {
namespace {

TEST(ParseRateTest, ReadsTcUnits) {
  EXPECT_EQ(ParseRateBitsPerSecond("1gbit").value_or(-1), 1'000'000'000);
  EXPECT_EQ(ParseRateBitsPerSecond("200Mbit").value_or(-1), 200'000'000);
  EXPECT_EQ(ParseRateBitsPerSecond("2.5gbit").value_or(-1), 2'500'000'000);
  EXPECT_EQ(ParseRateBitsPerSecond("64kbit").value_or(-1), 64'000);
  EXPECT_EQ(ParseRateBitsPerSecond("1500").value_or(-1), 1500);
  EXPECT_EQ(ParseRateBitsPerSecond("1500bit").value_or(-1), 1500);
}

TEST(ParseRateTest, RejectsGarbageWithTheText) {
  for (const char* bad : {"", "gbit", "1 gbit", "1gigabit", "-1gbit", "1..2mbit", "1e99tbit"}) {
    Result<int64_t> parsed = ParseRateBitsPerSecond(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(parsed.status().message().find(std::string("'") + bad + "'"), std::string::npos);
  }
}

TEST(ParseRateTest, RefusesAmbiguousBpsUnits) {
  Result<int64_t> parsed = ParseRateBitsPerSecond("1Gbps");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("ambiguous"), std::string::npos) << parsed.status();
}

TEST(FormatRateTest, ShortestExactSpellingRoundTrips) {
  EXPECT_EQ(FormatRate(1'000'000'000), "1gbit");
  EXPECT_EQ(FormatRate(200'000'000), "200mbit");
  EXPECT_EQ(FormatRate(2'500'000'000), "2500mbit");
  EXPECT_EQ(FormatRate(1234), "1234bit");
  for (int64_t rate : {int64_t{1234}, int64_t{250'000}, int64_t{2'500'000'000}}) {
    EXPECT_EQ(ParseRateBitsPerSecond(FormatRate(rate)).value_or(-1), rate);
  }
}

TEST(TbfForRateTest, BurstIsOneMillisecondButAtLeast64KiB) {
  EXPECT_EQ(TbfBurstBytes(200'000'000), 64 * 1024) << "1 ms is 25 kB: the floor wins";
  EXPECT_EQ(TbfBurstBytes(1'000'000'000), 125'000);
  EXPECT_EQ(TbfBurstBytes(10'000'000'000), 1'250'000);
  const TbfOptions tbf = TbfForRate(1'000'000'000);
  EXPECT_EQ(tbf.burst, "125000b");
  EXPECT_EQ(tbf.latency, "5ms");
}

TEST(ParseTcQdiscStatsTest, ReadsCountersAndScaledBacklog) {
  QueueStats stats;
  ASSERT_TRUE(ParseTcQdiscStats(
                  "qdisc tbf 8001: root refcnt 2 rate 200Mbit burst 64Kb lat 5ms \n"
                  " Sent 250123456 bytes 170000 pkt (dropped 12, overlimits 3456 requeues 0) \n"
                  " backlog 31Kb 21p requeues 0\n",
                  stats)
                  .ok());
  EXPECT_EQ(stats.sent_bytes, 250123456);
  EXPECT_EQ(stats.sent_packets, 170000);
  EXPECT_EQ(stats.dropped_packets, 12);
  EXPECT_EQ(stats.overlimits, 3456);
  EXPECT_EQ(stats.backlog_bytes, 31 * 1024);
  EXPECT_EQ(stats.backlog_packets, 21);

  ASSERT_TRUE(ParseTcQdiscStats(" Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0)\n"
                                " backlog 0b 0p requeues 0\n",
                                stats)
                  .ok());
  EXPECT_EQ(stats.sent_bytes, 0);
  EXPECT_EQ(stats.backlog_bytes, 0);
}

TEST(ParseTcQdiscStatsTest, NoSentLineIsAnError) {
  QueueStats stats;
  EXPECT_EQ(ParseTcQdiscStats("Cannot find device \"eth9\"\n", stats).code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace wharf::netns
