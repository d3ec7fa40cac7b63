#include "bench/report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace wharf::bench {
namespace {

BaselineReport Sample() {
  BaselineReport report;
  report.iterations = 100'000;
  report.warmup = 1000;
  PingPongRow row;
  row.proto = "udp";
  row.mode = WaitMode::kBusyPoll;
  row.size_bytes = 64;
  row.address = "127.0.0.1";
  row.result.latency.count = 100'000;
  row.result.latency.p50_ns = 6'700;
  row.result.latency.p90_ns = 7'400;
  row.result.latency.p99_ns = 9'800;
  row.result.latency.p999_ns = 48'100;
  row.result.latency.max_ns = 210'300;
  row.result.latency.mean_ns = 7'000;
  row.result.latency.rate_per_sec = 140'000.4;
  row.result.pinning = PinPlan{true, 0, 1, ""};
  row.result.port = 40000;
  row.result.server_exit = "exit code 0";
  report.pingpong.push_back(row);
  Iperf3Result goodput;
  goodput.received_bits_per_second = 18.6e9;
  goodput.retransmits = 3;
  goodput.port = 5201;
  report.goodput = goodput;
  report.goodput_seconds = 5;
  return report;
}

TEST(ReportTest, WithThousands) {
  EXPECT_EQ(WithThousands(0), "0");
  EXPECT_EQ(WithThousands(999), "999");
  EXPECT_EQ(WithThousands(1000), "1,000");
  EXPECT_EQ(WithThousands(140000), "140,000");
  EXPECT_EQ(WithThousands(1234567), "1,234,567");
}

TEST(ReportTest, TableHasOneLinePerBaseline) {
  const std::string table = FormatTable(Sample());
  EXPECT_EQ(table.rfind("baseline ", 0), 0u) << table;
  EXPECT_NE(table.find("p99.9 us"), std::string::npos);
  EXPECT_NE(table.find("udp poll 64 B"), std::string::npos);
  EXPECT_NE(table.find("     6.7 "), std::string::npos) << table;
  EXPECT_NE(table.find("48.1"), std::string::npos);
  EXPECT_NE(table.find("140,000"), std::string::npos);
  EXPECT_NE(table.find("18.60 Gbit/s"), std::string::npos) << table;
  EXPECT_NE(table.find("client on CPU 0, server on CPU 1"), std::string::npos);
}

TEST(ReportTest, TableNotesAShortenedRun) {
  BaselineReport report = Sample();
  report.pingpong[0].result.hit_time_limit = true;
  report.pingpong[0].result.timeouts = 2;
  const std::string table = FormatTable(report);
  EXPECT_NE(table.find("stopped by the time limit"), std::string::npos) << table;
  EXPECT_NE(table.find("2 resent"), std::string::npos) << table;
}

TEST(ReportTest, JsonCarriesEveryNumber) {
  const auto doc = nlohmann::json::parse(FormatJson(Sample()));
  EXPECT_EQ(doc["tool"], "wharf bench baseline");
  ASSERT_EQ(doc["pingpong"].size(), 1u);
  const auto& row = doc["pingpong"][0];
  EXPECT_EQ(row["name"], "udp poll 64 B");
  EXPECT_EQ(row["mode"], "poll");
  EXPECT_EQ(row["count"], 100000);
  EXPECT_EQ(row["p50_ns"], 6700);
  EXPECT_EQ(row["p999_ns"], 48100);
  EXPECT_EQ(row["pinning"]["pinned"], true);
  EXPECT_EQ(row["pinning"]["server_cpu"], 1);
  EXPECT_DOUBLE_EQ(doc["goodput"]["received_bits_per_second"].get<double>(), 18.6e9);
  EXPECT_EQ(doc["goodput"]["retransmits"], 3);
}

TEST(ReportTest, JsonWithoutGoodput) {
  BaselineReport report = Sample();
  report.goodput.reset();
  const auto doc = nlohmann::json::parse(FormatJson(report));
  EXPECT_FALSE(doc.contains("goodput"));
}

TEST(ReportTest, WriteTextFileNamesThePathOnError) {
  Status s = WriteTextFile("/nonexistent-dir/x.json", "{}");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("/nonexistent-dir/x.json"), std::string::npos);
}

TEST(ReportTest, CpuPerRoundTripAndHostingNote) {
  BaselineReport report = Sample();
  report.pingpong[0].result.cpu_ns = 1'410'000'000;  // 14.1 us per round trip
  report.pingpong[0].result.cpu_processes = 2;
  PingPongRow managed = report.pingpong[0];
  managed.proto = "wharf-managed";
  managed.result.cpu_ns = -1;  // unknown: shown as "-", left out of the JSON
  managed.result.hosting_note = "wharfd on CPU 1 (sleeps: shares a CPU)";
  report.pingpong.push_back(managed);
  const std::string table = FormatTable(report);
  EXPECT_NE(table.find("CPU us/RT"), std::string::npos) << table;
  EXPECT_NE(table.find("140,000      14.1\n"), std::string::npos) << table;
  EXPECT_NE(table.find("140,000         -\n"), std::string::npos) << table;
  EXPECT_NE(table.find("note: wharf-managed poll 64 B: wharfd on CPU 1"), std::string::npos)
      << table;
  auto doc = nlohmann::json::parse(FormatJson(report));
  EXPECT_EQ(doc["pingpong"][0]["cpu_ns"], 1'410'000'000);
  EXPECT_DOUBLE_EQ(doc["pingpong"][0]["cpu_ns_per_round_trip"].get<double>(), 14'100);
  EXPECT_EQ(doc["pingpong"][0]["cpu_processes"], 2);
  EXPECT_FALSE(doc["pingpong"][1].contains("cpu_ns"));
  EXPECT_EQ(doc["pingpong"][1]["hosting"], "wharfd on CPU 1 (sleeps: shares a CPU)");
}

}  // namespace
}  // namespace wharf::bench
