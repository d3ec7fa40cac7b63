// Tests for `wharf bench throughput`'s flags-to-plan step: defaults, the
// series (wharf per mode, baselines once), and every refusal naming its flag.
#include "bench/throughput_plan.h"

#include <gtest/gtest.h>

namespace wharf::bench {
namespace {

std::vector<std::string> Labels(const std::vector<ThroughputSeriesSpec>& series) {
  std::vector<std::string> out;
  for (const auto& s : series) out.push_back(s.label);
  return out;
}

TEST(ThroughputPlanTest, DefaultsAreTheIssue12Run) {
  ThroughputOptions o;
  o.no_pin = true;  // the test machine may have one CPU
  Result<ThroughputPlan> plan = PlanThroughput(o);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->paths, (std::vector<std::string>{"loopback", "veth"}));
  EXPECT_EQ(plan->mtu, 1500);
  EXPECT_EQ(Labels(plan->series),
            (std::vector<std::string>{"homa embedded", "homa managed", "tcp embedded",
                                      "tcp managed", "grpc", "grpc-sync"}));
  EXPECT_EQ(plan->size, 64u);
  EXPECT_EQ(plan->in_flight, (std::vector<int>{1, 32, 256}));
  EXPECT_EQ(plan->rounds, 3);
  EXPECT_EQ(plan->duration_ns, 2 * kNsPerSec);
  EXPECT_EQ(plan->warmup_ns, 500 * kNsPerMs);
  EXPECT_TRUE(plan->rpc);
  EXPECT_TRUE(plan->goodput);
  EXPECT_EQ(plan->goodput_bytes, 1u << 20);
  EXPECT_EQ(plan->goodput_in_flight, (std::vector<int>{4}));
  EXPECT_EQ(plan->goodput_seconds, 3);
  EXPECT_FALSE(plan->pin.pin);
  EXPECT_EQ(plan->pin.client_cpu, -1);
}

TEST(ThroughputPlanTest, SeriesRunWharfPerModeAndBaselinesOnce) {
  const auto series = ThroughputSeriesFor({"grpc", "homa", "kernel-udp", "homa", "grpc"},
                                          {"managed", "embedded"});
  EXPECT_EQ(Labels(series), (std::vector<std::string>{"grpc", "homa managed", "homa embedded",
                                                      "kernel-udp"}));
  EXPECT_TRUE(series[1].managed);
  EXPECT_TRUE(series[1].wharf);
  EXPECT_FALSE(series[0].wharf);
  EXPECT_EQ(series[3].mode, "embedded");
  EXPECT_FALSE(HasGoodputRows(series[0]));
  EXPECT_TRUE(HasGoodputRows(series[3]));
  const auto sync = ThroughputSeriesFor({"grpc-sync"}, {"managed"});
  ASSERT_EQ(Labels(sync), (std::vector<std::string>{"grpc-sync"}));
  EXPECT_FALSE(sync[0].wharf);
  EXPECT_FALSE(HasGoodputRows(sync[0]));
}

TEST(ThroughputPlanTest, ParsesSizesDurationsAndSkips) {
  ThroughputOptions o;
  o.paths = {"loopback", "loopback"};
  o.size = "1KiB";
  o.in_flight = {1, 4};
  o.duration = "300ms";
  o.goodput_size = "65536";
  o.no_rpc = true;
  o.no_pin = true;
  Result<ThroughputPlan> plan = PlanThroughput(o);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->paths, std::vector<std::string>{"loopback"});
  EXPECT_FALSE(plan->rpc);
  EXPECT_EQ(plan->goodput_bytes, 65536u);
}

TEST(ThroughputPlanTest, RefusesBadFlagsNamingThem) {
  struct Case {
    const char* flag;
    void (*change)(ThroughputOptions&);
  };
  const Case cases[] = {
      {"--path", [](ThroughputOptions& o) { o.paths = {"wifi"}; }},
      {"--path", [](ThroughputOptions& o) { o.paths = {}; }},
      {"--mtu", [](ThroughputOptions& o) { o.mtu = 100; }},
      {"--proto", [](ThroughputOptions& o) { o.protos = {"quic"}; }},
      {"--proto", [](ThroughputOptions& o) { o.protos = {}; }},
      {"--mode", [](ThroughputOptions& o) { o.modes = {"remote"}; }},
      {"--mode", [](ThroughputOptions& o) { o.modes = {}; }},
      {"--size", [](ThroughputOptions& o) { o.size = "0"; }},
      {"--size", [](ThroughputOptions& o) { o.size = "lots"; }},
      {"--in-flight", [](ThroughputOptions& o) { o.in_flight = {}; }},
      {"--in-flight", [](ThroughputOptions& o) { o.in_flight = {0}; }},
      {"--duration", [](ThroughputOptions& o) { o.duration = "10ms"; }},
      {"--warmup", [](ThroughputOptions& o) { o.warmup = "soon"; }},
      {"--goodput-size", [](ThroughputOptions& o) { o.goodput_size = "1GiB"; }},
      {"--goodput-in-flight", [](ThroughputOptions& o) { o.goodput_in_flight = {}; }},
      {"--goodput-seconds", [](ThroughputOptions& o) { o.goodput_seconds = 0; }},
      {"--rounds", [](ThroughputOptions& o) { o.rounds = 0; }},
      {"--rounds", [](ThroughputOptions& o) { o.rounds = 21; }},
      {"--no-rpc", [](ThroughputOptions& o) { o.no_rpc = o.no_goodput = true; }},
      {"--set", [](ThroughputOptions& o) { o.settings = {"=1"}; }},
  };
  for (const Case& c : cases) {
    ThroughputOptions o;
    c.change(o);
    Result<ThroughputPlan> plan = PlanThroughput(o);
    ASSERT_FALSE(plan.ok()) << c.flag;
    EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument) << c.flag;
    EXPECT_NE(plan.status().message().find(c.flag), std::string::npos) << plan.status();
  }
}

}  // namespace
}  // namespace wharf::bench
