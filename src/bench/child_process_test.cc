#include "bench/child_process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "bench/affinity.h"

namespace wharf::bench {
namespace {

TEST(ChildProcessTest, ForkReturnsTheBodysExitCode) {
  auto child = ChildProcess::Fork(-1, [] { return 7; });
  ASSERT_TRUE(child.ok()) << child.status();
  auto exit = child->Wait(10 * kNsPerSec);
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_FALSE(exit->signaled);
  EXPECT_EQ(exit->code, 7);
  EXPECT_EQ(exit->ToString(), "exit code 7");
  // Reaped once; asking again gives the same answer.
  EXPECT_EQ(child->TryReap()->code, 7);
  EXPECT_EQ(child->KillAndReap().code, 7);
}

TEST(ChildProcessTest, WaitTimesOutAndKillReaps) {
  auto child = ChildProcess::Fork(-1, [] {
    ::pause();
    return 0;
  });
  ASSERT_TRUE(child.ok()) << child.status();
  auto exit = child->Wait(50 * kNsPerMs);
  EXPECT_EQ(exit.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_FALSE(child->TryReap().has_value());
  const ExitInfo killed = child->KillAndReap();
  EXPECT_TRUE(killed.signaled);
  EXPECT_EQ(killed.code, SIGKILL);
  EXPECT_FALSE(killed.ok());
}

TEST(ChildProcessTest, DestructorKillsAndReaps) {
  pid_t pid = -1;
  {
    auto child = ChildProcess::Fork(-1, [] {
      ::pause();
      return 0;
    });
    ASSERT_TRUE(child.ok()) << child.status();
    pid = child->pid();
  }
  // Reaped: the pid is no longer a child of ours.
  errno = 0;
  EXPECT_EQ(::waitpid(pid, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
}

TEST(ChildProcessTest, StopSendsTheSignalFirst) {
  auto child = ChildProcess::Fork(-1, [] {
    ::pause();
    return 0;
  });
  ASSERT_TRUE(child.ok()) << child.status();
  const ExitInfo exit = child->Stop(SIGTERM, 5 * kNsPerSec);
  EXPECT_TRUE(exit.signaled);
  EXPECT_EQ(exit.code, SIGTERM);
}

TEST(ChildProcessTest, ExecCapturesOutputAndExitCode) {
  auto child = ChildProcess::Exec({"sh", "-c", "echo out; echo err >&2; exit 3"}, -1);
  ASSERT_TRUE(child.ok()) << child.status();
  auto exit = child->Wait(10 * kNsPerSec);
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(exit->code, 3);
  EXPECT_EQ(child->Output(), "out\nerr\n");
}

TEST(ChildProcessTest, ExecPinned) {
  if (AllowedCpuCount() < 1) GTEST_SKIP();
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(::sched_getaffinity(0, sizeof(set), &set), 0);
  int cpu = 0;
  while (!CPU_ISSET(cpu, &set)) ++cpu;
  auto child = ChildProcess::Exec({"sh", "-c", "grep Cpus_allowed_list /proc/self/status"}, cpu);
  ASSERT_TRUE(child.ok()) << child.status();
  ASSERT_TRUE(child->Wait(10 * kNsPerSec).ok());
  EXPECT_NE(child->Output().find("\t" + std::to_string(cpu) + "\n"), std::string::npos)
      << child->Output();
}

TEST(ChildProcessTest, ExecOfAMissingProgramIsNotFound) {
  auto child = ChildProcess::Exec({"wharf-no-such-program-7f3a"}, -1);
  EXPECT_EQ(child.status().code(), StatusCode::kNotFound);
  auto absolute = ChildProcess::Exec({"/nonexistent/wharf-no-such-program"}, -1);
  EXPECT_EQ(absolute.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ChildProcess::Exec({}, -1).status().code(), StatusCode::kInvalidArgument);
}

TEST(ChildProcessTest, ExecOnAForbiddenCpuFailsUpFront) {
  auto child = ChildProcess::Exec({"true"}, CPU_SETSIZE - 1);
  EXPECT_FALSE(child.ok());
}

}  // namespace
}  // namespace wharf::bench
