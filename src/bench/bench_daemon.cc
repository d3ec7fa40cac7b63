// BenchDaemon: start a private wharfd, wait for its socket, always clean up.
#include "bench/bench_daemon.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "bench/sockets.h"

namespace wharf::bench {
namespace {

// A fresh directory under $TMPDIR (else /tmp) for the control socket.
Result<std::string> MakeTempDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr && *tmp ? tmp : "/tmp") + "/wharf-bench-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) return ErrnoToStatus(errno, "mkdtemp " + pattern);
  return pattern;
}

// True once a connect to the socket succeeds (the file exists before the
// daemon listens on it).
bool Accepts(const std::string& path) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));  // as wharfd listens
  if (!fd.valid()) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) return false;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0;
}

std::string HomaListen(const std::string& address) {
  const bool v6 = address.find(':') != std::string::npos;
  return (v6 ? "[" + address + "]" : address) + ":0";
}

}  // namespace

Status WaitForDaemonSocket(const std::string& path, const Clock& clock, DurationNs timeout_ns) {
  const TimeNs deadline = clock.NowNs() + timeout_ns;
  while (!Accepts(path)) {
    if (clock.NowNs() >= deadline) {
      return DeadlineExceededError("wharfd at " + path + " did not come up in " +
                                   std::to_string(timeout_ns / kNsPerMs) + " ms");
    }
    // Waiting on another process's start-up: nothing to be woken by.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return OkStatus();
}

Result<std::string> SelfExecutable() {
  std::string path(4096, '\0');
  const ssize_t n = ::readlink("/proc/self/exe", path.data(), path.size() - 1);
  if (n <= 0) return ErrnoToStatus(errno, "readlink /proc/self/exe");
  path.resize(static_cast<size_t>(n));
  return path;
}

std::vector<std::string> BenchDaemon::Argv(const BenchDaemonOptions& o,
                                           const std::string& socket_path) {
  std::vector<std::string> argv = o.command;
  argv.insert(argv.end(), {"--socket", socket_path, "--log-level", "warn",
                           "--set", "listen.homa=" + HomaListen(o.address),
                           "--set", "listen.tcp=", "--set", "http.listen="});
  return argv;
}

Result<std::unique_ptr<BenchDaemon>> BenchDaemon::Start(const BenchDaemonOptions& options,
                                                        const Clock& clock) {
  BenchDaemonOptions o = options;
  if (o.command.empty()) {
    WHARF_ASSIGN_OR_RETURN(std::string self, SelfExecutable());
    o.command = {self, "daemon"};
  }
  WHARF_ASSIGN_OR_RETURN(std::string dir, MakeTempDir());
  const std::string socket_path = dir + "/wharfd.sock";
  Result<ChildProcess> process = ChildProcess::Exec(Argv(o, socket_path), o.cpu);
  if (!process.ok()) {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
    return process.status().WithContext("starting wharfd");
  }
  // From here the destructor cleans up.
  std::unique_ptr<BenchDaemon> daemon(new BenchDaemon(dir, std::move(*process)));
  const TimeNs give_up_ns = clock.NowNs() + o.start_timeout_ns;
  while (!Accepts(daemon->socket_path_)) {
    if (auto exit = daemon->process_.TryReap()) {
      return UnavailableError("wharfd (" + o.command.front() + ") ended at start (" +
                              exit->ToString() + "): " + daemon->Output());
    }
    if (clock.NowNs() > give_up_ns) {
      return DeadlineExceededError("wharfd did not open " + daemon->socket_path_ + " within " +
                                   std::to_string(o.start_timeout_ns / kNsPerMs) +
                                   " ms: " + daemon->Output());
    }
    // Waiting on another process's start-up: nothing to be woken by.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return daemon;
}

BenchDaemon::~BenchDaemon() {
  // SIGTERM lets it detach its applications and remove its socket.
  (void)process_.Stop(SIGTERM, 2 * kNsPerSec);
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

}  // namespace wharf::bench
