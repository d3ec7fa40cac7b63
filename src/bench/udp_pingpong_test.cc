// Short real runs of the UDP ping-pong on loopback: sane numbers, the right
// count, bounded by the time limit, clear errors for bad options.
#include "bench/udp_pingpong.h"

#include <gtest/gtest.h>

namespace wharf::bench {
namespace {

PingPongOptions ShortRun(WaitMode mode) {
  PingPongOptions o;
  o.iterations = 2000;
  o.warmup = 200;
  o.mode = mode;
  o.time_limit_ns = 20 * kNsPerSec;
  return o;
}

void ExpectSane(const PingPongResult& r, uint64_t iterations) {
  const LatencySummary& l = r.latency;
  EXPECT_EQ(l.count, iterations);
  EXPECT_FALSE(r.hit_time_limit);
  EXPECT_GT(l.min_ns, 0);
  EXPECT_LE(l.min_ns, l.p50_ns);
  EXPECT_LT(l.p50_ns, l.p99_ns);
  EXPECT_LE(l.p90_ns, l.p99_ns);
  EXPECT_LE(l.p99_ns, l.p999_ns);
  EXPECT_LE(l.p999_ns, l.max_ns);
  EXPECT_GT(l.mean_ns, 0);
  EXPECT_GT(l.rate_per_sec, 0);
  // One in flight: the rate cannot beat the mean round trip.
  EXPECT_LE(l.rate_per_sec, 1.01e9 / l.mean_ns);
  EXPECT_NE(r.port, 0);
  EXPECT_EQ(r.server_exit, "exit code 0");
}

TEST(UdpPingPongTest, BusyPollOnLoopback) {
  const PingPongOptions o = ShortRun(WaitMode::kBusyPoll);
  auto r = RunUdpPingPong(o, SystemClock::Get());
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectSane(*r, o.iterations);
  EXPECT_EQ(r->warmup_done, o.warmup);
}

TEST(UdpPingPongTest, BlockingOnLoopbackUnpinned) {
  PingPongOptions o = ShortRun(WaitMode::kBlocking);
  o.pin = false;
  auto r = RunUdpPingPong(o, SystemClock::Get());
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectSane(*r, o.iterations);
  EXPECT_FALSE(r->pinning.pin);
}

TEST(UdpPingPongTest, LargestDatagramAndOneByte) {
  for (size_t size : {size_t{1}, kMaxUdpPayloadBytes}) {
    PingPongOptions o = ShortRun(WaitMode::kBusyPoll);
    o.size_bytes = size;
    o.iterations = 200;
    o.warmup = 10;
    auto r = RunUdpPingPong(o, SystemClock::Get());
    ASSERT_TRUE(r.ok()) << size << ": " << r.status();
    EXPECT_EQ(r->latency.count, 200u);
  }
}

TEST(UdpPingPongTest, TimeLimitStopsEarlyAndSaysSo) {
  PingPongOptions o = ShortRun(WaitMode::kBusyPoll);
  o.iterations = 10'000'000;
  o.warmup = 0;
  o.time_limit_ns = 50 * kNsPerMs;
  auto r = RunUdpPingPong(o, SystemClock::Get());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->hit_time_limit);
  EXPECT_GT(r->latency.count, 0u);
  EXPECT_LT(r->latency.count, o.iterations);
}

TEST(UdpPingPongTest, ProgressIsReportedAtMostFourTimesASecond) {
  PingPongOptions o = ShortRun(WaitMode::kBusyPoll);
  o.iterations = 10'000'000;
  o.time_limit_ns = 600 * kNsPerMs;
  int calls = 0;
  DurationNs last_ns = -kProgressIntervalNs;
  auto r = RunUdpPingPong(o, SystemClock::Get(), [&](const PingPongProgress& p) {
    ++calls;
    EXPECT_GE(p.elapsed_ns - last_ns, kProgressIntervalNs);
    EXPECT_EQ(p.total, o.iterations + o.warmup);
    last_ns = p.elapsed_ns;
  });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GE(calls, 1);
  EXPECT_LE(calls, 3);
}

TEST(UdpPingPongTest, RejectsBadOptions) {
  PingPongOptions o = ShortRun(WaitMode::kBusyPoll);
  o.size_bytes = kMaxUdpPayloadBytes + 1;
  EXPECT_EQ(RunUdpPingPong(o, SystemClock::Get()).status().code(), StatusCode::kInvalidArgument);
  o.size_bytes = 0;
  EXPECT_EQ(RunUdpPingPong(o, SystemClock::Get()).status().code(), StatusCode::kInvalidArgument);
  o = ShortRun(WaitMode::kBusyPoll);
  o.address = "localhost";
  auto r = RunUdpPingPong(o, SystemClock::Get());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("localhost"), std::string::npos);
  o = ShortRun(WaitMode::kBusyPoll);
  o.address = "192.0.2.1";  // TEST-NET-1: not ours, cannot bind
  EXPECT_FALSE(RunUdpPingPong(o, SystemClock::Get()).ok());
}

TEST(UdpPingPongTest, Ipv6LoopbackWhenAvailable) {
  PingPongOptions o = ShortRun(WaitMode::kBusyPoll);
  o.address = "::1";
  o.iterations = 200;
  auto r = RunUdpPingPong(o, SystemClock::Get());
  if (!r.ok() && r.status().message().find("bind") != std::string::npos) {
    GTEST_SKIP() << "no IPv6 loopback: " << r.status();
  }
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->latency.count, 200u);
}

}  // namespace
}  // namespace wharf::bench
