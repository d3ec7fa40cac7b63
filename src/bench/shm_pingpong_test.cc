// Short real runs of the shared-memory ping-pong: sane numbers, the right
// count in both wait modes, the extreme sizes, the time limit, bad options.
#include "bench/shm_pingpong.h"

#include <gtest/gtest.h>

namespace wharf::bench {
namespace {

PingPongOptions ShortRun(WaitMode mode) {
  PingPongOptions o;
  o.iterations = 2000;
  o.warmup = 200;
  o.mode = mode;
  o.time_limit_ns = 20 * kNsPerSec;
  o.reply_timeout_ns = 5 * kNsPerSec;
  return o;
}

void ExpectSane(const PingPongResult& r, uint64_t iterations) {
  const LatencySummary& l = r.latency;
  EXPECT_EQ(l.count, iterations);
  EXPECT_FALSE(r.hit_time_limit);
  EXPECT_GT(l.min_ns, 0);
  EXPECT_LE(l.min_ns, l.p50_ns);
  EXPECT_LE(l.p50_ns, l.p99_ns);
  EXPECT_LE(l.p99_ns, l.p999_ns);
  EXPECT_LE(l.p999_ns, l.max_ns);
  EXPECT_GT(l.rate_per_sec, 0);
  EXPECT_LE(l.rate_per_sec, 1.01e9 / l.mean_ns);  // one in flight
  EXPECT_EQ(r.timeouts, 0u);
  EXPECT_EQ(r.server_exit, "exit code 0");  // it saw the stop entry and left
}

TEST(ShmPingPongTest, BusyPoll) {
  const PingPongOptions o = ShortRun(WaitMode::kBusyPoll);
  auto r = RunShmPingPong(o, SystemClock::Get());
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectSane(*r, o.iterations);
  EXPECT_EQ(r->warmup_done, o.warmup);
}

TEST(ShmPingPongTest, BlockingOnDoorbellsUnpinned) {
  PingPongOptions o = ShortRun(WaitMode::kBlocking);
  o.pin = false;
  auto r = RunShmPingPong(o, SystemClock::Get());
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectSane(*r, o.iterations);
  EXPECT_FALSE(r->pinning.pin);
}

TEST(ShmPingPongTest, OneByteAndLargestMessage) {
  for (WaitMode mode : {WaitMode::kBusyPoll, WaitMode::kBlocking}) {
    for (size_t size : {size_t{1}, kMaxShmRequestBytes}) {
      PingPongOptions o = ShortRun(mode);
      o.size_bytes = size;
      o.iterations = 20;
      o.warmup = 2;
      auto r = RunShmPingPong(o, SystemClock::Get());
      ASSERT_TRUE(r.ok()) << WaitModeName(mode) << " " << size << ": " << r.status();
      EXPECT_EQ(r->latency.count, 20u);
      EXPECT_EQ(r->server_exit, "exit code 0");
    }
  }
}

TEST(ShmPingPongTest, TimeLimitStopsEarlyAndSaysSo) {
  PingPongOptions o = ShortRun(WaitMode::kBusyPoll);
  o.iterations = 10'000'000;
  o.warmup = 0;
  o.time_limit_ns = 50 * kNsPerMs;
  auto r = RunShmPingPong(o, SystemClock::Get());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->hit_time_limit);
  EXPECT_GT(r->latency.count, 0u);
  EXPECT_LT(r->latency.count, o.iterations);
  EXPECT_EQ(r->server_exit, "exit code 0");
}

TEST(ShmPingPongTest, RejectsBadSize) {
  PingPongOptions o = ShortRun(WaitMode::kBusyPoll);
  for (size_t size : {size_t{0}, kMaxShmRequestBytes + 1}) {
    o.size_bytes = size;
    EXPECT_EQ(RunShmPingPong(o, SystemClock::Get()).status().code(), StatusCode::kInvalidArgument)
        << size;
  }
}

}  // namespace
}  // namespace wharf::bench
