// netns/subprocess.h: child processes for the multi-host tests. A Subprocess
// is one fork/exec of an argv (never a shell string), optionally inside a
// named network namespace, with stdout and stderr captured through pipes and
// every wait bounded by a deadline. RunCommand runs one to completion.
//
// Holds no knowledge of clusters (netns_cluster.h builds on RunCommand,
// netns_process.h places a Subprocess on a cluster host) and no protocol code.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "wharf/result.h"

namespace wharf::netns {

struct SubprocessOptions {
  // Network namespace to run in, by its `ip netns` name (a file under
  // /var/run/netns); empty runs in the caller's namespace.
  std::string netns{};
  // "KEY=VALUE" entries added to (or overriding) the caller's environment.
  std::vector<std::string> extra_env{};
  // Written to the child's stdin, which is then closed; nullopt gives the
  // child /dev/null.
  std::optional<std::string> stdin_data{};
  // Names the process in error messages ("host 1 (wharf-12-0-h1)"); the
  // command line is always included as well.
  std::string label{};
  // >= 0: the child pins itself to this CPU (sched_setaffinity, as taskset
  // does) before exec, so every thread it starts stays there; a CPU it may
  // not use fails the start. -1: the caller's affinity.
  int cpu = -1;
};

// The outcome of a command run to completion. The fields are not called
// stdout/stderr because <cstdio> defines those as macros.
struct CommandOutput {
  // The exit status, or 128 + the signal number if a signal ended it (as a
  // shell reports it).
  int exit_code = -1;
  std::string stdout_text{};
  std::string stderr_text{};
};

// One child process, owned by whoever holds the unique_ptr; not thread-safe.
//
// The child runs in its own process group, is killed if the thread that
// started it dies (PR_SET_PDEATHSIG), and is killed and reaped by the
// destructor, so neither a failed assertion nor a crashed test leaves strays
// or zombies behind.
//
// Output is read into memory whenever a member function runs; a child that
// writes more than the pipe holds (1 MiB where the kernel allows, else 64 KiB)
// between two calls blocks until the next one. Children that print readiness
// lines must flush them (stdout to a pipe is fully buffered by stdio).
class Subprocess {
 public:
  // Starts argv[0] (searched in PATH unless it contains '/'). Errors: an empty
  // argv or a missing binary (kNotFound / kInvalidArgument), an unknown
  // namespace (kNotFound), or a failed setns/exec reported by the child.
  static Result<std::unique_ptr<Subprocess>> Start(std::vector<std::string> argv,
                                                   SubprocessOptions options = {});

  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  // The argv, quoted where needed, for messages.
  const std::string& command_line() const { return command_line_; }

  // Waits up to `timeout_ns` for the child to exit and returns its exit code
  // (128 + signal number if a signal ended it). On timeout the child is
  // killed with SIGKILL and the result is kDeadlineExceeded carrying the tail
  // of its stderr. Returns at once if the child was already reaped.
  Result<int> WaitFor(DurationNs timeout_ns);

  // Waits until a complete stdout line containing `needle` appears and
  // returns that line (without '\n'). Lines are consumed: the next call looks
  // only at lines after the one returned. kDeadlineExceeded on timeout (the
  // child keeps running); kFailedPrecondition if stdout closes first.
  Result<std::string> WaitForStdoutLine(std::string_view needle, DurationNs timeout_ns);

  // Sends `signo` to the child's process group, e.g. SIGTERM for a graceful
  // stop followed by WaitFor. kFailedPrecondition once the child is reaped.
  Status Signal(int signo);

  // SIGKILLs the process group and reaps the child. Idempotent.
  void Kill();

  // Everything captured so far, after reading what is available now.
  const std::string& Stdout();
  const std::string& Stderr();

  // The exit code once the child has been reaped.
  std::optional<int> exit_code() const { return exit_code_; }

 private:
  Subprocess(std::vector<std::string> argv, std::string label);

  // Waits until `deadline` for output, stdin room, or child exit, handles
  // what is ready, and reaps the child if it exited. Returns after one round.
  void PumpOnce(TimeNs deadline);
  // Reads or writes whatever the pipes accept without blocking.
  void DrainNonBlocking();
  // Non-blocking waitpid; records the exit code.
  bool TryReap();
  // "<label>: `cmd`" for messages.
  std::string Describe() const;
  // Up to the last few lines of stderr, for error messages.
  std::string StderrTail() const;

  std::vector<std::string> argv_;
  std::string command_line_;
  std::string label_;
  pid_t pid_ = -1;
  // A pidfd that becomes readable when the child exits, or -1 where the
  // kernel lacks pidfd_open (then waits poll in short slices).
  int pidfd_ = -1;
  // Parent ends of the pipes; -1 once closed (EOF seen or all stdin written).
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  int stderr_fd_ = -1;
  // Bytes of stdin_data not yet written, from stdin_offset_ on.
  std::string stdin_data_;
  size_t stdin_offset_ = 0;
  std::string stdout_;
  std::string stderr_;
  // Offset in stdout_ of the first line WaitForStdoutLine has not consumed.
  size_t stdout_scan_offset_ = 0;
  // Set once waitpid reported the child; the pid is never signalled after.
  std::optional<int> exit_code_;
};

// Runs argv to completion within `timeout_ns`. A non-zero exit is not an
// error here (see exit_code); a timeout (child killed) or a failed start is.
Result<CommandOutput> RunCommand(std::vector<std::string> argv, SubprocessOptions options,
                                 DurationNs timeout_ns);

// RunCommand, with a non-zero exit turned into kInternal naming the command
// line, the exit code and the child's stderr.
Result<CommandOutput> RunChecked(std::vector<std::string> argv, SubprocessOptions options,
                                 DurationNs timeout_ns);

// argv joined by spaces, each argument single-quoted if it holds anything
// beyond [A-Za-z0-9_@%+=:,./-]; for messages only, never for a shell.
std::string FormatCommandLine(const std::vector<std::string>& argv);

}  // namespace wharf::netns
