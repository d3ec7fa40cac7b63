// Tests for Subprocess and RunCommand in the test's own namespace (no root
// needed): output capture, stdin, bounded waits that kill, line waiting,
// start failures, and that nothing outlives the object. Children block in
// `tail -f /dev/null` where a test needs one that never exits by itself.
#include "netns/subprocess.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>


namespace wharf::netns {
namespace {

// Generous for a loaded 2-core CI box; only reached when something is wrong.
constexpr DurationNs kWaitNs = 20 * kNsPerSec;

// A shell is used here to script the child's behaviour, never by the harness.
std::vector<std::string> Sh(std::string script) { return {"/bin/sh", "-c", std::move(script)}; }

std::unique_ptr<Subprocess> MustStart(std::vector<std::string> argv,
                                      SubprocessOptions options = {}) {
  Result<std::unique_ptr<Subprocess>> started =
      Subprocess::Start(std::move(argv), std::move(options));
  EXPECT_TRUE(started.ok()) << started.status();
  return started.ok() ? std::move(started).value() : nullptr;
}

// True once `pid` has exited (or never existed), waiting up to kWaitNs on a
// pidfd; works for processes that are not our children.
bool ExitsSoon(pid_t pid) {
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) return errno == ESRCH;
  pollfd p{.fd = pidfd, .events = POLLIN, .revents = 0};
  const int ready = ::poll(&p, 1, static_cast<int>(kWaitNs / kNsPerMs));
  ::close(pidfd);
  return ready == 1;
}

TEST(RunCommandTest, CapturesStdoutStderrAndExitCode) {
  Result<CommandOutput> out = RunCommand(Sh("echo hello; echo oops >&2; exit 3"), {}, kWaitNs);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->exit_code, 3);
  EXPECT_EQ(out->stdout_text, "hello\n");
  EXPECT_EQ(out->stderr_text, "oops\n");
}

TEST(RunCommandTest, FeedsStdinLargerThanAPipeWithoutDeadlock) {
  std::string input(3 << 20, 'x');  // more than the pipes hold both ways
  for (size_t i = 0; i < input.size(); i += 4096) input[i] = '\n';
  SubprocessOptions options;
  options.stdin_data = input;
  Result<CommandOutput> out = RunCommand({"cat"}, options, kWaitNs);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->exit_code, 0);
  EXPECT_EQ(out->stdout_text, input);
}

TEST(RunCommandTest, AddsEnvironmentEntries) {
  SubprocessOptions options;
  options.extra_env = {"WHARF_NETNS_TEST_VALUE=42"};
  Result<CommandOutput> out = RunCommand(Sh("echo \"$WHARF_NETNS_TEST_VALUE\""), options, kWaitNs);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->stdout_text, "42\n");

  options.extra_env = {"NO_EQUALS_SIGN"};
  EXPECT_EQ(RunCommand({"true"}, options, kWaitNs).status().code(), StatusCode::kInvalidArgument);
}

TEST(RunCommandTest, RunCheckedNamesCommandAndStderrOnFailure) {
  Result<CommandOutput> out = RunChecked(Sh("echo 'no such device' >&2; exit 2"), {}, kWaitNs);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kInternal);
  EXPECT_NE(out.status().message().find("/bin/sh -c"), std::string::npos) << out.status();
  EXPECT_NE(out.status().message().find("exited with code 2"), std::string::npos) << out.status();
  EXPECT_NE(out.status().message().find("no such device"), std::string::npos) << out.status();
}

TEST(SubprocessTest, MissingBinaryIsNotFound) {
  Result<std::unique_ptr<Subprocess>> started =
      Subprocess::Start({"wharf-netns-no-such-binary", "--flag"});
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(started.status().code(), StatusCode::kNotFound);
  EXPECT_NE(started.status().message().find("wharf-netns-no-such-binary"), std::string::npos);
  EXPECT_EQ(Subprocess::Start({}).status().code(), StatusCode::kInvalidArgument);
}

TEST(SubprocessTest, ExecFailureInTheChildIsReported) {
  // Exists but is not executable: only execve itself can fail on it.
  Result<std::unique_ptr<Subprocess>> started = Subprocess::Start({"/etc/passwd"});
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(started.status().code(), StatusCode::kPermissionDenied) << started.status();
  EXPECT_NE(started.status().message().find("exec /etc/passwd"), std::string::npos);
}

// The child is pinned before exec: its allowed CPUs are exactly the one asked
// for (and, unpinned, what this process has).
TEST(SubprocessTest, CpuPinsTheChildBeforeExec) {
  cpu_set_t mine;
  ASSERT_EQ(::sched_getaffinity(0, sizeof(mine), &mine), 0);
  int cpu = 0;
  while (!CPU_ISSET(cpu, &mine)) ++cpu;
  SubprocessOptions options;
  options.cpu = cpu;
  Result<CommandOutput> out =
      RunCommand(Sh("grep Cpus_allowed_list /proc/self/status"), options, kWaitNs);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->stdout_text, "Cpus_allowed_list:\t" + std::to_string(cpu) + "\n");
}

TEST(SubprocessTest, CpuOutOfRangeFailsTheStart) {
  SubprocessOptions options;
  options.cpu = 100000;
  EXPECT_FALSE(Subprocess::Start(Sh("true"), options).ok());
  cpu_set_t mine;
  ASSERT_EQ(::sched_getaffinity(0, sizeof(mine), &mine), 0);
  int absent = 0;
  while (absent < CPU_SETSIZE && CPU_ISSET(absent, &mine)) ++absent;
  if (absent == CPU_SETSIZE) GTEST_SKIP() << "every CPU is allowed";
  options.cpu = absent;  // not ours: sched_setaffinity refuses it in the child
  Result<std::unique_ptr<Subprocess>> started = Subprocess::Start(Sh("true"), options);
  ASSERT_FALSE(started.ok());
  EXPECT_NE(started.status().message().find("pinning"), std::string::npos) << started.status();
}

TEST(SubprocessTest, UnknownNamespaceIsNotFound) {
  SubprocessOptions options;
  options.netns = "wharf-netns-test-no-such-namespace";
  EXPECT_EQ(Subprocess::Start({"true"}, options).status().code(), StatusCode::kNotFound);
  options.netns = "../etc";
  EXPECT_EQ(Subprocess::Start({"true"}, options).status().code(), StatusCode::kInvalidArgument);
}

TEST(SubprocessTest, WaitForTimeoutKillsAndQuotesStderr) {
  SubprocessOptions options;
  options.label = "stuck child";
  // Stderr is written before the stdout line, so it is in its pipe by then.
  auto process =
      MustStart(Sh("echo about to hang >&2; echo hanging; exec tail -f /dev/null"), options);
  ASSERT_NE(process, nullptr);
  const pid_t pid = process->pid();
  {
    Result<std::string> line = process->WaitForStdoutLine("hanging", kWaitNs);
    ASSERT_TRUE(line.ok()) << line.status();
  }
  Result<int> waited = process->WaitFor(200 * kNsPerMs);
  ASSERT_FALSE(waited.ok());
  EXPECT_EQ(waited.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(waited.status().message().find("stuck child"), std::string::npos) << waited.status();
  EXPECT_NE(waited.status().message().find("about to hang"), std::string::npos) << waited.status();
  EXPECT_EQ(process->exit_code(), 128 + SIGKILL);
  EXPECT_NE(::kill(pid, 0), 0) << "killed and reaped: the pid is gone";
  // Once reaped, waiting again returns the recorded code at once.
  EXPECT_EQ(process->WaitFor(0).value_or(-1), 128 + SIGKILL);
}

TEST(SubprocessTest, WaitForStdoutLineConsumesLinesInOrder) {
  auto process = MustStart(Sh("echo one; echo ready at 7; echo two; exec tail -f /dev/null"));
  ASSERT_NE(process, nullptr);
  Result<std::string> ready = process->WaitForStdoutLine("ready", kWaitNs);
  ASSERT_TRUE(ready.ok()) << ready.status();
  EXPECT_EQ(*ready, "ready at 7");
  Result<std::string> two = process->WaitForStdoutLine("two", kWaitNs);
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(*two, "two");
  // "one" came before the consumed lines: it is not found again.
  EXPECT_EQ(process->WaitForStdoutLine("one", 50 * kNsPerMs).status().code(),
            StatusCode::kDeadlineExceeded);
  EXPECT_EQ(process->Stdout(), "one\nready at 7\ntwo\n");
}

TEST(SubprocessTest, WaitForStdoutLineReportsEarlyExit) {
  auto process = MustStart(Sh("echo starting; echo bad config >&2; exit 4"));
  ASSERT_NE(process, nullptr);
  Result<std::string> line = process->WaitForStdoutLine("listening on", kWaitNs);
  ASSERT_FALSE(line.ok());
  EXPECT_EQ(line.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(line.status().message().find("bad config"), std::string::npos) << line.status();
  EXPECT_EQ(process->WaitFor(kWaitNs).value_or(-1), 4);
}

TEST(SubprocessTest, LastLineWithoutNewlineCounts) {
  auto process = MustStart({"printf", "partial ready"});
  ASSERT_NE(process, nullptr);
  Result<std::string> line = process->WaitForStdoutLine("ready", kWaitNs);
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_EQ(*line, "partial ready");
}

TEST(SubprocessTest, SignalDeliversAndExitCodeReflectsIt) {
  auto process = MustStart({"tail", "-f", "/dev/null"});
  ASSERT_NE(process, nullptr);
  {
    const Status signalled = process->Signal(SIGTERM);
    ASSERT_TRUE(signalled.ok()) << signalled;
  }
  EXPECT_EQ(process->WaitFor(kWaitNs).value_or(-1), 128 + SIGTERM);
  EXPECT_EQ(process->Signal(SIGTERM).code(), StatusCode::kFailedPrecondition);
}

TEST(SubprocessTest, DestructorKillsTheWholeProcessGroup) {
  pid_t child = -1;
  pid_t grandchild = -1;
  {
    auto process = MustStart(Sh("tail -f /dev/null & echo grandchild $!; exec tail -f /dev/null"));
    ASSERT_NE(process, nullptr);
    child = process->pid();
    Result<std::string> line = process->WaitForStdoutLine("grandchild", kWaitNs);
    ASSERT_TRUE(line.ok()) << line.status();
    grandchild = std::stoi(line->substr(line->find(' ') + 1));
  }
  EXPECT_NE(::kill(child, 0), 0) << "the child was reaped, so no zombie remains";
  EXPECT_TRUE(ExitsSoon(grandchild)) << "the grandchild " << grandchild << " was left running";
}

TEST(SubprocessTest, FormatCommandLineQuotesOnlyWhereNeeded) {
  EXPECT_EQ(FormatCommandLine({"ip", "-n", "wharf-1-0-h0", "addr", "add", "198.18.1.1/24"}),
            "ip -n wharf-1-0-h0 addr add 198.18.1.1/24");
  EXPECT_EQ(FormatCommandLine({"echo", "a b", "it's", ""}), "echo 'a b' 'it'\\''s' ''");
}

}  // namespace
}  // namespace wharf::netns
