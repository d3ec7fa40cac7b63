// bench/child_process.h: ChildProcess, a forked or exec'd child that is
// always reaped. The baselines run their servers (an echo server, iperf3) in
// child processes so that client and server sit on separate cores, as the
// real comparison does; this file makes sure none of them outlives a run:
// the destructor kills and reaps, a wait has a timeout, and a child whose
// parent dies is killed by the kernel (PR_SET_PDEATHSIG).
//
// It does not hold what the children do; udp_pingpong.cc, tcp_pingpong.cc
// and iperf3_runner.cc bring their own bodies and argv.
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "bench/sockets.h"
#include "wharf/result.h"
#include "wharf/status.h"

namespace wharf::bench {

// How a child ended.
struct ExitInfo {
  bool signaled = false;  // killed by a signal (then `code` is the signal number)
  int code = 0;           // exit code, or signal number when `signaled`

  bool ok() const { return !signaled && code == 0; }
  // "exit code 1", "killed by signal 9 (Killed)".
  std::string ToString() const;
};

// Exit code of a forked child whose pinning to its CPU failed.
inline constexpr int kChildPinFailedExitCode = 125;

// A child's output (or any tool text) for an error message: trailing
// blanks dropped, the last `max_bytes` only, "(no output)" when empty.
std::string QuoteOutput(std::string text, size_t max_bytes = 600);

// Sleeps `ns` (startup polls of a child's readiness).
void SleepNs(DurationNs ns);

// Owns one child process. Move-only; the owner's thread only. The child gets
// SIGKILL when the thread that forked it exits, so fork from a thread that
// lives as long as the run (the benchmarks fork from their calling thread).
class ChildProcess {
 public:
  // Forks; the child pins itself to `cpu` (when >= 0), then leaves with
  // _exit(body()), so no parent-owned state (destructors, gtest, stdio
  // buffers) runs in it. `body` runs in a copy of a single-threaded parent:
  // it may use what was set up before the fork, but should stick to system
  // calls (no locks another thread could have held).
  static Result<ChildProcess> Fork(int cpu, const std::function<int()>& body);

  // Runs argv[0] (looked up in PATH unless it contains a '/') with argv,
  // pinned to `cpu` when >= 0, stdin from /dev/null and stdout+stderr into
  // an in-memory file that Output() reads. NotFound when argv[0] is not an
  // executable in PATH; a failure to exec or pin is reported here, not as a
  // mysterious exit code later.
  static Result<ChildProcess> Exec(const std::vector<std::string>& argv, int cpu);

  // The path Exec would run for `name`, or NotFound.
  static Result<std::string> FindExecutable(std::string_view name);

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  // Kills (SIGKILL) and reaps a child that is still running.
  ~ChildProcess();

  pid_t pid() const { return pid_; }

  // Reaps the child if it has exited, without blocking; nullopt while it runs.
  std::optional<ExitInfo> TryReap();

  // Waits up to `timeout_ns` for the child to exit. DeadlineExceeded leaves
  // it running (call KillAndReap or let the destructor do it).
  Result<ExitInfo> Wait(DurationNs timeout_ns);

  // SIGKILL (unless already reaped), then reap. Idempotent.
  ExitInfo KillAndReap();

  // Sends `signal`; waits up to `grace_ns` for an exit, then SIGKILL.
  ExitInfo Stop(int signal, DurationNs grace_ns);

  // What an Exec'd child wrote to stdout and stderr so far ("" for Fork).
  std::string Output() const;

 private:
  ChildProcess() = default;

  pid_t pid_ = -1;
  UniqueFd pidfd_;                // pidfd_open(pid_) to wait with a timeout; invalid if unsupported
  UniqueFd output_;               // memfd holding stdout+stderr of an Exec'd child
  std::optional<ExitInfo> exit_;  // set once reaped
};

}  // namespace wharf::bench
