// RunHeadlessChromium: a supervisor process that reaps, the browser under
// it with its output in files, a pidfd to wait with a deadline, and a sweep
// that kills every process of the run.
//
// The process tree, and why each piece:
//
//   test ── supervisor (PR_SET_CHILD_SUBREAPER) ── browser ── zygotes, renderers, ...
//                                                └─ crash handlers (daemonized)
//
// Chromium's crash handlers (chrome_crashpad_handler) daemonize into
// sessions of their own, so neither the browser's process group nor its
// process tree holds them. The supervisor is a subreaper: whatever a
// process of the run orphans becomes the supervisor's child rather than
// init's, and the supervisor reaps everything until it has no child left
// (leaving no zombie to an init that may not reap), then exits with the
// browser's status. Finding them to kill is by name: every process of a run
// names the run's directory in its command line (the profile through
// --user-data-dir; the crash handlers their database under HOME, which
// points into it). Each is signalled and awaited through a pidfd, which
// cannot hit a recycled pid. The supervisor exiting is then the proof that
// nothing of the run is left.
#include "mesh/testing/chromium.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/unique_fd.h"

extern char** environ;

namespace wharf::mesh::testing {
namespace {

// How long killing what is left of a run may take.
constexpr DurationNs kSweepTimeout = 10 * kNsPerSec;

std::string ErrnoText(std::string_view what) {
  return std::string(what) + ": " + std::strerror(errno);
}

int PidfdOpen(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

void PidfdKill(int pidfd) { ::syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0); }

// Waits until `pidfd` reports its process gone or `deadline` passes.
bool WaitPidfd(int pidfd, TimeNs deadline) {
  const Clock& clock = SystemClock::Get();
  for (;;) {
    const DurationNs left = deadline - clock.NowNs();
    if (left <= 0) return false;
    pollfd p{.fd = pidfd, .events = POLLIN, .revents = 0};
    const int n = ::poll(&p, 1, static_cast<int>((left + kNsPerMs - 1) / kNsPerMs));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return false;
  }
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string Tail(const std::string& text, size_t lines) {
  size_t at = text.size();
  for (size_t n = 0; n <= lines && at > 0; ++n) {
    const size_t nl = text.rfind('\n', at - 1);
    if (nl == std::string::npos) return text;
    at = nl;
  }
  return text.substr(at + 1);
}

std::string CommandLineOf(int pid) {
  std::string text = ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
  for (char& c : text) {
    if (c == '\0') c = ' ';
  }
  return text;
}

// A fresh directory for one run under `parent`, else $TMPDIR, else /tmp.
Result<std::filesystem::path> MakeRunDirectory(const std::string& parent) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = !parent.empty()                  ? parent
                        : tmp != nullptr && *tmp != '\0' ? std::string(tmp)
                                                         : std::string("/tmp");
  pattern += "/wharf-chromium-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) return InternalError(ErrnoText("mkdtemp " + pattern));
  return std::filesystem::path(pattern);
}

// Kills every process mentioning `dir` and waits for each to go, passing
// over /proc again until a pass finds none (a dying browser may still be
// starting one), or until `deadline`.
void Sweep(const std::string& dir, TimeNs deadline) {
  while (SystemClock::Get().NowNs() < deadline) {
    const std::vector<int> pids = ProcessesMentioning(dir);
    if (pids.empty()) return;
    for (int pid : pids) {
      UniqueFd pidfd(PidfdOpen(pid));
      if (!pidfd.valid()) continue;  // gone already
      // Checked again now that the pidfd pins the process: the pid cannot
      // have been reused for another.
      if (CommandLineOf(pid).find(dir) == std::string::npos) continue;
      PidfdKill(pidfd.get());
      WaitPidfd(pidfd.get(), deadline);
    }
  }
}

// The argv and environment of one run, built before fork: between fork and
// exec the child of a multithreaded parent may only make system calls.
struct Command {
  std::vector<std::string> args;
  std::vector<std::string> env;
  std::vector<char*> argv;
  std::vector<char*> envp;
};

Command BuildCommand(const ChromiumRun& run, const std::string& dir) {
  Command c;
  c.args = {
      run.binary,
      "--headless=new",
      "--no-sandbox",  // required as root, harmless otherwise
      "--disable-gpu",
      "--enable-logging=stderr",
      "--v=0",
      "--user-data-dir=" + dir + "/profile",
      "--no-first-run",
      "--no-default-browser-check",
      "--disable-extensions",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-default-apps",
      "--disable-sync",
      "--hide-scrollbars",
      "--mute-audio",
  };
  if (run.virtual_time_budget_ms > 0) {
    c.args.push_back("--virtual-time-budget=" + std::to_string(run.virtual_time_budget_ms));
  }
  c.args.insert(c.args.end(), run.switches.begin(), run.switches.end());
  c.args.push_back(run.url);
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    if (entry.starts_with("HOME=") || entry.starts_with("XDG_CONFIG_HOME=") ||
        entry.starts_with("XDG_CACHE_HOME=")) {
      continue;
    }
    c.env.emplace_back(entry);
  }
  // Crash databases and caches land in the run's directory, and name it.
  c.env.push_back("HOME=" + dir + "/home");
  c.env.push_back("XDG_CONFIG_HOME=" + dir + "/home/.config");
  c.env.push_back("XDG_CACHE_HOME=" + dir + "/home/.cache");
  for (std::string& a : c.args) c.argv.push_back(a.data());
  c.argv.push_back(nullptr);
  for (std::string& e : c.env) c.envp.push_back(e.data());
  c.envp.push_back(nullptr);
  return c;
}

// The supervisor, in the forked child: starts the browser, hands its pid to
// the test through `pid_pipe`, reaps every child it gets until none is left
// and exits with the browser's status. System calls only.
[[noreturn]] void Supervise(pid_t test, const Command& command, int in_fd, int out_fd, int err_fd,
                            int pid_pipe) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != test) ::_exit(126);
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  const pid_t supervisor = ::getpid();
  const pid_t browser = ::fork();
  if (browser < 0) ::_exit(126);
  if (browser == 0) {
    // Its own process group, so that the test can kill it and its children
    // without the supervisor.
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != supervisor) ::_exit(127);
    ::dup2(in_fd, 0);
    ::dup2(out_fd, 1);
    ::dup2(err_fd, 2);
    ::execve(command.argv[0], command.argv.data(), command.envp.data());
    ::_exit(127);
  }
  ::setpgid(browser, browser);
  if (::write(pid_pipe, &browser, sizeof browser) != sizeof browser) ::_exit(126);
  ::close(pid_pipe);
  int code = 126;
  for (;;) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;  // ECHILD: nothing of the run is left
    }
    if (pid == browser) code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  ::_exit(code);
}

}  // namespace

std::vector<int> ProcessesMentioning(std::string_view needle) {
  std::vector<int> pids;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const int pid = std::stoi(name);
    if (pid == ::getpid()) continue;
    if (CommandLineOf(pid).find(needle) != std::string::npos) pids.push_back(pid);
  }
  return pids;
}

std::vector<std::string> ConsoleLines(std::string_view log) {
  std::vector<std::string> lines;
  size_t at = 0;
  while (at < log.size()) {
    size_t end = log.find('\n', at);
    if (end == std::string_view::npos) end = log.size();
    const std::string_view line = log.substr(at, end - at);
    if (line.find(":CONSOLE") != std::string_view::npos ||
        line.find("Uncaught") != std::string_view::npos) {
      lines.emplace_back(line);
    }
    at = end + 1;
  }
  return lines;
}

Result<ChromiumOutput> RunHeadlessChromium(const ChromiumRun& run) {
  if (::access(run.binary.c_str(), X_OK) != 0) {
    return FailedPreconditionError("headless Chromium not found at " + run.binary +
                                   ": install the Debian package `chromium` (apt-get install "
                                   "chromium; scripts/packages.txt lists it, CI installs it)");
  }
  WHARF_ASSIGN_OR_RETURN(std::filesystem::path dir, MakeRunDirectory(run.temp_parent));
  const std::string dir_text = dir.string();
  const Command command = BuildCommand(run, dir_text);
  const std::filesystem::path out_path = dir / "stdout";
  const std::filesystem::path err_path = dir / "stderr";
  auto fail = [&](Status s) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    return s;
  };

  UniqueFd in_fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  UniqueFd out_fd(::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  UniqueFd err_fd(::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!in_fd.valid() || !out_fd.valid() || !err_fd.valid()) {
    return fail(InternalError(ErrnoText("open the output files in " + dir_text)));
  }
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return fail(InternalError(ErrnoText("pipe2")));
  UniqueFd pid_read(pipe_fds[0]);
  UniqueFd pid_write(pipe_fds[1]);

  const TimeNs deadline = SystemClock::Get().NowNs() + run.timeout;
  const pid_t test = ::getpid();
  const pid_t supervisor = ::fork();
  if (supervisor < 0) return fail(InternalError(ErrnoText("fork")));
  if (supervisor == 0) {
    Supervise(test, command, in_fd.get(), out_fd.get(), err_fd.get(), pid_write.get());
  }
  ::setpgid(supervisor, supervisor);  // also here, so the group exists before any kill
  pid_write.Reset();
  UniqueFd supervisor_fd(PidfdOpen(supervisor));

  // The browser's pid, then its exit or the deadline. A read that fails
  // means the supervisor could not start it.
  pid_t browser = -1;
  ssize_t n = -1;
  do {
    n = ::read(pid_read.get(), &browser, sizeof browser);
  } while (n < 0 && errno == EINTR);
  bool timed_out = false;
  if (n == sizeof browser) {
    UniqueFd browser_fd(PidfdOpen(browser));  // invalid: already gone and reaped
    if (browser_fd.valid()) {
      timed_out = !WaitPidfd(browser_fd.get(), deadline);
      if (timed_out) PidfdKill(browser_fd.get());
    }
    ::kill(-browser, SIGKILL);  // what is left of its group: zygotes, renderers
  }
  const TimeNs sweep_deadline = SystemClock::Get().NowNs() + kSweepTimeout;
  Sweep(dir_text, sweep_deadline);

  // The supervisor exits once it has reaped the whole run.
  const bool all_gone = supervisor_fd.valid() && WaitPidfd(supervisor_fd.get(), sweep_deadline);
  if (!all_gone) ::kill(-supervisor, SIGKILL);
  int status = 0;
  while (::waitpid(supervisor, &status, 0) < 0 && errno == EINTR) {
  }

  ChromiumOutput output;
  output.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  output.stdout_text = ReadFile(out_path);
  output.stderr_text = ReadFile(err_path);
  const std::vector<int> survivors = ProcessesMentioning(dir_text);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);

  if (n != sizeof browser) {
    return InternalError("could not start " + run.binary + " (supervisor exit " +
                         std::to_string(output.exit_code) + ")");
  }
  if (!all_gone || !survivors.empty()) {
    std::string pids;
    for (int p : survivors) pids += " " + std::to_string(p);
    return InternalError("processes of the Chromium run in " + dir_text +
                         " outlived SIGKILL for 10 s:" + pids);
  }
  if (timed_out) {
    return DeadlineExceededError("Chromium on " + run.url + " did not finish within " +
                                 std::to_string(run.timeout / kNsPerMs) + " ms and was killed; " +
                                 "its log ends:\n" + Tail(output.stderr_text, 20));
  }
  return output;
}

}  // namespace wharf::mesh::testing
