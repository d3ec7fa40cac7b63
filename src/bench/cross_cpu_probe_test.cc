// The cross-CPU copy probe: a rate between two CPUs, clear errors for one
// CPU or one it may not use, bounded in time, the caller's CPU mask intact.
#include "bench/cross_cpu_probe.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <chrono>

#include "bench/affinity.h"

namespace wharf::bench {
namespace {

TEST(CrossCpuProbeTest, MeasuresARateBetweenTwoCpusWithinItsTime) {
  if (AllowedCpuCount() < 2) GTEST_SKIP() << "needs two CPUs";
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  int cpus[2] = {-1, -1};
  for (int cpu = 0, n = 0; cpu < CPU_SETSIZE && n < 2; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) cpus[n++] = cpu;
  }
  const auto start = std::chrono::steady_clock::now();
  Result<double> rate = MeasureCrossCpuCopy(
      {.from_cpu = cpus[0], .to_cpu = cpus[1], .duration_ns = 20 * kNsPerMs});
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(rate.ok()) << rate.status();
  EXPECT_GT(*rate, 0.1);     // Gbit/s: any machine copies faster than this
  EXPECT_LT(*rate, 1e5);     // and slower than 100 Tbit/s
  EXPECT_LT(took, std::chrono::seconds(5));
  // The probe pinned its own threads, not this one.
  cpu_set_t after;
  ASSERT_EQ(sched_getaffinity(0, sizeof(after), &after), 0);
  EXPECT_TRUE(CPU_EQUAL(&allowed, &after));
}

TEST(CrossCpuProbeTest, OneCpuOrANegativeOneIsRefused) {
  for (auto [from, to] : {std::pair{0, 0}, std::pair{-1, 1}, std::pair{0, -1}}) {
    Result<double> rate = MeasureCrossCpuCopy({.from_cpu = from, .to_cpu = to});
    ASSERT_FALSE(rate.ok());
    EXPECT_EQ(rate.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(rate.status().message().find("two distinct CPUs"), std::string::npos)
        << rate.status();
  }
}

TEST(CrossCpuProbeTest, ACpuItMayNotUseIsAnErrorNotAHang) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  int absent = 0;
  while (absent < CPU_SETSIZE && CPU_ISSET(absent, &allowed)) ++absent;
  if (absent == CPU_SETSIZE) GTEST_SKIP() << "every CPU is allowed";
  const int present = absent == 0 ? 1 : 0;
  Result<double> rate = MeasureCrossCpuCopy({.from_cpu = present, .to_cpu = absent});
  ASSERT_FALSE(rate.ok());
  EXPECT_EQ(rate.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(rate.status().message().find("cannot pin"), std::string::npos) << rate.status();
}

}  // namespace
}  // namespace wharf::bench
