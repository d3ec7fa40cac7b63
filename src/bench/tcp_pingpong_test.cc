// Short real runs of the TCP ping-pong on loopback.
#include "bench/tcp_pingpong.h"

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
  EXPECT_LT(l.p50_ns, l.p99_ns);
  EXPECT_LE(l.p99_ns, l.p999_ns);
  EXPECT_LE(l.p999_ns, l.max_ns);
  EXPECT_GT(l.rate_per_sec, 0);
  EXPECT_EQ(r.timeouts, 0u);
  EXPECT_EQ(r.server_exit, "exit code 0");  // it saw the close and left by itself
}

TEST(TcpPingPongTest, BusyPollOnLoopback) {
  const PingPongOptions o = ShortRun(WaitMode::kBusyPoll);
  auto r = RunTcpPingPong(o, SystemClock::Get());
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectSane(*r, o.iterations);
}

TEST(TcpPingPongTest, BlockingOnLoopback) {
  const PingPongOptions o = ShortRun(WaitMode::kBlocking);
  auto r = RunTcpPingPong(o, SystemClock::Get());
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectSane(*r, o.iterations);
}

// A request far larger than the socket buffers: the client must read the
// echo while still sending, or both sides would wait for each other.
TEST(TcpPingPongTest, LargeRequestsDoNotDeadlock) {
  for (WaitMode mode : {WaitMode::kBusyPoll, WaitMode::kBlocking}) {
    PingPongOptions o = ShortRun(mode);
    o.size_bytes = 8 << 20;
    o.iterations = 5;
    o.warmup = 1;
    o.reply_timeout_ns = 10 * kNsPerSec;
    auto r = RunTcpPingPong(o, SystemClock::Get());
    ASSERT_TRUE(r.ok()) << WaitModeName(mode) << ": " << r.status();
    EXPECT_EQ(r->latency.count, 5u);
  }
}

TEST(TcpPingPongTest, RejectsBadSize) {
  PingPongOptions o = ShortRun(WaitMode::kBusyPoll);
  o.size_bytes = kMaxTcpRequestBytes + 1;
  EXPECT_EQ(RunTcpPingPong(o, SystemClock::Get()).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace wharf::bench
