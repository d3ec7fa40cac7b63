#include "base/sim_clock.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace wharf {
namespace {

TEST(SimClockTest, TimeMovesOnlyWhenTold) {
  SimClock clock(100);
  EXPECT_EQ(clock.NowNs(), 100);
  EXPECT_EQ(clock.NowNs(), 100);
  clock.AdvanceBy(50);
  EXPECT_EQ(clock.NowNs(), 150);
  clock.AdvanceTo(120);  // never backwards
  EXPECT_EQ(clock.NowNs(), 150);
}

TEST(SimClockTest, TimersFireInDeadlineOrderWithNowAtDeadline) {
  SimClock clock;
  std::vector<std::string> log;
  clock.ScheduleAt(30, [&] { log.push_back("c@" + std::to_string(clock.NowNs())); });
  clock.ScheduleAt(10, [&] { log.push_back("a@" + std::to_string(clock.NowNs())); });
  clock.ScheduleAt(20, [&] { log.push_back("b@" + std::to_string(clock.NowNs())); });
  EXPECT_EQ(clock.AdvanceTo(25), 2);
  EXPECT_EQ(log, (std::vector<std::string>{"a@10", "b@20"}));
  EXPECT_EQ(clock.NowNs(), 25);
  EXPECT_EQ(clock.NextDeadline(), 30);
  EXPECT_TRUE(clock.RunNext());
  EXPECT_EQ(log.back(), "c@30");
  EXPECT_FALSE(clock.RunNext());
  EXPECT_EQ(clock.NextDeadline(), kNever);
}

TEST(SimClockTest, TiesFireInSchedulingOrder) {
  SimClock clock;
  std::string order;
  for (char c : std::string("xyz")) clock.ScheduleAt(5, [&order, c] { order += c; });
  clock.AdvanceTo(5);
  EXPECT_EQ(order, "xyz");
}

TEST(SimClockTest, CancelledTimerDoesNotFire) {
  SimClock clock;
  bool fired = false;
  auto id = clock.ScheduleAfter(10, [&] { fired = true; });
  EXPECT_TRUE(clock.Cancel(id));
  EXPECT_FALSE(clock.Cancel(id));
  clock.AdvanceBy(100);
  EXPECT_FALSE(fired);
}

TEST(SimClockTest, CallbacksMayScheduleTimersDueInTheSameAdvance) {
  SimClock clock;
  std::vector<TimeNs> at;
  clock.ScheduleAt(10, [&] {
    at.push_back(clock.NowNs());
    clock.ScheduleAfter(5, [&] { at.push_back(clock.NowNs()); });
    clock.ScheduleAfter(500, [&] { at.push_back(clock.NowNs()); });
  });
  clock.AdvanceTo(100);
  EXPECT_EQ(at, (std::vector<TimeNs>{10, 15}));
  EXPECT_EQ(clock.PendingTimers(), 1u);
}

TEST(SimClockTest, PastDeadlinesAreClampedToNow) {
  SimClock clock(1000);
  TimeNs seen = -1;
  clock.ScheduleAt(5, [&] { seen = clock.NowNs(); });
  clock.AdvanceBy(0);
  EXPECT_EQ(seen, 1000);
}

TEST(SimClockTest, WallTimeFollowsSimulatedTime) {
  SimClock clock(0, 1000);
  clock.AdvanceBy(7);
  EXPECT_EQ(clock.WallNs(), 1007);
}

}  // namespace
}  // namespace wharf
