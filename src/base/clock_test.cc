// Unit tests of SystemClock (SimClock has its own sim_clock_test.cc).
#include "base/clock.h"

#include <gtest/gtest.h>

#include <ctime>

namespace wharf {
namespace {

TEST(SystemClockTest, GetReturnsOneSharedInstance) {
  EXPECT_EQ(&SystemClock::Get(), &SystemClock::Get());
}

TEST(SystemClockTest, NowNsIsMonotonicNonDecreasing) {
  const Clock& clock = SystemClock::Get();
  TimeNs first = clock.NowNs();
  EXPECT_GE(first, 0);
  TimeNs prev = first;
  for (int i = 0; i < 100'000; ++i) {
    TimeNs now = clock.NowNs();
    ASSERT_GE(now, prev) << "read " << i;
    prev = now;
  }
  EXPECT_GE(prev, first);
  EXPECT_LT(prev, kNever);
}

TEST(SystemClockTest, WallNsIsNearTimeOfDay) {
  const Clock& clock = SystemClock::Get();
  const int64_t before = static_cast<int64_t>(std::time(nullptr)) * kNsPerSec;
  const int64_t wall = clock.WallNs();
  const int64_t after = static_cast<int64_t>(std::time(nullptr)) * kNsPerSec;
  // time() truncates to whole seconds: wall lies in [before, after + 1 s).
  EXPECT_GE(wall, before);
  EXPECT_LT(wall, after + kNsPerSec);
}

}  // namespace
}  // namespace wharf
