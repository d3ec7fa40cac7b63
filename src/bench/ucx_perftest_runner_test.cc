// The ucx_perftest runner: its output parsed (and refused when it holds no
// result), and one real short active-message ping-pong over UCX's tcp on
// loopback when ucx_perftest is installed.
#include "bench/ucx_perftest_runner.h"

#include <gtest/gtest.h>

#include "bench/child_process.h"

namespace wharf::bench {
namespace {

TEST(UcxPerftestRunnerTest, TheFinalLineIsRead) {
  const char* out =
      "|    Stage     | # iterations | 50.0%ile | average | overall |  average |  overall |\n"
      "[thread 0]             10876      4.106    46.332    46.332        1.32       1.32       "
      "21583       21583\n"
      "Final:                 20000      4.096    31.110    39.388        1.96       1.55       "
      "32144       25388\n";
  auto r = ParseUcxPerftestOutput(out);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->iterations, 20000u);
  EXPECT_DOUBLE_EQ(r->p50_latency_us, 4.096);
  EXPECT_DOUBLE_EQ(r->average_latency_us, 31.110);
  EXPECT_DOUBLE_EQ(r->overall_bandwidth_mbs, 1.55);
  EXPECT_DOUBLE_EQ(r->overall_message_rate, 25388);
}

TEST(UcxPerftestRunnerTest, OutputWithoutAResultIsRefusedQuotingIt) {
  auto none = ParseUcxPerftestOutput("connect() failed: Connection refused\n");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("Connection refused"), std::string::npos);
  auto short_line = ParseUcxPerftestOutput("Final: 100 1.0 2.0\n");
  ASSERT_FALSE(short_line.ok());
  EXPECT_NE(short_line.status().message().find("8 numbers"), std::string::npos);
}

TEST(UcxPerftestRunnerTest, AShortActiveMessagePingPongRuns) {
  if (!ChildProcess::FindExecutable("ucx_perftest").ok()) {
    GTEST_SKIP() << "ucx_perftest not installed (ucx-utils)";
  }
  SystemClock clock;
  auto r = RunUcxPerftest({.iterations = 2000, .pin = false}, clock);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->iterations, 2000u);
  EXPECT_GT(r->p50_latency_us, 0);
}

}  // namespace
}  // namespace wharf::bench
