// Tests for `wharf bench throughput`'s report: ratios against the gRPC row
// of the same in-flight count and against iperf3, issue 12's targets, the
// units (Gbit/s of payload, CPU per MiB), the table and the JSON.
#include "bench/throughput_report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "bench/throughput_test_support.h"

namespace wharf::bench {
namespace {

using testing::Row;

ThroughputPathResult Path() {
  ThroughputPathResult p{.path = "veth", .description = "a -> b"};
  p.rpc = {Row("grpc", "grpc", 32, 10'000), Row("grpc", "grpc", 256, 20'000),
           Row("homa", "homa embedded", 32, 150'000), Row("homa", "homa embedded", 256, 150'000),
           Row("tcp", "tcp embedded", 32, 40'000), Row("homa", "homa embedded", 1, 5'000),
           Row("grpc-sync", "grpc sync", 32, 5'000)};
  ThroughputRow g = Row("homa", "homa embedded", 4, 1000, 1 << 20);  // 8.39 Gbit/s
  g.total_cpu_ns = 2'000'000'000;                                    // 2 s for 1000 MiB
  p.goodput = {g, Row("tcp", "tcp embedded", 4, 500, 1 << 20)};
  Iperf3Result iperf3;
  iperf3.received_bits_per_second = 1000.0 * (1 << 20) * 8 / 2;  // half of homa's
  iperf3.seconds = 2;
  iperf3.client_cpu_percent = 50;
  iperf3.server_cpu_percent = 50;  // 2 s of CPU for 1000 MiB
  p.iperf3 = iperf3;
  return p;
}

TEST(ThroughputReportTest, RpcRatioIsAgainstGrpcAtTheSameInFlight) {
  const ThroughputPathResult p = Path();
  EXPECT_DOUBLE_EQ(RpcRatio(p, p.rpc[2]), 15.0);
  EXPECT_DOUBLE_EQ(RpcRatio(p, p.rpc[3]), 7.5);
  EXPECT_DOUBLE_EQ(RpcRatio(p, p.rpc[4]), 4.0);
  EXPECT_DOUBLE_EQ(RpcRatio(p, p.rpc[0]), 1.0);
  EXPECT_EQ(RpcRatio(p, p.rpc[5]), -1) << "no grpc row at 1 in flight";
  // The synchronous server's rows are a second baseline, never the first.
  EXPECT_DOUBLE_EQ(RpcRatio(p, p.rpc[2], "grpc-sync"), 30.0);
  EXPECT_EQ(RpcRatio(p, p.rpc[3], "grpc-sync"), -1) << "no grpc-sync row at 256";
  EXPECT_DOUBLE_EQ(RpcRatio(p, p.rpc[6]), 0.5);
  EXPECT_EQ(RpcTarget(p.rpc[2]), 10);
  EXPECT_EQ(RpcTarget(p.rpc[4]), 5);
  EXPECT_EQ(RpcTarget(p.rpc[5]), 0) << "the issue sets targets at 32 and 256";
  EXPECT_EQ(RpcTarget(p.rpc[0]), 0);
}

TEST(ThroughputReportTest, GoodputIsPayloadBitsAgainstIperf3) {
  const ThroughputPathResult p = Path();
  EXPECT_DOUBLE_EQ(GoodputBitsPerSecond(p.goodput[0]), 1000.0 * (1 << 20) * 8);
  EXPECT_DOUBLE_EQ(GoodputRatio(p, p.goodput[0]), 2.0);
  EXPECT_DOUBLE_EQ(GoodputRatio(p, p.goodput[1]), 1.0);
  EXPECT_DOUBLE_EQ(CpuMsPerMiB(p.goodput[0]), 2.0);
  EXPECT_EQ(CpuMsPerMiB(p.goodput[1]), -1) << "CPU unknown";
  EXPECT_DOUBLE_EQ(Iperf3CpuMsPerMiB(*p.iperf3), 2.0);
  EXPECT_EQ(GoodputTarget("veth", p.goodput[0]), 1.0);
  EXPECT_EQ(GoodputTarget("veth", p.goodput[1]), 0.8);
  EXPECT_EQ(GoodputTarget("loopback", p.goodput[1]), 2.0);
  ThroughputPathResult no_iperf3 = p;
  no_iperf3.iperf3.reset();
  EXPECT_EQ(GoodputRatio(no_iperf3, p.goodput[0]), -1);
}

TEST(ThroughputReportTest, TableShowsRatiosAndTargets) {
  ThroughputReport report;
  report.plan.pin = {.pin = true, .client_cpu = 0, .server_cpu = 1, .note = ""};
  report.paths = {Path()};
  report.paths[0].errors = {"tcp managed: boom"};
  const std::string text = FormatThroughputReport(report);
  EXPECT_NE(text.find("path veth: a -> b; client side on CPU 0, server side on CPU 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("15.00x"), std::string::npos) << text;
  EXPECT_NE(text.find("10x met"), std::string::npos) << text;
  EXPECT_NE(text.find("10x MISSED"), std::string::npos) << text;  // 7.5x at 256
  EXPECT_NE(text.find("5x MISSED"), std::string::npos) << text;   // 4x
  EXPECT_NE(text.find("iperf3 (1 TCP)"), std::string::npos) << text;
  EXPECT_NE(text.find("1x met"), std::string::npos) << text;  // homa 2x iperf3 on veth
  EXPECT_NE(text.find("0.8x met"), std::string::npos) << text;
  EXPECT_NE(text.find("FAILED: tcp managed: boom"), std::string::npos) << text;
}

TEST(ThroughputReportTest, JsonHoldsRowsRatiosAndIperf3) {
  ThroughputReport report;
  report.plan.paths = {"veth"};
  report.paths = {Path()};
  const nlohmann::json doc = nlohmann::json::parse(ThroughputReportJson(report));
  ASSERT_EQ(doc["paths"].size(), 1u);
  const nlohmann::json& p = doc["paths"][0];
  EXPECT_EQ(p["path"], "veth");
  ASSERT_EQ(p["rpc"].size(), 7u);
  EXPECT_DOUBLE_EQ(p["rpc"][2]["vs_grpc"]["ratio"].get<double>(), 15.0);
  EXPECT_EQ(p["rpc"][2]["vs_grpc"]["target"], 10);
  EXPECT_EQ(p["rpc"][2]["vs_grpc"]["met"], true);
  EXPECT_TRUE(p["rpc"][5]["vs_grpc"]["ratio"].is_null());
  EXPECT_DOUBLE_EQ(p["rpc"][2]["vs_grpc_sync"]["ratio"].get<double>(), 30.0);
  EXPECT_FALSE(p["rpc"][2]["vs_grpc_sync"].contains("target"));
  EXPECT_DOUBLE_EQ(p["goodput"][0]["vs_iperf3"]["ratio"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(p["goodput"][0]["cpu_ms_per_mib"].get<double>(), 2.0);
  EXPECT_GT(p["goodput"][0]["goodput_bits_per_second"].get<double>(), 8e9);
  EXPECT_DOUBLE_EQ(p["iperf3"]["cpu_ms_per_mib"].get<double>(), 2.0);
  EXPECT_EQ(doc["plan"]["paths"][0], "veth");
}

TEST(ThroughputReportTest, CrossCpuProbesAreShownPerRoundAndKeptInJson) {
  ThroughputReport report;
  report.paths = {Path()};
  EXPECT_EQ(FormatThroughputReport(report).find("machine:"), std::string::npos);
  report.paths[0].cross_cpu_gbps = {262.4, 479.0, 471.2, 470.0};
  const std::string text = FormatThroughputReport(report);
  EXPECT_NE(text.find("machine: CPU-to-CPU copy, Gbit/s, before/after each round: 262/479, "
                      "471/470"),
            std::string::npos)
      << text;
  const nlohmann::json doc = nlohmann::json::parse(ThroughputReportJson(report));
  ASSERT_EQ(doc["paths"][0]["cross_cpu_copy_gbit_per_sec"].size(), 4u);
  EXPECT_DOUBLE_EQ(doc["paths"][0]["cross_cpu_copy_gbit_per_sec"][1].get<double>(), 479.0);
}

TEST(ThroughputReportTest, SwitchProbesAreShownPerRoundAndKeptInJson) {
  ThroughputReport report;
  report.paths = {Path()};
  EXPECT_EQ(FormatThroughputReport(report).find("process switch"), std::string::npos);
  report.paths[0].process_switch_us = {4.93, 5.51};
  const std::string text = FormatThroughputReport(report);
  EXPECT_NE(text.find("machine: process switch on the client CPU, us, before each round: 4.9, "
                      "5.5"),
            std::string::npos)
      << text;
  const nlohmann::json doc = nlohmann::json::parse(ThroughputReportJson(report));
  ASSERT_EQ(doc["paths"][0]["process_switch_us"].size(), 2u);
  EXPECT_DOUBLE_EQ(doc["paths"][0]["process_switch_us"][1].get<double>(), 5.51);
}

}  // namespace
}  // namespace wharf::bench
