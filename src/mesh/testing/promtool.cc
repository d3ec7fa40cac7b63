// The promtool runner of the mesh tests: posix_spawn, pipes both ways
// under one deadline, and a reaper that never leaves the child behind.
#include "mesh/testing/promtool.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include "base/unique_fd.h"
#include "wharf/status.h"

namespace wharf::mesh::testing {

namespace {

// `promtool check metrics` (Debian package `prometheus`): parses the
// exposition on stdin and lints it; prints every problem; exits 0 only when
// it parsed. Killed if it takes longer than this.
constexpr std::chrono::seconds kPromtoolTimeout{30};

// Kills and reaps the child unless it was reaped already.
struct ChildReaper {
  pid_t pid = -1;
  ~ChildReaper() {
    if (pid <= 0) return;
    ::kill(pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
};

int ExitCode(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return -1;
}

}  // namespace

// SIGPIPE is blocked in this thread while writing, so a promtool that
// stops reading early (a parse error) costs an EPIPE, not the test binary.
Result<ToolRun> RunPromtool(std::string_view input) {
  int in_pipe[2];
  int out_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0) return ErrnoToStatus(errno, "pipe2");
  UniqueFd child_in(in_pipe[0]);
  UniqueFd to_child(in_pipe[1]);
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return ErrnoToStatus(errno, "pipe2");
  UniqueFd from_child(out_pipe[0]);
  UniqueFd child_out(out_pipe[1]);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, child_in.get(), STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, child_out.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, child_out.get(), STDERR_FILENO);
  char arg0[] = "promtool";
  char arg1[] = "check";
  char arg2[] = "metrics";
  char* argv[] = {arg0, arg1, arg2, nullptr};
  ChildReaper child;
  const int spawn_error = ::posix_spawnp(&child.pid, "promtool", &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawn_error == ENOENT) {
    child.pid = -1;
    return NotFoundError(
        "promtool is not in PATH: install the Debian package `prometheus` "
        "(apt-get install prometheus; scripts/packages.txt lists it)");
  }
  if (spawn_error != 0) {
    child.pid = -1;
    return ErrnoToStatus(spawn_error, "posix_spawnp promtool");
  }
  child_in.Reset();
  child_out.Reset();
  if (::fcntl(to_child.get(), F_SETFL, O_NONBLOCK) != 0) return ErrnoToStatus(errno, "fcntl");

  sigset_t sigpipe;
  sigemptyset(&sigpipe);
  sigaddset(&sigpipe, SIGPIPE);
  sigset_t old_mask;
  pthread_sigmask(SIG_BLOCK, &sigpipe, &old_mask);

  const auto deadline = std::chrono::steady_clock::now() + kPromtoolTimeout;
  ToolRun run;
  Status status;
  size_t written = 0;
  if (input.empty()) to_child.Reset();
  while (from_child.valid()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      status = DeadlineExceededError("promtool check metrics ran past 30 s; output so far: " +
                                     run.output);
      break;
    }
    pollfd fds[2] = {{.fd = from_child.get(), .events = POLLIN, .revents = 0},
                     {.fd = to_child.get(), .events = POLLOUT, .revents = 0}};
    const nfds_t count = to_child.valid() ? 2 : 1;
    if (::poll(fds, count, static_cast<int>(left.count())) < 0) {
      if (errno == EINTR) continue;
      status = ErrnoToStatus(errno, "poll");
      break;
    }
    if (fds[0].revents != 0) {
      char buf[4096];
      const ssize_t n = ::read(from_child.get(), buf, sizeof(buf));
      if (n > 0) {
        run.output.append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        from_child.Reset();
      }
    }
    if (count == 2 && fds[1].revents != 0) {
      const ssize_t n = ::write(to_child.get(), input.data() + written, input.size() - written);
      if (n > 0) written += static_cast<size_t>(n);
      if ((n < 0 && errno != EAGAIN && errno != EINTR) || written == input.size()) {
        to_child.Reset();  // EOF for promtool, or it stopped reading (EPIPE)
      }
    }
  }
  // Take a SIGPIPE our writes raised before unblocking, or it would kill us.
  const timespec no_wait{};
  while (::sigtimedwait(&sigpipe, nullptr, &no_wait) == SIGPIPE) {
  }
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  if (!status.ok()) return status;

  // Output closed: promtool is exiting. Wait for it, still within the deadline.
  const UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, child.pid, 0)));
  for (;;) {
    int wait_status = 0;
    const pid_t done = ::waitpid(child.pid, &wait_status, WNOHANG);
    if (done == child.pid) {
      child.pid = -1;
      run.exit_code = ExitCode(wait_status);
      return run;
    }
    if (done < 0 && errno != EINTR) return ErrnoToStatus(errno, "waitpid promtool");
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return DeadlineExceededError("promtool closed its output but did not exit in 30 s");
    }
    // Without a pidfd (an old kernel), re-check every 10 ms.
    pollfd fd{.fd = pidfd.get(), .events = POLLIN, .revents = 0};
    ::poll(&fd, pidfd.valid() ? 1 : 0, pidfd.valid() ? static_cast<int>(left.count()) : 10);
  }
}

void ExpectPromtoolSilent(const std::string& exposition) {
  Result<ToolRun> run = RunPromtool(exposition);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->exit_code, 0) << run->output << "exposition:\n" << exposition;
  EXPECT_EQ(run->output, "") << "exposition:\n" << exposition;
}

}  // namespace wharf::mesh::testing
