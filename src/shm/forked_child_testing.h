// shm/forked_child_testing.h: test-only helpers for the cross-process tests
// of this module: a forked child that is always reaped (killed first if it
// overstays), and a spin backoff that cannot livelock two processes sharing
// one core. Not linked into wharf_shm; included by *_test.cc only.
#pragma once

#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>

#include "base/clock.h"

namespace wharf::shm::testutil {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Spin-wait step: a few pause instructions, then give the core away so that
// a peer process scheduled on the same core can make progress.
class Backoff {
 public:
  void Pause() {
    if (++spins_ < kSpinsBeforeYield) {
      CpuRelax();
    } else {
      spins_ = 0;
      ::sched_yield();
    }
  }

 private:
  static constexpr int kSpinsBeforeYield = 64;
  int spins_ = 0;
};

// Monotonic deadline for bounding test loops (tests may read the real clock;
// protocol code may not).
class Deadline {
 public:
  explicit Deadline(DurationNs budget_ns) : end_ns_(SystemClock::Get().NowNs() + budget_ns) {}
  bool Expired() const { return SystemClock::Get().NowNs() >= end_ns_; }
  // Milliseconds left, at least 0.
  int RemainingMs() const {
    const DurationNs left = end_ns_ - SystemClock::Get().NowNs();
    return left <= 0 ? 0 : static_cast<int>(left / kNsPerMs) + 1;
  }

 private:
  TimeNs end_ns_;
};

// A child process running `body`, which must return an exit code; the child
// leaves with _exit() so that no parent-owned state (gtest, destructors of
// inherited objects) runs in it. The destructor kills and reaps a child that
// is still around, so a failed ASSERT in the parent leaves no zombie.
class ForkedChild {
 public:
  explicit ForkedChild(const std::function<int()>& body) {
    pid_ = ::fork();
    if (pid_ == 0) ::_exit(body());
  }
  ~ForkedChild() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  ForkedChild(const ForkedChild&) = delete;
  ForkedChild& operator=(const ForkedChild&) = delete;

  bool started() const { return pid_ > 0 || exited_; }

  // Non-blocking: reaps the child if it has exited.
  bool Exited() {
    if (exited_) return true;
    int status = 0;
    if (pid_ > 0 && ::waitpid(pid_, &status, WNOHANG) == pid_) Reaped(status);
    return exited_;
  }

  // Waits for the child up to `budget_ns`; kills it on timeout. Returns a
  // description: "exit 0", "exit 3", "signal 9", "timeout".
  std::string Wait(DurationNs budget_ns) {
    const Deadline deadline(budget_ns);
    const int pidfd = pid_ > 0 ? static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0)) : -1;
    while (!Exited() && !deadline.Expired()) {
      if (pidfd >= 0) {
        pollfd p{.fd = pidfd, .events = POLLIN, .revents = 0};
        ::poll(&p, 1, deadline.RemainingMs());
      } else {
        ::sched_yield();  // no pidfd: poll the child's state instead
      }
    }
    if (pidfd >= 0) ::close(pidfd);
    if (Exited()) return result_;
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    Reaped(status);
    return "timeout";
  }

 private:
  void Reaped(int status) {
    exited_ = true;
    pid_ = -1;
    if (WIFEXITED(status)) {
      result_ = "exit " + std::to_string(WEXITSTATUS(status));
    } else if (WIFSIGNALED(status)) {
      result_ = "signal " + std::to_string(WTERMSIG(status));
    } else {
      result_ = "status " + std::to_string(status);
    }
  }

  pid_t pid_ = -1;
  bool exited_ = false;
  std::string result_;
};

}  // namespace wharf::shm::testutil
