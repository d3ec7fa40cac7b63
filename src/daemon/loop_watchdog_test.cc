#include "daemon/loop_watchdog.h"

#include <time.h>

#include <gtest/gtest.h>

namespace wharf::daemon {
namespace {

TEST(LoopWatchdog, Record__CountsOnlyTurnsOverTheThreshold) {
  LoopWatchdog dog(10 * kNsPerMs);
  dog.Record(0, 5 * kNsPerMs);
  dog.Record(100 * kNsPerMs, 110 * kNsPerMs);  // exactly the threshold: not a stall
  dog.Record(200 * kNsPerMs, 3200 * kNsPerMs);
  const LoopStats s = dog.Stats();
  EXPECT_EQ(s.turns, 3u);
  EXPECT_EQ(s.stalls, 1u);
  EXPECT_EQ(s.threshold_ns, 10 * kNsPerMs);
  EXPECT_EQ(s.max_turn_ns, 3000 * kNsPerMs);
  EXPECT_EQ(s.last_stall_ns, 3000 * kNsPerMs);
  EXPECT_EQ(s.last_stall_at_ns, 3200 * kNsPerMs);
}

// A fake count of the thread's voluntary context switches.
uint64_t g_switches = 0;
uint64_t FakeSwitches() { return g_switches; }

TEST(LoopWatchdog, Record__TellsABlockedStallFromAPreemptedOne) {
  g_switches = 100;
  LoopWatchdog dog(10 * kNsPerMs, &FakeSwitches);
  g_switches = 130;  // slept in epoll: 30 voluntary switches
  dog.Awake();
  dog.Record(0, 20 * kNsPerMs);  // no switch since the wake-up: preempted
  EXPECT_EQ(dog.Stats().stalls, 1u);
  EXPECT_EQ(dog.Stats().stalls_blocked, 0u);
  g_switches = 131;  // a system call waited
  dog.Record(0, 20 * kNsPerMs);
  EXPECT_EQ(dog.Stats().stalls, 2u);
  EXPECT_EQ(dog.Stats().stalls_blocked, 1u);
  dog.Record(0, 20 * kNsPerMs);  // nothing new since that one
  EXPECT_EQ(dog.Stats().stalls_blocked, 1u);
}

TEST(LoopWatchdog, VoluntarySwitches__CountsASleep) {
  const uint64_t before = LoopWatchdog::VoluntarySwitches();
  timespec ms{0, 1000000};
  ::nanosleep(&ms, nullptr);
  EXPECT_GT(LoopWatchdog::VoluntarySwitches(), before);
}

TEST(LoopWatchdog, Record__AClockGoingBackIsAnEmptyTurn) {
  LoopWatchdog dog(kNsPerMs);
  dog.Record(5 * kNsPerMs, 1 * kNsPerMs);
  EXPECT_EQ(dog.Stats().stalls, 0u);
  EXPECT_EQ(dog.Stats().max_turn_ns, 0);
}

TEST(LoopWatchdog, Stats__P99SeesTheSlowTail) {
  LoopWatchdog dog(10 * kNsPerMs);
  for (int i = 0; i < 980; ++i) dog.Record(0, 2000);
  for (int i = 0; i < 20; ++i) dog.Record(0, 500000);
  const LoopStats s = dog.Stats();
  EXPECT_EQ(s.stalls, 0u);
  EXPECT_NEAR(static_cast<double>(s.p99_turn_ns), 500000.0, 500000.0 * 0.01);
}

TEST(LoopWatchdog, Stats__NoTurnsYet) {
  const LoopStats s = LoopWatchdog(kNsPerMs).Stats();
  EXPECT_EQ(s.turns, 0u);
  EXPECT_EQ(s.max_turn_ns, 0);
  EXPECT_EQ(s.last_stall_ns, 0);
}

}  // namespace
}  // namespace wharf::daemon
