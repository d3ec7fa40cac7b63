// Subprocess: fork/exec with captured output, bounded waits, and kill-and-reap
// on destruction. Between fork and exec the child makes only system calls
// (everything it needs is prepared before the fork), so it is safe however
// the parent is threaded or instrumented.
#include "netns/subprocess.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

extern char** environ;

namespace wharf::netns {
namespace {

// Where `ip netns add` binds namespaces (iproute2's NETNS_RUN_DIR).
constexpr const char* kNetnsRunDir = "/var/run/netns/";
// Used when the environment has no PATH.
constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
// Without pidfd_open, waits re-check the child this often.
constexpr int kNoPidfdSliceMs = 10;
// Bound on the child's few system calls between fork and exec.
constexpr int kExecReportTimeoutMs = 10'000;
// Pipe capacity asked for, so that chatty children rarely block on us.
constexpr int kPipeBytes = 1 << 20;
// How much of stderr/stdout an error message quotes.
constexpr size_t kTailBytes = 2000;

// What the child reports through the exec-error pipe when a step fails.
enum class ChildStage : int { kSetns = 1, kDup = 2, kExec = 3, kAffinity = 4 };
struct ChildError {
  ChildStage stage;
  int errno_value;
};

TimeNs Now() { return SystemClock::Get().NowNs(); }

int RemainingMs(TimeNs deadline) {
  const DurationNs left = deadline - Now();
  if (left <= 0) return 0;
  return static_cast<int>(std::min<DurationNs>((left + kNsPerMs - 1) / kNsPerMs, INT32_MAX));
}

std::string Tail(const std::string& text) {
  if (text.size() <= kTailBytes) return text;
  size_t start = text.size() - kTailBytes;
  const size_t newline = text.find('\n', start);
  if (newline != std::string::npos && newline + 1 < text.size()) start = newline + 1;
  return "..." + text.substr(start);
}

bool IsExecutableFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// The path execve gets: argv0 itself if it names a path, else the first
// executable match in PATH. Resolved before the fork because execvp may
// allocate, which a forked child of a threaded parent must not.
Result<std::string> ResolveExecutable(const std::string& argv0) {
  if (argv0.find('/') != std::string::npos) return argv0;
  const char* path_env = std::getenv("PATH");
  const std::string_view path = path_env != nullptr ? path_env : kDefaultPath;
  size_t begin = 0;
  while (begin <= path.size()) {
    size_t end = path.find(':', begin);
    if (end == std::string_view::npos) end = path.size();
    std::string dir(path.substr(begin, end - begin));
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + argv0;
    if (IsExecutableFile(candidate)) return candidate;
    begin = end + 1;
  }
  return NotFoundError("'" + argv0 + "' is not an executable in PATH (" + std::string(path) + ")");
}

// The caller's environment with `extra` entries added or overriding.
Result<std::vector<std::string>> BuildEnvironment(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry)
    env.emplace_back(*entry);
  for (const std::string& item : extra) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidArgumentError("environment entry '" + item + "' is not KEY=VALUE");
    }
    const std::string_view key(item.data(), eq + 1);  // "KEY="
    std::erase_if(env, [&](const std::string& e) { return e.starts_with(key); });
    env.push_back(item);
  }
  return env;
}

std::vector<char*> CStringArray(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

void CloseFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Pipe ends we own until they are handed to the child or the Subprocess.
struct Pipe {
  int read_end = -1;
  int write_end = -1;
  Status Open(const char* what) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return ErrnoToStatus(errno, std::string("pipe for ") + what);
    read_end = fds[0];
    write_end = fds[1];
    return OkStatus();
  }
  ~Pipe() {
    CloseFd(read_end);
    CloseFd(write_end);
  }
};

// In the child: make `fd` the descriptor `target`, inheritable across exec.
bool MoveFdTo(int fd, int target) {
  if (fd == target) {
    const int flags = ::fcntl(fd, F_GETFD);
    return flags >= 0 && ::fcntl(fd, F_SETFD, flags & ~FD_CLOEXEC) == 0;
  }
  return ::dup2(fd, target) == target;
}

[[noreturn]] void ChildFail(int report_fd, ChildStage stage) {
  const ChildError error{stage, errno};
  [[maybe_unused]] ssize_t n = ::write(report_fd, &error, sizeof(error));
  ::_exit(127);
}

// A write to a pipe whose reader has gone raises SIGPIPE in the writing
// thread; block it around the write and swallow the one it may raise, so that
// a child that exits without reading its stdin cannot kill the test.
ssize_t WriteWithoutSigpipe(int fd, const char* data, size_t size) {
  sigset_t pipe_set;
  sigset_t old_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
  const ssize_t n = ::write(fd, data, size);
  const int saved_errno = errno;
  if (n < 0 && saved_errno == EPIPE) {
    const timespec zero{};
    ::sigtimedwait(&pipe_set, nullptr, &zero);
  }
  ::pthread_sigmask(SIG_SETMASK, &old_set, nullptr);
  errno = saved_errno;
  return n;
}

std::string DescribeChildError(const ChildError& error, const std::string& path,
                               const std::string& netns) {
  switch (error.stage) {
    case ChildStage::kSetns:
      return "setns into network namespace '" + netns + "'";
    case ChildStage::kDup:
      return "redirecting stdio of the child";
    case ChildStage::kExec:
      return "exec " + path;
    case ChildStage::kAffinity:
      return "pinning the child to its CPU";
  }
  return "starting the child";
}

}  // namespace

std::string FormatCommandLine(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& arg : argv) {
    if (!out.empty()) out += ' ';
    const bool plain = !arg.empty() && std::all_of(arg.begin(), arg.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("_@%+=:,./-", c) != nullptr;
    });
    if (plain) {
      out += arg;
      continue;
    }
    out += '\'';
    for (char c : arg) {
      if (c == '\'') {
        out += "'\\''";
      } else {
        out += c;
      }
    }
    out += '\'';
  }
  return out;
}

Subprocess::Subprocess(std::vector<std::string> argv, std::string label)
    : argv_(std::move(argv)), command_line_(FormatCommandLine(argv_)), label_(std::move(label)) {}

Result<std::unique_ptr<Subprocess>> Subprocess::Start(std::vector<std::string> argv,
                                                      SubprocessOptions options) {
  if (argv.empty() || argv[0].empty()) return InvalidArgumentError("Subprocess: empty argv");
  WHARF_ASSIGN_OR_RETURN(const std::string path, ResolveExecutable(argv[0]));
  WHARF_ASSIGN_OR_RETURN(std::vector<std::string> env, BuildEnvironment(options.extra_env));

  int netns_fd = -1;
  if (!options.netns.empty()) {
    if (options.netns.find('/') != std::string::npos || options.netns == "." ||
        options.netns == "..") {
      return InvalidArgumentError("bad network namespace name '" + options.netns + "'");
    }
    const std::string netns_path = kNetnsRunDir + options.netns;
    netns_fd = ::open(netns_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (netns_fd < 0) {
      return ErrnoToStatus(errno, "network namespace '" + options.netns + "' (" + netns_path + ")");
    }
  }
  // Closes netns_fd on every path out of here; the child has its own copy.
  struct FdCloser {
    int& fd;
    ~FdCloser() { CloseFd(fd); }
  } netns_closer{netns_fd};

  Pipe in;
  Pipe out;
  Pipe err;
  Pipe report;  // child -> parent: a ChildError, or EOF when exec succeeded
  WHARF_RETURN_IF_ERROR(out.Open("stdout"));
  WHARF_RETURN_IF_ERROR(err.Open("stderr"));
  WHARF_RETURN_IF_ERROR(report.Open("exec report"));
  if (options.stdin_data.has_value()) {
    WHARF_RETURN_IF_ERROR(in.Open("stdin"));
  } else {
    in.read_end = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (in.read_end < 0) return ErrnoToStatus(errno, "open /dev/null");
  }

  if (options.cpu >= CPU_SETSIZE) {
    return InvalidArgumentError("CPU " + std::to_string(options.cpu) + " is out of range");
  }
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (options.cpu >= 0) CPU_SET(options.cpu, &cpus);
  const bool pin = options.cpu >= 0;

  auto process = std::unique_ptr<Subprocess>(new Subprocess(argv, std::move(options.label)));
  std::vector<char*> c_argv = CStringArray(argv);
  std::vector<char*> c_env = CStringArray(env);
  const pid_t parent_pid = ::getpid();

  const pid_t pid = ::fork();
  if (pid < 0) return ErrnoToStatus(errno, "fork for " + process->Describe());
  if (pid == 0) {
    // Child: system calls only from here to exec.
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent_pid) ::_exit(127);  // the parent died before prctl
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    ::sigaction(SIGPIPE, &default_action, nullptr);  // an ignored signal stays ignored over exec
    if (netns_fd >= 0 && ::setns(netns_fd, CLONE_NEWNET) != 0) {
      ChildFail(report.write_end, ChildStage::kSetns);
    }
    if (pin && ::sched_setaffinity(0, sizeof(cpus), &cpus) != 0) {
      ChildFail(report.write_end, ChildStage::kAffinity);
    }
    if (!MoveFdTo(in.read_end, STDIN_FILENO) || !MoveFdTo(out.write_end, STDOUT_FILENO) ||
        !MoveFdTo(err.write_end, STDERR_FILENO)) {
      ChildFail(report.write_end, ChildStage::kDup);
    }
    // Descriptors the test process opened without O_CLOEXEC must not leak
    // into children (a stray holder of ctest's output pipe stalls ctest).
    ::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
    ::execve(path.c_str(), c_argv.data(), c_env.data());
    ChildFail(report.write_end, ChildStage::kExec);
  }

  // Parent. Also set the group here so that Kill() works even if it runs
  // before the child got to its own setpgid.
  process->pid_ = pid;
  ::setpgid(pid, pid);
  CloseFd(in.read_end);
  CloseFd(out.write_end);
  CloseFd(err.write_end);
  CloseFd(report.write_end);
  process->stdout_fd_ = std::exchange(out.read_end, -1);
  process->stderr_fd_ = std::exchange(err.read_end, -1);
  process->stdin_fd_ = std::exchange(in.write_end, -1);
  if (process->stdin_fd_ >= 0) process->stdin_data_ = std::move(*options.stdin_data);

  ChildError child_error{};
  size_t got = 0;
  const TimeNs report_deadline = Now() + kExecReportTimeoutMs * kNsPerMs;
  while (got < sizeof(child_error)) {
    pollfd p{.fd = report.read_end, .events = POLLIN, .revents = 0};
    const int ready = ::poll(&p, 1, RemainingMs(report_deadline));
    if (ready == 0) {
      process->Kill();
      return DeadlineExceededError(process->Describe() + ": the child did not reach exec");
    }
    if (ready < 0 && errno == EINTR) continue;
    const ssize_t n = ::read(report.read_end, reinterpret_cast<char*>(&child_error) + got,
                             sizeof(child_error) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: exec succeeded and closed the report pipe
    got += static_cast<size_t>(n);
  }
  if (got == sizeof(child_error)) {
    process->Kill();  // reaps the child, which already _exit()ed
    return ErrnoToStatus(
        child_error.errno_value,
        process->Describe() + ": " + DescribeChildError(child_error, path, options.netns));
  }

  process->pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  for (int fd : {process->stdout_fd_, process->stderr_fd_, process->stdin_fd_}) {
    if (fd < 0) continue;
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    ::fcntl(fd, F_SETPIPE_SZ, kPipeBytes);  // best effort: pipe-max-size may be lower
  }
  if (process->stdin_fd_ >= 0 && process->stdin_data_.empty()) CloseFd(process->stdin_fd_);
  process->DrainNonBlocking();
  return process;
}

Subprocess::~Subprocess() {
  Kill();
  CloseFd(pidfd_);
  CloseFd(stdin_fd_);
  CloseFd(stdout_fd_);
  CloseFd(stderr_fd_);
}

std::string Subprocess::Describe() const {
  if (label_.empty()) return "`" + command_line_ + "`";
  return label_ + " `" + command_line_ + "`";
}

std::string Subprocess::StderrTail() const {
  if (stderr_.empty()) return "(stderr empty)";
  return "stderr: " + Tail(stderr_);
}

bool Subprocess::TryReap() {
  if (exit_code_.has_value()) return true;
  if (pid_ <= 0) return false;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == 0) return false;
  if (r == pid_) {
    exit_code_ = WIFEXITED(status)     ? WEXITSTATUS(status)
                 : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                       : -1;
  } else if (errno == EINTR) {
    return false;
  } else {
    exit_code_ = -1;  // ECHILD: someone else reaped it (SIGCHLD set to SIG_IGN)
  }
  CloseFd(pidfd_);
  return true;
}

void Subprocess::DrainNonBlocking() {
  char buffer[16384];
  for (auto [fd, sink] : {std::pair<int*, std::string*>{&stdout_fd_, &stdout_},
                          std::pair<int*, std::string*>{&stderr_fd_, &stderr_}}) {
    while (*fd >= 0) {
      const ssize_t n = ::read(*fd, buffer, sizeof(buffer));
      if (n > 0) {
        sink->append(buffer, static_cast<size_t>(n));
      } else if (n == 0) {
        CloseFd(*fd);  // EOF: every writer (the child and its children) is gone
      } else if (errno == EINTR) {
        continue;
      } else {
        if (errno != EAGAIN) CloseFd(*fd);
        break;
      }
    }
  }
  while (stdin_fd_ >= 0 && stdin_offset_ < stdin_data_.size()) {
    const ssize_t n = WriteWithoutSigpipe(stdin_fd_, stdin_data_.data() + stdin_offset_,
                                          stdin_data_.size() - stdin_offset_);
    if (n > 0) {
      stdin_offset_ += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      if (n < 0 && errno != EAGAIN) CloseFd(stdin_fd_);  // EPIPE: the child stopped reading
      break;
    }
  }
  if (stdin_fd_ >= 0 && stdin_offset_ >= stdin_data_.size()) CloseFd(stdin_fd_);
}

void Subprocess::PumpOnce(TimeNs deadline) {
  pollfd fds[4];
  nfds_t count = 0;
  if (stdout_fd_ >= 0) fds[count++] = {.fd = stdout_fd_, .events = POLLIN, .revents = 0};
  if (stderr_fd_ >= 0) fds[count++] = {.fd = stderr_fd_, .events = POLLIN, .revents = 0};
  if (stdin_fd_ >= 0) fds[count++] = {.fd = stdin_fd_, .events = POLLOUT, .revents = 0};
  const bool running = !exit_code_.has_value();
  if (running && pidfd_ >= 0) fds[count++] = {.fd = pidfd_, .events = POLLIN, .revents = 0};
  int timeout_ms = RemainingMs(deadline);
  if (running && pidfd_ < 0) timeout_ms = std::min(timeout_ms, kNoPidfdSliceMs);
  if (count > 0 || timeout_ms > 0) ::poll(fds, count, timeout_ms);
  DrainNonBlocking();
  TryReap();
}

Result<int> Subprocess::WaitFor(DurationNs timeout_ns) {
  const TimeNs deadline = Now() + timeout_ns;
  while (!TryReap()) {
    if (Now() >= deadline) {
      Kill();
      return DeadlineExceededError(Describe() + " did not exit within " +
                                   std::to_string(timeout_ns / kNsPerMs) + " ms and was killed; " +
                                   StderrTail());
    }
    PumpOnce(deadline);
  }
  DrainNonBlocking();  // whatever it wrote just before exiting
  return *exit_code_;
}

Result<std::string> Subprocess::WaitForStdoutLine(std::string_view needle, DurationNs timeout_ns) {
  const TimeNs deadline = Now() + timeout_ns;
  DrainNonBlocking();
  while (true) {
    size_t newline;
    while ((newline = stdout_.find('\n', stdout_scan_offset_)) != std::string::npos) {
      std::string line = stdout_.substr(stdout_scan_offset_, newline - stdout_scan_offset_);
      stdout_scan_offset_ = newline + 1;
      if (line.find(needle) != std::string::npos) return line;
    }
    if (stdout_fd_ < 0) {
      // No more output will come; a last line without '\n' still counts.
      std::string rest = stdout_.substr(stdout_scan_offset_);
      stdout_scan_offset_ = stdout_.size();
      if (rest.find(needle) != std::string::npos) return rest;
      TryReap();
      const std::string how = exit_code_.has_value()
                                  ? "exited with code " + std::to_string(*exit_code_)
                                  : "closed stdout";
      return FailedPreconditionError(Describe() + " " + how + " before printing a line with '" +
                                     std::string(needle) + "'; " + StderrTail());
    }
    if (Now() >= deadline) {
      return DeadlineExceededError(Describe() + " printed no line with '" + std::string(needle) +
                                   "' within " + std::to_string(timeout_ns / kNsPerMs) +
                                   " ms; stdout: " + Tail(stdout_) + "; " + StderrTail());
    }
    PumpOnce(deadline);
  }
}

Status Subprocess::Signal(int signo) {
  if (TryReap()) {
    return FailedPreconditionError(Describe() + " already exited with code " +
                                   std::to_string(*exit_code_));
  }
  if (::kill(-pid_, signo) != 0 && ::kill(pid_, signo) != 0) {
    return ErrnoToStatus(errno, "signal " + std::to_string(signo) + " to " + Describe());
  }
  return OkStatus();
}

void Subprocess::Kill() {
  if (pid_ <= 0 || exit_code_.has_value()) return;
  // The group takes grandchildren with it; the pid alone covers a child that
  // has not joined its group yet. The pid cannot be reused before we reap.
  ::kill(-pid_, SIGKILL);
  ::kill(pid_, SIGKILL);
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &status, 0);
  } while (r < 0 && errno == EINTR);
  if (r == pid_) {
    exit_code_ = WIFEXITED(status)     ? WEXITSTATUS(status)
                 : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                       : -1;
  } else {
    exit_code_ = -1;
  }
  CloseFd(pidfd_);
  DrainNonBlocking();
}

const std::string& Subprocess::Stdout() {
  DrainNonBlocking();
  return stdout_;
}

const std::string& Subprocess::Stderr() {
  DrainNonBlocking();
  return stderr_;
}

Result<CommandOutput> RunCommand(std::vector<std::string> argv, SubprocessOptions options,
                                 DurationNs timeout_ns) {
  WHARF_ASSIGN_OR_RETURN(std::unique_ptr<Subprocess> process,
                         Subprocess::Start(std::move(argv), std::move(options)));
  WHARF_ASSIGN_OR_RETURN(const int exit_code, process->WaitFor(timeout_ns));
  CommandOutput output;
  output.exit_code = exit_code;
  output.stdout_text = process->Stdout();
  output.stderr_text = process->Stderr();
  return output;
}

Result<CommandOutput> RunChecked(std::vector<std::string> argv, SubprocessOptions options,
                                 DurationNs timeout_ns) {
  std::string where = "`" + FormatCommandLine(argv) + "`";
  if (!options.netns.empty()) where += " in network namespace " + options.netns;
  std::string input;
  if (options.stdin_data.has_value()) input = *options.stdin_data;
  WHARF_ASSIGN_OR_RETURN(CommandOutput output,
                         RunCommand(std::move(argv), std::move(options), timeout_ns));
  if (output.exit_code == 0) return output;
  std::string message = where + " exited with code " + std::to_string(output.exit_code);
  std::string diagnostics = output.stderr_text.empty() ? output.stdout_text : output.stderr_text;
  while (!diagnostics.empty() && diagnostics.back() == '\n') diagnostics.pop_back();
  message += ": " + (diagnostics.empty() ? std::string("(no output)") : Tail(diagnostics));
  if (!input.empty()) message += "\n-- its stdin was:\n" + Tail(input);
  return InternalError(std::move(message));
}

}  // namespace wharf::netns
