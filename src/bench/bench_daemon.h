// bench/bench_daemon.h: BenchDaemon, a private wharfd for one managed
// benchmark row. It runs the wharf binary itself (`wharf daemon`, found
// through /proc/self/exe) as a child process with its control socket in a
// fresh temporary directory and its homa:// socket on a free loopback port,
// waits until the socket takes connections, and on destruction stops it
// (SIGTERM, then SIGKILL) and removes the directory, whatever happened in
// between: a failed run leaves no daemon and no files behind.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "bench/child_process.h"
#include "wharf/result.h"

namespace wharf::bench {

struct BenchDaemonOptions {
  // The program and the arguments before the daemon's own flags; empty:
  // {this binary, "daemon"}.
  std::vector<std::string> command;
  std::string address = "127.0.0.1";  // numeric address listen.homa binds (port 0)
  int cpu = -1;                       // pinned there when >= 0
  DurationNs start_timeout_ns = 10 * kNsPerSec;
};

class BenchDaemon {
 public:
  // Starts the daemon and waits (on `clock`) until its control socket
  // accepts a connection; on failure the error carries the daemon's output.
  static Result<std::unique_ptr<BenchDaemon>> Start(const BenchDaemonOptions& options,
                                                    const Clock& clock);
  ~BenchDaemon();
  BenchDaemon(const BenchDaemon&) = delete;
  BenchDaemon& operator=(const BenchDaemon&) = delete;

  const std::string& socket_path() const { return socket_path_; }
  pid_t pid() const { return process_.pid(); }
  // What it wrote so far (stdout and stderr).
  std::string Output() const { return process_.Output(); }

  // The argv Start runs (for tests and error messages).
  static std::vector<std::string> Argv(const BenchDaemonOptions& options,
                                       const std::string& socket_path);

 private:
  BenchDaemon(std::string dir, ChildProcess process)
      : dir_(std::move(dir)), socket_path_(dir_ + "/wharfd.sock"), process_(std::move(process)) {}

  std::string dir_;
  std::string socket_path_;
  ChildProcess process_;
};

// Waits until a wharfd's control socket at `path` accepts a connection (a
// daemon started elsewhere: in a cluster host, on a BenchHosts side);
// kDeadlineExceeded after `timeout_ns`.
Status WaitForDaemonSocket(const std::string& path, const Clock& clock, DurationNs timeout_ns);

// The running binary (readlink /proc/self/exe).
Result<std::string> SelfExecutable();

}  // namespace wharf::bench
