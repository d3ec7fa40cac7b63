// ProbeSchedule: even spreading, jitter that keeps the mean, the total-rate
// cap, and a late caller skipping rather than bursting.
#include "mesh/probe_schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace wharf::mesh {
namespace {

constexpr TimeNs kStart = 1000 * kNsPerSec;

// Every probe sent in [kStart, kStart + span), by target, stepping time in
// 100 us ticks as a loop would.
std::vector<std::vector<TimeNs>> SendFor(ProbeSchedule& schedule, DurationNs span) {
  std::vector<std::vector<TimeNs>> sent(schedule.size());
  for (TimeNs now = kStart; now < kStart + span; now += 100 * kNsPerUs) {
    while (auto target = schedule.TakeDue(now)) sent[*target].push_back(now);
  }
  return sent;
}

TEST(ProbeScheduleTest, EachTargetIsProbedAtItsRateOnAverage) {
  ProbeSchedule schedule(1);
  const std::vector<DurationNs> intervals = {100 * kNsPerMs, 1 * kNsPerSec, 250 * kNsPerMs};
  schedule.Reset(intervals, 0, kStart);
  EXPECT_DOUBLE_EQ(schedule.stretch(), 1.0);
  EXPECT_NEAR(schedule.rate_per_second(), 10 + 1 + 4, 1e-9);
  std::vector<std::vector<TimeNs>> sent = SendFor(schedule, 100 * kNsPerSec);
  EXPECT_NEAR(sent[0].size(), 1000, 10);
  EXPECT_NEAR(sent[1].size(), 100, 2);
  EXPECT_NEAR(sent[2].size(), 400, 5);
  // Gaps stay within the jitter (plus the 100 us step).
  for (size_t i = 1; i < sent[0].size(); ++i) {
    const DurationNs gap = sent[0][i] - sent[0][i - 1];
    ASSERT_GE(gap, 90 * kNsPerMs - 100 * kNsPerUs) << i;
    ASSERT_LE(gap, 110 * kNsPerMs + 100 * kNsPerUs) << i;
  }
  EXPECT_EQ(schedule.skipped(), 0u);
}

// 100 targets with the same interval: their first probes fall one per
// slot of interval / 100, not together.
TEST(ProbeScheduleTest, TargetsAreSpreadOverTheInterval) {
  ProbeSchedule schedule(7);
  schedule.Reset(std::vector<DurationNs>(100, kNsPerSec), 0, kStart);
  std::vector<TimeNs> first(100, kNever);
  for (TimeNs now = kStart; now < kStart + kNsPerSec; now += 100 * kNsPerUs) {
    while (auto target = schedule.TakeDue(now)) first[*target] = std::min(first[*target], now);
  }
  // Each 10 ms slot of the second holds exactly one first probe, target
  // i's, as the loop sees it: at most one 100 us tick after it was due.
  for (size_t i = 0; i < first.size(); ++i) {
    const TimeNs slot = static_cast<TimeNs>(i);
    EXPECT_LE((first[i] - kStart - 100 * kNsPerUs) / (10 * kNsPerMs), slot) << i;
    EXPECT_GE((first[i] - kStart) / (10 * kNsPerMs), slot) << i;
  }
}

// Two hosts with the same targets but their own seeds are not in step.
TEST(ProbeScheduleTest, DifferentSeedsGiveDifferentPhases) {
  ProbeSchedule a(1);
  ProbeSchedule b(2);
  a.Reset(std::vector<DurationNs>(1, kNsPerSec), 0, kStart);
  b.Reset(std::vector<DurationNs>(1, kNsPerSec), 0, kStart);
  EXPECT_NE(a.NextDue(), b.NextDue());
}

TEST(ProbeScheduleTest, TheTotalCapStretchesEveryIntervalAlike) {
  ProbeSchedule schedule(3);
  // 10 targets at 1,000/s each = 10,000/s, capped at 2,000/s.
  schedule.Reset(std::vector<DurationNs>(10, kNsPerMs), 2000, kStart);
  EXPECT_DOUBLE_EQ(schedule.stretch(), 5.0);
  EXPECT_NEAR(schedule.rate_per_second(), 2000, 1e-6);
  std::vector<std::vector<TimeNs>> sent = SendFor(schedule, 10 * kNsPerSec);
  size_t total = 0;
  for (const auto& s : sent) {
    EXPECT_NEAR(s.size(), 2000, 30);
    total += s.size();
  }
  EXPECT_NEAR(total, 20000, 200);
}

TEST(ProbeScheduleTest, ALateCallerSkipsProbesInsteadOfBursting) {
  ProbeSchedule schedule(4);
  schedule.Reset(std::vector<DurationNs>(1, 10 * kNsPerMs), 0, kStart);
  // The loop comes back a second later: one probe now, the next an
  // interval later, not a hundred at once.
  const TimeNs late = kStart + kNsPerSec;
  ASSERT_TRUE(schedule.TakeDue(late).has_value());
  EXPECT_FALSE(schedule.TakeDue(late).has_value());
  EXPECT_GE(schedule.NextDue(), late + 9 * kNsPerMs);
  EXPECT_NEAR(static_cast<double>(schedule.skipped()), 99, 2);
}

// Taking ahead (a horizon past now) is not falling behind: one target due
// every 100 us gives ten probes for a millisecond's horizon, none skipped.
TEST(ProbeScheduleTest, TakingAheadOfNowSkipsNothing) {
  ProbeSchedule schedule(8);
  schedule.Reset(std::vector<DurationNs>(1, 100 * kNsPerUs), 0, kStart);
  int taken = 0;
  for (TimeNs now = kStart; now < kStart + 100 * kNsPerMs; now += kNsPerMs) {
    while (schedule.TakeDue(now, now + kNsPerMs)) ++taken;
  }
  EXPECT_NEAR(taken, 1000, 15);
  EXPECT_EQ(schedule.skipped(), 0u);
}

TEST(ProbeScheduleTest, NoTargetsMeansNothingIsEverDue) {
  ProbeSchedule schedule(5);
  schedule.Reset({}, 100, kStart);
  EXPECT_EQ(schedule.NextDue(), kNever);
  EXPECT_FALSE(schedule.TakeDue(kNever - 1).has_value());
  EXPECT_EQ(schedule.rate_per_second(), 0);
}

TEST(ProbeScheduleTest, AResetReplacesTheTargets) {
  ProbeSchedule schedule(6);
  schedule.Reset(std::vector<DurationNs>(5, kNsPerSec), 0, kStart);
  schedule.Reset(std::vector<DurationNs>(2, kNsPerSec), 0, kStart);
  EXPECT_EQ(schedule.size(), 2u);
  std::vector<std::vector<TimeNs>> sent = SendFor(schedule, 3 * kNsPerSec);
  EXPECT_EQ(sent.size(), 2u);
  for (const auto& s : sent) EXPECT_NEAR(s.size(), 3, 1);
}

}  // namespace
}  // namespace wharf::mesh
