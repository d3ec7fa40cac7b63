// CPU-time reading: it grows with work done, covers children, and says
// "unknown" rather than a wrong number for a process that is gone.
#include "bench/cpu_usage.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "bench/child_process.h"

namespace wharf::bench {
namespace {

// Burns about `ns` of CPU on the calling thread.
void Burn(DurationNs ns) {
  const DurationNs start = *ProcessCpuNs(0);
  volatile uint64_t x = 0;
  while (*ProcessCpuNs(0) - start < ns) {
    for (int i = 0; i < 1000; ++i) x = x + 1;
  }
}

TEST(CpuUsageTest, OwnCpuTimeGrowsWithWork) {
  auto before = ProcessCpuNs(0);
  ASSERT_TRUE(before.ok()) << before.status();
  Burn(20 * kNsPerMs);
  auto after = ProcessCpuNs(0);
  ASSERT_TRUE(after.ok());
  EXPECT_GE(*after - *before, 20 * kNsPerMs);
}

TEST(CpuUsageTest, MeterCountsABusyChild) {
  auto child = ChildProcess::Fork(-1, [] {
    volatile uint64_t x = 0;
    for (;;) x = x + 1;  // until killed
    return 0;
  });
  ASSERT_TRUE(child.ok()) << child.status();
  CpuMeter meter({child->pid()});
  meter.Start();
  // The child spins while we sleep: its CPU time is what the meter reports.
  ::usleep(100'000);
  const DurationNs used = meter.Stop();
  EXPECT_GT(used, 5 * kNsPerMs);  // it got some CPU even on a loaded machine
  EXPECT_LT(used, 5 * kNsPerSec);
}

TEST(CpuUsageTest, GoneProcessIsUnknown) {
  auto child = ChildProcess::Fork(-1, [] { return 0; });
  ASSERT_TRUE(child.ok());
  const pid_t pid = child->pid();
  ASSERT_TRUE(child->Wait(5 * kNsPerSec).ok());
  EXPECT_FALSE(ProcessCpuNs(pid).ok());
  CpuMeter meter({0, pid});
  meter.Start();
  EXPECT_EQ(meter.Stop(), -1);
}

TEST(CpuUsageTest, StopWithoutStartIsUnknown) {
  CpuMeter meter({0});
  EXPECT_EQ(meter.Stop(), -1);
}

}  // namespace
TEST(MachineCpuTest, ParsesTheCpuLine) {
  auto cpu = ParseProcStat("cpu  100 5 50 800 10 2 3 1 0 0\ncpu0 1 2 3\n");
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_EQ(cpu->busy, 100u + 5 + 50 + 2 + 3 + 1);
  EXPECT_EQ(cpu->total, cpu->busy + 800 + 10);
  EXPECT_FALSE(ParseProcStat("intr 1 2\n").ok());
  EXPECT_FALSE(ParseProcStat("cpu 1 2 3\n").ok());
}

TEST(MachineCpuTest, BusyFractionOfAnInterval) {
  Result<MachineCpu> a = MachineCpu{.busy = 100, .total = 1000};
  Result<MachineCpu> b = MachineCpu{.busy = 400, .total = 2000};
  EXPECT_DOUBLE_EQ(BusyFraction(a, b), 0.3);
  EXPECT_EQ(BusyFraction(b, a), -1);
  EXPECT_EQ(BusyFraction(UnavailableError("x"), b), -1);
  EXPECT_TRUE(ReadMachineCpu().ok());
}

}  // namespace wharf::bench
