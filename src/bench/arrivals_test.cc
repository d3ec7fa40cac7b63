// Tests for the Poisson arrivals: the rate formula on hand-computed configs,
// the gaps' mean and coefficient of variation, the offered load the
// schedule implies, server choice and determinism.
#include "bench/arrivals.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace wharf::bench {
namespace {

using ::testing::HasSubstr;

ArrivalConfig TenHosts() {
  ArrivalConfig c;
  c.load = 0.8;
  c.link_bps = 25'000'000'000;
  c.hosts = 10;
  c.client_threads = 3;
  return c;
}

TEST(ArrivalRatesTest, EchoedResponsesEveryHostBoth) {
  // 1000 B requests echoed: 2000 B per RPC on each host's uplink. 80% of
  // 25 Gbps is 2.5e9 B/s, so 1.25M RPC/s per host, 416,667 per thread.
  Result<ArrivalRates> r = ComputeArrivalRates(TenHosts(), Workload::Fixed(1000));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_DOUBLE_EQ(r->busiest_link_bytes_per_rpc, 2000);
  EXPECT_DOUBLE_EQ(r->rpcs_per_sec_per_host, 1.25e6);
  EXPECT_DOUBLE_EQ(r->rpcs_per_sec_per_thread, 1.25e6 / 3);
  EXPECT_DOUBLE_EQ(r->mean_gap_ns, 2400);
}

TEST(ArrivalRatesTest, FixedResponsesAndOverhead) {
  ArrivalConfig c = TenHosts();
  c.response = ResponseSize::kFixed;
  c.fixed_response_bytes = 100;
  c.overhead_bytes_per_message = 50;
  Result<ArrivalRates> r = ComputeArrivalRates(c, Workload::Fixed(1000));
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->mean_request_bytes, 1050);
  EXPECT_DOUBLE_EQ(r->mean_response_bytes, 150);
  EXPECT_DOUBLE_EQ(r->rpcs_per_sec_per_host, 2.5e9 / 1200);
}

TEST(ArrivalRatesTest, SeparateServersLoadTheBusiestLink) {
  ArrivalConfig c = TenHosts();
  c.servers = 2;  // 8 clients into 2 servers: a server downlink carries 4x a client's requests
  Result<ArrivalRates> r = ComputeArrivalRates(c, Workload::Fixed(1000));
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->busiest_link_bytes_per_rpc, 4000);
  c.servers = 5;  // 5 into 5: each link carries one direction of one host's traffic
  r = ComputeArrivalRates(c, Workload::Fixed(1000));
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->busiest_link_bytes_per_rpc, 1000);
}

TEST(ArrivalRatesTest, UsesTheTruncatedMean) {
  Result<Workload> w4 = Workload::FromSpec("w4", DefaultWorkloadDir());
  ASSERT_TRUE(w4.ok());
  Result<ArrivalRates> r =
      ComputeArrivalRates(TenHosts(), w4->Truncated(kHomaTruncationBytes));
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR(r->mean_request_bytes, 60175.1, 0.05);
}

TEST(ArrivalRatesTest, RejectsBadConfigs) {
  auto error = [](ArrivalConfig c, uint64_t bytes = 1000) {
    Result<ArrivalRates> r = ComputeArrivalRates(c, Workload::Fixed(bytes));
    return r.ok() ? std::string("ok") : r.status().ToString();
  };
  ArrivalConfig c = TenHosts();
  c.load = 0;
  EXPECT_THAT(error(c), HasSubstr("arrivals: load: expected"));
  c.load = std::nan("");
  EXPECT_THAT(error(c), HasSubstr("arrivals: load: expected"));
  c = TenHosts();
  c.link_bps = 0;
  EXPECT_THAT(error(c), HasSubstr("link_bps"));
  c = TenHosts();
  c.hosts = 1;
  EXPECT_THAT(error(c), HasSubstr("hosts: expected >= 2, got 1"));
  c = TenHosts();
  c.client_threads = 0;
  EXPECT_THAT(error(c), HasSubstr("client_threads"));
  c = TenHosts();
  c.servers = 10;
  EXPECT_THAT(error(c), HasSubstr("servers"));
  EXPECT_THAT(error(TenHosts(), 0), HasSubstr("a mean of 0 bytes"));
  Workload w = Workload::Fixed(1000);
  EXPECT_FALSE(ArrivalGenerator::Create(TenHosts(), w, 10, 0, 1).ok());
  EXPECT_FALSE(ArrivalGenerator::Create(TenHosts(), w, 0, 3, 1).ok());
  c = TenHosts();
  c.servers = 2;
  EXPECT_FALSE(ArrivalGenerator::Create(c, w, 8, 0, 1).ok());  // host 8 only serves
}

// 100k gaps: the mean within 2% of the formula's, and the coefficient of
// variation (1 for an exponential) within 0.03 of 1; send times are the
// running sum of the gaps.
TEST(ArrivalGeneratorTest, ExponentialGaps) {
  Workload w = Workload::Fixed(1000);
  Result<ArrivalGenerator> g = ArrivalGenerator::Create(TenHosts(), w, 3, 1, 42);
  ASSERT_TRUE(g.ok());
  constexpr int kGaps = 100000;
  double sum = 0;
  double sum_sq = 0;
  DurationNs last = 0;
  for (int i = 0; i < kGaps; ++i) {
    Arrival a = g->Next();
    ASSERT_GE(a.send_offset_ns, last);
    const auto gap = static_cast<double>(a.send_offset_ns - last);
    last = a.send_offset_ns;
    sum += gap;
    sum_sq += gap * gap;
  }
  const double mean = sum / kGaps;
  const double sd = std::sqrt(sum_sq / kGaps - mean * mean);
  EXPECT_NEAR(mean / g->rates().mean_gap_ns, 1.0, 0.02);
  EXPECT_NEAR(sd / mean, 1.0, 0.03);
}

// The load the schedule offers, measured the way a link would see it: every
// host's threads run one generator each for a simulated second, and each
// host's uplink carries its requests and the responses to the requests it
// serves. W5 cut at 1 MB (cv 1.14) at 100 Gbps gives about 16k messages per
// uplink: each within 6% of the target (about 5 standard errors), the
// average within 2%.
TEST(ArrivalGeneratorTest, OfferedLoadMatchesTarget) {
  Result<Workload> w5 = Workload::FromSpec("w5", DefaultWorkloadDir());
  ASSERT_TRUE(w5.ok());
  const Workload w = w5->Truncated(kHomaTruncationBytes);
  ArrivalConfig c = TenHosts();
  c.load = 0.5;
  c.link_bps = 100'000'000'000;
  constexpr DurationNs kRunNs = kNsPerSec;
  std::vector<double> uplink_bytes(c.hosts, 0);
  for (int host = 0; host < c.hosts; ++host) {
    for (int thread = 0; thread < c.client_threads; ++thread) {
      Result<ArrivalGenerator> g = ArrivalGenerator::Create(c, w, host, thread, 9);
      ASSERT_TRUE(g.ok());
      for (Arrival a = g->Next(); a.send_offset_ns < kRunNs; a = g->Next()) {
        ASSERT_NE(a.server, host);
        ASSERT_EQ(a.response_bytes, a.request_bytes);
        uplink_bytes[host] += static_cast<double>(a.request_bytes);
        uplink_bytes[a.server] += static_cast<double>(a.response_bytes);
      }
    }
  }
  const double link_bytes = static_cast<double>(c.link_bps) / 8 * kRunNs / kNsPerSec;
  double total = 0;
  for (double bytes : uplink_bytes) {
    total += bytes;
    EXPECT_NEAR(bytes / link_bytes / c.load, 1.0, 0.06);
  }
  EXPECT_NEAR(total / c.hosts / link_bytes / c.load, 1.0, 0.02);
}

TEST(ArrivalGeneratorTest, ServersUniformAmongOthers) {
  Workload w = Workload::Fixed(100);
  Result<ArrivalGenerator> g = ArrivalGenerator::Create(TenHosts(), w, 4, 0, 5);
  ASSERT_TRUE(g.ok());
  std::vector<int> hits(10, 0);
  constexpr int kRpcs = 90000;
  for (int i = 0; i < kRpcs; ++i) ++hits[g->Next().server];
  EXPECT_EQ(hits[4], 0);
  for (int host = 0; host < 10; ++host) {
    if (host == 4) continue;
    EXPECT_NEAR(hits[host], kRpcs / 9, 400) << host;  // about 4 sd
  }
  ArrivalConfig c = TenHosts();
  c.servers = 3;
  Result<ArrivalGenerator> split = ArrivalGenerator::Create(c, w, 0, 0, 5);
  ASSERT_TRUE(split.ok());
  for (int i = 0; i < 1000; ++i) {
    const int server = split->Next().server;
    ASSERT_GE(server, 7);
    ASSERT_LT(server, 10);
  }
}

TEST(ArrivalGeneratorTest, FixedResponses) {
  ArrivalConfig c = TenHosts();
  c.response = ResponseSize::kFixed;
  c.fixed_response_bytes = 100;
  Workload w = Workload::Fixed(5000);
  Result<ArrivalGenerator> g = ArrivalGenerator::Create(c, w, 0, 0, 5);
  ASSERT_TRUE(g.ok());
  Arrival a = g->Next();
  EXPECT_EQ(a.request_bytes, 5000u);
  EXPECT_EQ(a.response_bytes, 100u);
}

TEST(ArrivalGeneratorTest, DeterministicPerThreadStreams) {
  Result<Workload> w3 = Workload::FromSpec("w3", DefaultWorkloadDir());
  ASSERT_TRUE(w3.ok());
  auto run = [&](int host, int thread, uint64_t seed) {
    Result<ArrivalGenerator> g = ArrivalGenerator::Create(TenHosts(), *w3, host, thread, seed);
    std::vector<uint64_t> out;
    for (int i = 0; i < 100; ++i) {
      Arrival a = g->Next();
      out.push_back(static_cast<uint64_t>(a.send_offset_ns));
      out.push_back(a.request_bytes);
      out.push_back(static_cast<uint64_t>(a.server));
    }
    return out;
  };
  EXPECT_EQ(run(1, 2, 77), run(1, 2, 77));
  EXPECT_NE(run(1, 2, 77), run(1, 1, 77));
  EXPECT_NE(run(1, 2, 77), run(2, 2, 77));
  EXPECT_NE(run(1, 2, 77), run(1, 2, 78));
}

}  // namespace
}  // namespace wharf::bench
