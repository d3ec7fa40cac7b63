// The process switch probe: a cost per hand-over on a CPU this process may
// use, no child left behind, clear errors for a CPU that is not one or not
// allowed, the caller's CPU mask intact.
#include "bench/switch_probe.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>

#include <cerrno>
#include <chrono>

#include "bench/affinity.h"

namespace wharf::bench {
namespace {

int FirstAllowedCpu(const cpu_set_t& allowed) {
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) return cpu;
  }
  return -1;
}

TEST(SwitchProbeTest, MeasuresACostPerHandOverAndReapsItsChild) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  const auto start = std::chrono::steady_clock::now();
  Result<double> us =
      MeasureProcessSwitch({.cpu = FirstAllowedCpu(allowed), .duration_ns = 20 * kNsPerMs});
  const auto took = std::chrono::steady_clock::now() - start;
  if (!us.ok() && us.status().code() == StatusCode::kUnavailable) {
    // A busy CPU (the suite runs in parallel) may take the yields: that is
    // the probe's answer to report, not a fault.
    GTEST_SKIP() << us.status();
  }
  ASSERT_TRUE(us.ok()) << us.status();
  EXPECT_GT(*us, 0.01);  // µs: no machine switches processes in 10 ns
  EXPECT_LT(*us, 1e4);   // nor takes 10 ms over it
  EXPECT_LT(took, std::chrono::seconds(5));
  // The child was reaped: no child of this process is left to wait for.
  EXPECT_EQ(waitpid(-1, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
  // The probe pinned its own thread, not this one.
  cpu_set_t after;
  ASSERT_EQ(sched_getaffinity(0, sizeof(after), &after), 0);
  EXPECT_TRUE(CPU_EQUAL(&allowed, &after));
}

TEST(SwitchProbeTest, ANegativeCpuIsRefused) {
  Result<double> us = MeasureProcessSwitch({.cpu = -1});
  ASSERT_FALSE(us.ok());
  EXPECT_EQ(us.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(us.status().message().find("is not a CPU"), std::string::npos) << us.status();
}

TEST(SwitchProbeTest, ACpuItMayNotUseIsAnErrorNotAHang) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  int absent = 0;
  while (absent < CPU_SETSIZE && CPU_ISSET(absent, &allowed)) ++absent;
  if (absent == CPU_SETSIZE) GTEST_SKIP() << "every CPU is allowed";
  Result<double> us = MeasureProcessSwitch({.cpu = absent});
  ASSERT_FALSE(us.ok());
  EXPECT_EQ(us.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(us.status().message().find("cannot pin"), std::string::npos) << us.status();
}

}  // namespace
}  // namespace wharf::bench
