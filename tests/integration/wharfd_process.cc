// WharfdProcess and the lifecycle tests' views of a daemon from outside.
#include "integration/wharfd_process.h"

#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "integration/wharf_process.h"

namespace wharf::integration {
namespace {

// Bound on one `wharf status` (kStopTimeoutNs, on a wharfd exiting after
// SIGTERM, is wharf_process.h's).
constexpr DurationNs kStatusTimeoutNs = 10 * kNsPerSec;
// Flags of a listening socket in /proc/net/unix (__SO_ACCEPTCON).
constexpr std::string_view kAcceptConFlags = "00010000";

std::vector<std::string> Argv(const WharfdOptions& o) {
  std::vector<std::string> argv = {WharfdPath(), "--socket", o.socket, "--log-level", "warn",
                                   "--set", "listen.homa=127.0.0.1:" + std::to_string(o.homa_port),
                                   "--set", "listen.tcp=", "--set", "http.listen="};
  for (const std::string& s : o.settings) {
    argv.push_back("--set");
    argv.push_back(s);
  }
  return argv;
}

}  // namespace

Result<std::unique_ptr<TempDir>> TempDir::Create(const std::string& prefix) {
  std::string pattern = "/tmp/" + prefix + "-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) return ErrnoToStatus(errno, "mkdtemp " + pattern);
  return std::unique_ptr<TempDir>(new TempDir(pattern));
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string WharfdPath() { return WHARFD_PATH; }

Result<std::unique_ptr<WharfdProcess>> WharfdProcess::Start(const WharfdOptions& options) {
  if (options.socket.empty()) return InvalidArgumentError("WharfdOptions.socket is empty");
  WHARF_ASSIGN_OR_RETURN(std::unique_ptr<netns::Subprocess> process,
                         netns::Subprocess::Start(Argv(options), {.label = "wharfd"}));
  // Its control socket listening, then its loop asleep (below). Looking at
  // /proc makes no connection, so the daemon's fd count is untouched.
  const pid_t pid = process->pid();
  Status failed;
  const bool ready = PollUntil(
      [&] {
        if (!process->Signal(0).ok()) {
          failed = UnavailableError("wharfd exited during startup: " + process->Stderr());
          return true;
        }
        Result<bool> listens = ListensOn(pid, options.socket);
        if (!listens.ok()) {
          failed = listens.status();
          return true;
        }
        return *listens;
      },
      kStartTimeoutNs);
  if (!failed.ok()) return failed;
  // It opens the control socket first, its listen sockets after: ready
  // once its loop sleeps.
  if (ready && !WaitUntilIdle(pid, kStartTimeoutNs)) {
    return DeadlineExceededError("wharfd listens on " + options.socket +
                                 " but its loop never went to sleep; stderr: " + process->Stderr());
  }
  if (!ready) {
    return DeadlineExceededError("wharfd did not listen on " + options.socket + " within " +
                                 std::to_string(kStartTimeoutNs / kNsPerSec) +
                                 " s; stderr: " + process->Stderr());
  }
  return std::unique_ptr<WharfdProcess>(new WharfdProcess(std::move(process), options));
}

Status WharfdProcess::Stop() {
  WHARF_RETURN_IF_ERROR(process_->Signal(SIGTERM));
  WHARF_ASSIGN_OR_RETURN(int code, process_->WaitFor(kStopTimeoutNs));
  if (code != 0) {
    return InternalError("wharfd exited with " + std::to_string(code) +
                         " after SIGTERM; stderr: " + process_->Stderr());
  }
  return OkStatus();
}

Result<netns::CommandOutput> RunWharfd(const WharfdOptions& options, DurationNs timeout_ns) {
  return netns::RunCommand(Argv(options), {.label = "wharfd"}, timeout_ns);
}

Result<nlohmann::json> QueryStatus(const std::string& socket) {
  WHARF_ASSIGN_OR_RETURN(netns::CommandOutput out,
                         RunWharf({"status", "--json", "--socket", socket}, kStatusTimeoutNs));
  if (out.exit_code != 0) {
    return UnavailableError("wharf status exited with " + std::to_string(out.exit_code) + ": " +
                            out.stderr_text);
  }
  nlohmann::json doc = nlohmann::json::parse(out.stdout_text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.contains("daemon") || !doc.contains("applications")) {
    return InternalError("wharf status printed no status: " + out.stdout_text);
  }
  return doc;
}

const nlohmann::json* FindApplication(const nlohmann::json& status, pid_t pid) {
  for (const nlohmann::json& app : status["applications"]) {
    if (app.value("pid", -1) == pid) return &app;
  }
  return nullptr;
}

Result<bool> ListensOn(pid_t pid, const std::string& path) {
  const std::string file = "/proc/" + std::to_string(pid) + "/net/unix";
  std::ifstream in(file);
  if (!in) return NotFoundError("cannot read " + file);
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    // Num RefCount Protocol Flags Type St Inode Path
    std::istringstream fields(line);
    std::string num, refs, protocol, flags, type, state, inode, bound;
    if (!(fields >> num >> refs >> protocol >> flags >> type >> state >> inode >> bound)) continue;
    if (bound == path && flags == kAcceptConFlags) return true;
  }
  return false;
}

Result<int> CountOpenFds(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return ErrnoToStatus(errno, "opendir " + dir);
  int count = 0;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') ++count;
  }
  ::closedir(d);
  return count;
}

Result<int> CountConnectedUdpSockets(pid_t pid) {
  // The inodes of connected UDP sockets (remote address not all zero) in the
  // process's namespace, then which of them the process holds.
  std::vector<std::string> connected;
  for (const char* table : {"udp", "udp6"}) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/net/" + table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
      std::istringstream fields(line);
      std::string sl, local, remote, st, queues, timer, retransmits, uid, timeout, inode;
      if (!(fields >> sl >> local >> remote >> st >> queues >> timer >> retransmits >> uid >>
            timeout >> inode)) {
        continue;
      }
      const std::string port = remote.substr(remote.find(':') + 1);
      if (port != "0000") connected.push_back("socket:[" + inode + "]");
    }
  }
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  std::error_code ec;
  int count = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    std::error_code rec;
    const std::string target = std::filesystem::read_symlink(e.path(), rec).string();
    if (std::find(connected.begin(), connected.end(), target) != connected.end()) ++count;
  }
  if (ec) return ErrnoToStatus(ec.value(), "listing " + dir);
  return count;
}

Result<std::vector<std::string>> MapsMatching(pid_t pid, const std::string& needle) {
  const std::string file = "/proc/" + std::to_string(pid) + "/maps";
  std::ifstream in(file);
  if (!in) return NotFoundError("cannot read " + file);
  std::vector<std::string> found;
  std::string line;
  while (std::getline(in, line)) {
    if (line.find(needle) != std::string::npos) found.push_back(line);
  }
  return found;
}

bool WaitUntilIdle(pid_t pid, DurationNs timeout_ns) {
  const std::string file = "/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/wchan";
  // A thread on a CPU shows "0", as does every thread where the kernel
  // hides wchan: only "0" throughout means we cannot tell.
  bool shown = false;
  const bool idle = PollUntil(
      [&] {
        std::ifstream in(file);
        std::string wchan;
        if (!(in >> wchan)) return false;
        if (wchan != "0") shown = true;
        return wchan.find("epoll") != std::string::npos;
      },
      timeout_ns, 100 * kNsPerUs);
  return idle || !shown;
}

bool PollUntil(const std::function<bool()>& done, DurationNs timeout_ns, DurationNs poll_ns) {
  const TimeNs deadline = SystemClock::Get().NowNs() + timeout_ns;
  while (true) {
    if (done()) return true;
    if (SystemClock::Get().NowNs() >= deadline) return false;
    timespec ts{.tv_sec = 0, .tv_nsec = static_cast<long>(poll_ns)};
    ::nanosleep(&ts, nullptr);
  }
}

}  // namespace wharf::integration
