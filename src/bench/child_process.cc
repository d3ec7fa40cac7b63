// ChildProcess: fork/exec, wait with timeout via pidfd, always reap.
#include "bench/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "bench/affinity.h"

extern char** environ;

namespace wharf::bench {
namespace {

// Largest single sleep inside Wait, so an EINTR costs at most this much.
constexpr DurationNs kWaitSliceNs = 100 * kNsPerMs;

ExitInfo FromWaitStatus(int status) {
  ExitInfo info;
  if (WIFSIGNALED(status)) {
    info.signaled = true;
    info.code = WTERMSIG(status);
  } else if (WIFEXITED(status)) {
    info.code = WEXITSTATUS(status);
  }
  return info;
}

// Runs in a freshly forked child: die with the parent, and make sure the
// parent did not die between fork and prctl.
void DieWithParent(pid_t parent) {
  (void)::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(126);
}

UniqueFd OpenPidFd(pid_t pid) {
#ifdef SYS_pidfd_open
  const auto fd = ::syscall(SYS_pidfd_open, pid, 0);
  if (fd >= 0) {
    (void)::fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
    return UniqueFd(static_cast<int>(fd));
  }
#else
  (void)pid;
#endif
  return UniqueFd();
}

}  // namespace

void SleepNs(DurationNs ns) {
  timespec ts{};
  ts.tv_sec = static_cast<decltype(ts.tv_sec)>(ns / kNsPerSec);
  ts.tv_nsec = static_cast<decltype(ts.tv_nsec)>(ns % kNsPerSec);
  ::nanosleep(&ts, nullptr);
}

std::string QuoteOutput(std::string text, size_t max_bytes) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (text.size() > max_bytes) text = "..." + text.substr(text.size() - max_bytes);
  return text.empty() ? "(no output)" : text;
}

std::string ExitInfo::ToString() const {
  if (!signaled) return "exit code " + std::to_string(code);
  const char* name = ::strsignal(code);
  return "killed by signal " + std::to_string(code) + (name ? " (" + std::string(name) + ")" : "");
}

Result<std::string> ChildProcess::FindExecutable(std::string_view name) {
  if (name.empty()) return InvalidArgumentError("empty program name");
  if (name.find('/') != std::string_view::npos) {
    std::string path(name);
    if (::access(path.c_str(), X_OK) == 0) return path;
    return NotFoundError(path + ": no such executable");
  }
  const char* env_path = std::getenv("PATH");
  std::string_view dirs = env_path ? env_path : "/usr/local/bin:/usr/bin:/bin";
  while (true) {
    size_t colon = dirs.find(':');
    std::string dir(dirs.substr(0, colon));
    if (dir.empty()) dir = ".";
    std::string path = dir + "/" + std::string(name);
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(path.c_str(), X_OK) == 0) {
      return path;
    }
    if (colon == std::string_view::npos) break;
    dirs.remove_prefix(colon + 1);
  }
  return NotFoundError(std::string(name) + ": not found in PATH");
}

Result<ChildProcess> ChildProcess::Fork(int cpu, const std::function<int()>& body) {
  const pid_t parent = ::getpid();
  ChildProcess child;
  child.pid_ = ::fork();
  if (child.pid_ < 0) return ErrnoToStatus(errno, "fork");
  if (child.pid_ == 0) {
    DieWithParent(parent);
    if (cpu >= 0 && !PinCallingThread(cpu)) ::_exit(kChildPinFailedExitCode);
    ::_exit(body());
  }
  child.pidfd_ = OpenPidFd(child.pid_);
  return child;
}

Result<ChildProcess> ChildProcess::Exec(const std::vector<std::string>& argv, int cpu) {
  if (argv.empty()) return InvalidArgumentError("exec: empty argv");
  WHARF_ASSIGN_OR_RETURN(std::string path, FindExecutable(argv[0]));

  // Everything the child needs is prepared here: between fork and exec it
  // only makes system calls.
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  UniqueFd output(::memfd_create("wharf-bench-child-output", MFD_CLOEXEC));
  if (!output.valid()) return ErrnoToStatus(errno, "memfd_create");
  UniqueFd dev_null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!dev_null.valid()) return ErrnoToStatus(errno, "open /dev/null");
  // The child writes {stage, errno} here if it fails before exec; the pipe
  // closes (CLOEXEC) when exec succeeds, so an empty read means "running".
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) return ErrnoToStatus(errno, "pipe2");
  UniqueFd report_read(report[0]);
  UniqueFd report_write(report[1]);

  const pid_t parent = ::getpid();
  ChildProcess child;
  child.pid_ = ::fork();
  if (child.pid_ < 0) return ErrnoToStatus(errno, "fork");
  if (child.pid_ == 0) {
    DieWithParent(parent);
    int failure[2] = {0, 0};  // {stage: 1 pin, 2 redirect, 3 exec; errno}
    if (cpu >= 0 && !PinCallingThread(cpu)) {
      failure[0] = 1;
    } else if (::dup2(dev_null.get(), STDIN_FILENO) < 0 ||
               ::dup2(output.get(), STDOUT_FILENO) < 0 || ::dup2(output.get(), STDERR_FILENO) < 0) {
      failure[0] = 2;
    } else {
      ::execve(path.c_str(), args.data(), environ);
      failure[0] = 3;
    }
    failure[1] = errno;
    (void)!::write(report_write.get(), failure, sizeof(failure));
    ::_exit(127);
  }
  child.pidfd_ = OpenPidFd(child.pid_);
  child.output_ = std::move(output);
  report_write.Reset();

  int failure[2] = {0, 0};
  ssize_t n;
  do {
    n = ::read(report_read.get(), failure, sizeof(failure));
  } while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(sizeof(failure))) {
    child.KillAndReap();
    static constexpr const char* kStage[] = {"", "pin to CPU", "redirect output of", "exec"};
    std::string what = std::string(kStage[failure[0] >= 1 && failure[0] <= 3 ? failure[0] : 3]) +
                       " " + path + (failure[0] == 1 ? " (cpu " + std::to_string(cpu) + ")" : "");
    return ErrnoToStatus(failure[1], what);
  }
  return child;
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(other.pid_),
      pidfd_(std::move(other.pidfd_)),
      output_(std::move(other.output_)),
      exit_(other.exit_) {
  other.pid_ = -1;
}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    KillAndReap();
    pid_ = other.pid_;
    pidfd_ = std::move(other.pidfd_);
    output_ = std::move(other.output_);
    exit_ = other.exit_;
    other.pid_ = -1;
  }
  return *this;
}

ChildProcess::~ChildProcess() { KillAndReap(); }

std::optional<ExitInfo> ChildProcess::TryReap() {
  if (exit_ || pid_ <= 0) return exit_;
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == pid_) {
    exit_ = FromWaitStatus(status);
  } else if (r < 0) {
    // ECHILD: someone else reaped it (a SIGCHLD handler set to SIG_IGN);
    // all we can say is that it is gone.
    exit_ = ExitInfo{false, -1};
  }
  if (exit_) pidfd_.Reset();
  return exit_;
}

Result<ExitInfo> ChildProcess::Wait(DurationNs timeout_ns) {
  if (auto done = TryReap()) return *done;
  DurationNs waited_ns = 0;
  while (waited_ns < timeout_ns) {
    DurationNs slice_ns;
    if (pidfd_.valid()) {
      // The pidfd turns readable when the child exits; EINTR only ends the
      // slice early, which costs a little of the timeout, never a hang.
      slice_ns = std::min(kWaitSliceNs, timeout_ns - waited_ns);
      pollfd p{pidfd_.get(), POLLIN, 0};
      (void)::poll(&p, 1, static_cast<int>((slice_ns + kNsPerMs - 1) / kNsPerMs));
    } else {
      slice_ns = std::min(kNsPerMs, timeout_ns - waited_ns);
      SleepNs(slice_ns);
    }
    waited_ns += slice_ns;
    if (auto done = TryReap()) return *done;
  }
  return DeadlineExceededError("process " + std::to_string(pid_) + " still running after " +
                               std::to_string(timeout_ns / kNsPerMs) + " ms");
}

ExitInfo ChildProcess::KillAndReap() {
  if (pid_ <= 0) return ExitInfo{};
  if (auto done = TryReap()) return *done;
  ::kill(pid_, SIGKILL);
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &status, 0);
  } while (r < 0 && errno == EINTR);
  exit_ = r == pid_ ? FromWaitStatus(status) : ExitInfo{true, SIGKILL};
  pidfd_.Reset();
  return *exit_;
}

ExitInfo ChildProcess::Stop(int signal, DurationNs grace_ns) {
  if (pid_ <= 0) return ExitInfo{};
  if (auto done = TryReap()) return *done;
  ::kill(pid_, signal);
  auto waited = Wait(grace_ns);
  if (waited.ok()) return *waited;
  return KillAndReap();
}

std::string ChildProcess::Output() const {
  if (!output_.valid()) return "";
  struct stat st {};
  if (::fstat(output_.get(), &st) != 0 || st.st_size <= 0) return "";
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n =
        ::pread(output_.get(), text.data() + done, text.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  text.resize(done);
  return text;
}

}  // namespace wharf::bench
