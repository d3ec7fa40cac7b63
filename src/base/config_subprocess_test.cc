#include "base/config_subprocess.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WHARF_TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define WHARF_TEST_ASAN 1
#endif

namespace wharf {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using Clock = std::chrono::steady_clock;

// Work that never finishes and keeps a CPU busy, as a looping parser does.
std::string Spin() {
  volatile unsigned spins = 0;
  for (;;) spins = spins + 1u;
  return std::string();
}

// Work that never finishes and sleeps, as a child stuck on a lock does.
std::string Sleep() {
  for (;;) ::pause();
  return std::string();
}

SubprocessLimits Limits(int ms) {
  SubprocessLimits limits;
  limits.time_limit_ms = ms;
  return limits;
}

TEST(RunInSubprocessTest, ReturnsWhatTheWorkReturned) {
  Result<std::string> r = RunInSubprocess(Limits(10'000), [] { return std::string("hello"); });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, "hello");
  Result<std::string> empty = RunInSubprocess(Limits(10'000), [] { return std::string(); });
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(*empty, "");
}

TEST(RunInSubprocessTest, LargeResultArrivesWhole) {
  // Far more than a pipe holds: the parent must read while the child writes.
  std::string big(8 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7 + i / 4099);
  Result<std::string> r = RunInSubprocess(Limits(10'000), [&] { return big; });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(*r == big);
}

TEST(RunInSubprocessTest, TheWorkSeesTheCallersDataButChangesNothingOfIt) {
  int value = 1;
  Result<std::string> r = RunInSubprocess(Limits(10'000), [&] {
    value = 2;
    return std::to_string(value);
  });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, "2");
  EXPECT_EQ(value, 1);
}

TEST(RunInSubprocessTest, ALoopIsKilledAtTheDeadline) {
  const Clock::time_point start = Clock::now();
  Result<std::string> r = RunInSubprocess(Limits(200), Spin);
  const auto took = Clock::now() - start;
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded) << r.status();
  EXPECT_EQ(r.status().message(), "did not finish within 200 ms");
  EXPECT_GE(took, std::chrono::milliseconds(200));
  EXPECT_LT(took, std::chrono::seconds(10));
}

TEST(RunInSubprocessTest, AChildThatStaysAsleepIsReplacedUntilTimeRunsOut) {
  const Clock::time_point start = Clock::now();
  Result<std::string> r = RunInSubprocess(Limits(1000), Sleep);
  const auto took = Clock::now() - start;
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status();
  EXPECT_THAT(r.status().message(), MatchesRegex("child process stalled asleep, [0-9]+ times in "
                                                 "1000 ms \\(a lock held at the fork\\?\\)"));
  EXPECT_GE(took, std::chrono::milliseconds(1000));
  EXPECT_LT(took, std::chrono::seconds(10));
}

// As when another thread held the allocator's lock at the fork: the first
// child blocks for ever, a second one gets through.
TEST(RunInSubprocessTest, AChildStuckOnALockIsReplaced) {
  auto* attempts = static_cast<std::atomic<int>*>(
      ::mmap(nullptr, sizeof(std::atomic<int>), PROT_READ | PROT_WRITE,
             MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(attempts, MAP_FAILED);
  new (attempts) std::atomic<int>(0);
  const Clock::time_point start = Clock::now();
  Result<std::string> r = RunInSubprocess(Limits(10'000), [attempts] {
    if (attempts->fetch_add(1) == 0) Sleep();
    return std::string("second time lucky");
  });
  const auto took = Clock::now() - start;
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, "second time lucky");
  EXPECT_EQ(attempts->load(), 2);
  EXPECT_LT(took, std::chrono::seconds(2));
  ::munmap(attempts, sizeof(std::atomic<int>));
}

TEST(RunInSubprocessTest, AllocatingPastTheMemoryLimitIsResourceExhausted) {
#ifdef WHARF_TEST_ASAN
  GTEST_SKIP() << "AddressSanitizer reports running out of memory itself and exits";
#endif
  SubprocessLimits limits = Limits(10'000);
  limits.memory_limit_bytes = 64 << 20;
  const Clock::time_point start = Clock::now();
  Result<std::string> r = RunInSubprocess(limits, [] {
    std::vector<std::string> hog;
    for (;;) hog.emplace_back(1 << 20, 'x');  // touched, so really allocated
    return std::string();
  });
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status();
  EXPECT_EQ(r.status().message(), "ran out of memory (limit 64 MiB)");
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
}

TEST(RunInSubprocessTest, ABiggerResultThanTheMemoryLimitIsRefused) {
  SubprocessLimits limits = Limits(10'000);
  limits.memory_limit_bytes = 1 << 20;
  // Allocated before the fork and moved out in the child, so the child's
  // limit does not stop it; the parent's must.
  std::string big(2 << 20, 'x');
  Result<std::string> r = RunInSubprocess(limits, [&] { return std::move(big); });
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("larger than its memory limit"));
}

TEST(RunInSubprocessTest, DeathsAreInternalErrorsSayingHow) {
  Result<std::string> aborted = RunInSubprocess(Limits(10'000), []() -> std::string {
    ::signal(SIGABRT, SIG_DFL);
    std::abort();
  });
  EXPECT_EQ(aborted.status().code(), StatusCode::kInternal);
  EXPECT_EQ(aborted.status().message(), "child process was killed by signal 6 (SIGABRT)");

  Result<std::string> exited =
      RunInSubprocess(Limits(10'000), []() -> std::string { ::_exit(3); });
  EXPECT_EQ(exited.status().code(), StatusCode::kInternal);
  EXPECT_EQ(exited.status().message(), "child process exited with status 3 without a result");

  Result<std::string> threw = RunInSubprocess(
      Limits(10'000), []() -> std::string { throw std::runtime_error("no such thing"); });
  EXPECT_EQ(threw.status().code(), StatusCode::kInternal);
  EXPECT_EQ(threw.status().message(), "child process threw: no such thing");
}

TEST(RunInSubprocessTest, TheTestingHookRunsInTheChildBeforeTheAnswer) {
  SubprocessLimits limits = Limits(150);
  limits.in_child = [] { Spin(); };
  Result<std::string> r = RunInSubprocess(limits, [] { return std::string("never sent"); });
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded) << r.status();
}

TEST(RunInSubprocessTest, ManyThreadsAtOnce) {
  // Each thread's fork copies the others mid-flight (holding locks, pipes
  // open); every call must still get its own answer, hangs included.
  constexpr int kThreads = 6, kCalls = 15;
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &failures] {
      for (int i = 0; i < kCalls; ++i) {
        const std::string want = std::to_string(t) + "/" + std::to_string(i);
        if (t == 0 && i % 5 == 0) {
          Result<std::string> r = RunInSubprocess(Limits(100), Spin);
          if (r.status().code() != StatusCode::kDeadlineExceeded) failures[t] += r.status().message();
          continue;
        }
        Result<std::string> r =
            RunInSubprocess(Limits(20'000), [&] { return want + std::string(100'000, '.'); });
        if (!r.ok()) {
          failures[t] += r.status().message() + "; ";
        } else if (*r != want + std::string(100'000, '.')) {
          failures[t] += "wrong answer for " + want + "; ";
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
}

TEST(RunInSubprocessTest, WorksWhenSomeoneElseReapsChildren) {
  // A program that ignores SIGCHLD has its children reaped by the kernel:
  // the answer still arrives, and a hang is still cut off.
  struct sigaction ignore {}, old {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGCHLD, &ignore, &old), 0);
  Result<std::string> r = RunInSubprocess(Limits(10'000), [] { return std::string("fine"); });
  Result<std::string> hung = RunInSubprocess(Limits(100), Spin);
  ::sigaction(SIGCHLD, &old, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, "fine");
  EXPECT_EQ(hung.status().code(), StatusCode::kDeadlineExceeded) << hung.status();
}

}  // namespace
}  // namespace wharf
