// integration/wharfd_process.h: what the daemon lifecycle tests share: the
// `wharfd` binary as a child process on a control socket in a temporary
// directory and fixed loopback ports (so a restarted daemon comes back on
// the same ones), its status as `wharf status --json` prints it, and what
// the kernel says about its resources (/proc/<pid>/fd, /proc/<pid>/maps,
// /proc/<pid>/net/unix). Process mechanics are netns/subprocess.h's.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/clock.h"
#include "netns/subprocess.h"
#include "wharf/result.h"

namespace wharf::integration {

// A fresh directory under /tmp, removed with everything in it when this is
// destroyed (also when a test fails).
class TempDir {
 public:
  static Result<std::unique_ptr<TempDir>> Create(const std::string& prefix);
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

struct WharfdOptions {
  // The control socket (must be set; a TempDir holds it in the tests).
  std::string socket;
  // listen.homa's port on 127.0.0.1 (0: any). listen.tcp and http.listen
  // are disabled unless `settings` says otherwise.
  uint16_t homa_port = 0;
  // Further --set key=value entries.
  std::vector<std::string> settings{};
};

// A running `wharfd`. Destroying it SIGKILLs and reaps it. Not thread-safe.
class WharfdProcess {
 public:
  // Starts wharfd and waits (bounded) until its control socket listens.
  // A wharfd that exits instead is an error carrying its stderr.
  static Result<std::unique_ptr<WharfdProcess>> Start(const WharfdOptions& options);

  pid_t pid() const { return process_->pid(); }
  netns::Subprocess& process() { return *process_; }
  const WharfdOptions& options() const { return options_; }

  // SIGTERM, then a bounded wait for exit code 0.
  Status Stop();
  // SIGKILL and reap: a crash, leaving the socket file behind.
  void Kill() { process_->Kill(); }

 private:
  WharfdProcess(std::unique_ptr<netns::Subprocess> process, WharfdOptions options)
      : process_(std::move(process)), options_(std::move(options)) {}
  std::unique_ptr<netns::Subprocess> process_;
  WharfdOptions options_;
};

// The path of the wharfd binary under test.
std::string WharfdPath();

// Runs wharfd to completion (for starts that must fail), within `timeout_ns`.
Result<netns::CommandOutput> RunWharfd(const WharfdOptions& options, DurationNs timeout_ns);

// `wharf status --json --socket <socket>`, parsed.
Result<nlohmann::json> QueryStatus(const std::string& socket);
// The entry of `status`'s applications with this pid, or null.
const nlohmann::json* FindApplication(const nlohmann::json& status, pid_t pid);

// Whether process `pid` has a Unix socket bound to `path` in the listening
// state (from /proc/<pid>/net/unix; no connection is made).
Result<bool> ListensOn(pid_t pid, const std::string& path);
// How many file descriptors process `pid` has open.
Result<int> CountOpenFds(pid_t pid);
// How many of them are connected UDP sockets. wharfd's homa:// socket keeps
// one such "hot peer" socket (transport/udp/udp_hot_peer.h) for the peer it
// sends to most, whichever application that is for: the socket's, at most
// one, not any application's.
Result<int> CountConnectedUdpSockets(pid_t pid);
// The lines of /proc/<pid>/maps that contain `needle`.
Result<std::vector<std::string>> MapsMatching(pid_t pid, const std::string& needle);

// Waits (bounded) until process `pid`'s main thread, wharfd's loop, sleeps
// in epoll_wait (from /proc/<pid>/task/<pid>/wchan): it has finished
// starting and the pass before; nothing is opening or closing fds. Where
// the kernel does not show wchan, true after the timeout.
bool WaitUntilIdle(pid_t pid, DurationNs timeout_ns = 5 * kNsPerSec);

// Calls `done` every `poll_ns` until it returns true or `timeout_ns` passed;
// returns whether it did. The conditions polled are other processes'
// states, which give no event to wait on.
bool PollUntil(const std::function<bool()>& done, DurationNs timeout_ns,
               DurationNs poll_ns = 2 * kNsPerMs);

}  // namespace wharf::integration
