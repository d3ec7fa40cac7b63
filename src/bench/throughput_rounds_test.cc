// Tests for `wharf bench throughput --rounds`: each row is its median
// round, ratios are the median of each round's own ratio (so a round where
// the whole machine ran slow moves a row and its baseline together), iperf3
// is its median run, and the table and JSON show the rounds.
#include "bench/throughput_rounds.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "bench/throughput_test_support.h"

namespace wharf::bench {
namespace {

// A row whose P50 tells which round a merged row came from.
ThroughputRow Row(const std::string& proto, const std::string& label, int in_flight,
                  double rpc_per_sec, uint64_t bytes = 64) {
  ThroughputRow r = testing::Row(proto, label, in_flight, rpc_per_sec, bytes);
  r.p50_us = rpc_per_sec / 1000;
  return r;
}

// A round: gRPC at `grpc`, homa at `homa` RPC/s (32 in flight), a 1 MiB
// goodput row at `bulk` RPC/s and iperf3 at `iperf3_gbit`.
ThroughputPathResult Round(double grpc, double homa, double bulk, double iperf3_gbit) {
  ThroughputPathResult r{.path = "veth", .description = "a -> b"};
  r.rpc = {Row("grpc", "grpc", 32, grpc), Row("homa", "homa managed", 32, homa)};
  r.goodput = {Row("homa", "homa managed", 4, bulk, 1 << 20)};
  Iperf3Result i;
  i.received_bits_per_second = iperf3_gbit * 1e9;
  i.seconds = 3;
  r.iperf3 = i;
  return r;
}

TEST(ThroughputRoundsTest, MedianTakesTheLowerMiddleAndIgnoresOrder) {
  EXPECT_EQ(Median({}), -1);
  EXPECT_EQ(Median({3}), 3);
  EXPECT_EQ(Median({9, 1, 5}), 5);
  EXPECT_EQ(Median({4, 1, 3, 2}), 2);
}

TEST(ThroughputRoundsTest, RowsAreTheirMedianRoundAndRatiosTheMedianOfEachRoundsRatio) {
  ThroughputPathResult path{.path = "veth", .description = "a -> b"};
  // Round 2 ran on a slow machine: everything at 60%. The row's median is
  // round 3's 700k; every round's ratio is 10-10.3x whatever the machine
  // did, and their median (round 3's, 700k / 69k) is the row's ratio.
  path.rounds = {Round(70'000, 720'000, 5000, 20), Round(42'000, 420'000, 3000, 12),
                 Round(69'000, 700'000, 5100, 21)};
  MergeRounds(path);
  ASSERT_EQ(path.rpc.size(), 2u);
  EXPECT_EQ(path.rpc[1].label, "homa managed");
  EXPECT_DOUBLE_EQ(path.rpc[1].rpc_per_sec, 700'000);
  EXPECT_DOUBLE_EQ(path.rpc[1].p50_us, 700) << "the whole row comes from its median round";
  EXPECT_DOUBLE_EQ(path.rpc[0].rpc_per_sec, 69'000);
  const std::vector<double> ratios = RpcRatioRounds(path, path.rpc[1]);
  ASSERT_EQ(ratios.size(), 3u);
  EXPECT_NEAR(ratios[0], 720.0 / 70, 1e-9);
  EXPECT_NEAR(ratios[1], 10.0, 1e-9);
  EXPECT_NEAR(ratios[2], 700.0 / 69, 1e-9);
  EXPECT_NEAR(RpcRatio(path, path.rpc[1]), 700.0 / 69, 1e-9);

  ASSERT_EQ(path.goodput.size(), 1u);
  EXPECT_DOUBLE_EQ(path.goodput[0].rpc_per_sec, 5000);
  ASSERT_TRUE(path.iperf3.has_value());
  EXPECT_DOUBLE_EQ(path.iperf3->received_bits_per_second, 20e9);
  // Each round's goodput over its own iperf3: 5000 x 8 Mibit over 20 Gbit/s...
  const double mibit = 8.0 * (1 << 20);
  const std::vector<double> g = GoodputRatioRounds(path, path.goodput[0]);
  ASSERT_EQ(g.size(), 3u);
  EXPECT_NEAR(g[1], 3000 * mibit / 12e9, 1e-9);
  EXPECT_NEAR(GoodputRatio(path, path.goodput[0]), 5000 * mibit / 20e9, 1e-9);
}

TEST(ThroughputRoundsTest, ARowMissingFromARoundUsesTheRoundsThatHaveIt) {
  ThroughputPathResult path{.path = "loopback", .description = "lo"};
  path.rounds = {Round(70'000, 720'000, 5000, 20), Round(70'000, 700'000, 5000, 20)};
  path.rounds[1].rpc.pop_back();  // homa managed failed in round 2
  path.rounds[1].errors = {"homa managed: node exited 1"};
  path.rounds[0].iperf3.reset();
  path.rounds[0].iperf3_error = "iperf3 not installed";
  MergeRounds(path);
  ASSERT_EQ(path.rpc.size(), 2u);
  EXPECT_DOUBLE_EQ(path.rpc[1].rpc_per_sec, 720'000);
  EXPECT_EQ(RpcRatioRounds(path, path.rpc[1]).size(), 1u);
  EXPECT_EQ(path.errors, std::vector<std::string>{"homa managed: node exited 1"});
  ASSERT_TRUE(path.iperf3.has_value()) << "measured in round 2";
  EXPECT_TRUE(path.iperf3_error.empty());
}

TEST(ThroughputRoundsTest, TableAndJsonShowTheRounds) {
  ThroughputReport report;
  report.plan.rounds = 3;
  ThroughputPathResult path{.path = "veth", .description = "a -> b"};
  path.rounds = {Round(70'000, 720'000, 5000, 20), Round(42'000, 420'000, 3000, 12),
                 Round(69'000, 700'000, 5100, 21)};
  MergeRounds(path);
  report.paths.push_back(path);
  const std::string table = FormatThroughputReport(report);
  EXPECT_NE(table.find("median of 3 rounds"), std::string::npos) << table;
  EXPECT_NE(table.find("vs grpc range"), std::string::npos) << table;
  EXPECT_NE(table.find("10.14x"), std::string::npos) << table;
  EXPECT_NE(table.find("10.00-10.29x"), std::string::npos) << table;
  EXPECT_NE(table.find("10x met"), std::string::npos) << table;

  const nlohmann::json doc = nlohmann::json::parse(ThroughputReportJson(report));
  EXPECT_EQ(doc["plan"]["rounds"], 3);
  const nlohmann::json& p = doc["paths"][0];
  EXPECT_EQ(p["rounds"].size(), 3u);
  EXPECT_EQ(p["rounds"][1]["rpc"][1]["rpc_per_sec"], 420'000.0);
  EXPECT_EQ(p["rpc"][1]["vs_grpc"]["rounds"].size(), 3u);
  EXPECT_NEAR(p["rpc"][1]["vs_grpc"]["ratio"].get<double>(), 700.0 / 69, 1e-9);
  EXPECT_EQ(p["rpc"][1]["vs_grpc"]["met"], true);
}

TEST(ThroughputRoundsTest, OneRoundLooksAsBefore) {
  ThroughputReport report;
  ThroughputPathResult path = Round(70'000, 720'000, 5000, 20);
  MergeRounds(path);  // no rounds: nothing changes
  EXPECT_EQ(path.rpc.size(), 2u);
  report.paths.push_back(path);
  const std::string table = FormatThroughputReport(report);
  EXPECT_EQ(table.find("rounds"), std::string::npos) << table;
  EXPECT_EQ(table.find("range"), std::string::npos) << table;
  const nlohmann::json doc = nlohmann::json::parse(ThroughputReportJson(report));
  EXPECT_FALSE(doc["paths"][0]["rpc"][1]["vs_grpc"].contains("rounds"));
}

}  // namespace
}  // namespace wharf::bench
