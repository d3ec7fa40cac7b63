// netns/netns_process.h: processes on the hosts of a NetnsCluster. A
// NetnsProcess is a Subprocess started inside one host's network namespace,
// named after that host in every message ("host 1 (wharf-12-0-h1)"); RunIn
// runs a one-shot command there.
//
//   auto server = NetnsProcess::Spawn(*cluster, 1, {wharfd, "--listen", ...});
//   auto ready = (*server)->WaitForStdoutLine("listening on", 5 * kNsPerSec);
//
// Does not hold the fork/exec machinery (subprocess.h) or cluster setup.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "netns/netns_cluster.h"
#include "netns/subprocess.h"
#include "wharf/result.h"

namespace wharf::netns {

struct SpawnOptions {
  // "KEY=VALUE" entries added to (or overriding) the test's environment.
  std::vector<std::string> extra_env{};
  // Written to the child's stdin, which is then closed; nullopt: /dev/null.
  std::optional<std::string> stdin_data{};
  // >= 0: pinned to this CPU from before exec (SubprocessOptions::cpu).
  int cpu = -1;
};

// Owned by the test; not thread-safe. Destroying it kills and reaps the
// process (and its process group); declare it after the cluster so that it
// goes first. See Subprocess for the output and waiting rules.
class NetnsProcess {
 public:
  // Starts argv inside host `host` of `cluster`. The cluster must outlive the
  // call only; the process may outlive the cluster (Destroy kills it).
  static Result<std::unique_ptr<NetnsProcess>> Spawn(const NetnsCluster& cluster, int host,
                                                     std::vector<std::string> argv,
                                                     SpawnOptions options = {});

  int host() const { return host_; }
  pid_t pid() const { return process_->pid(); }

  // The exit code (128 + signal if a signal ended it); on timeout the process
  // is SIGKILLed and the result is kDeadlineExceeded with its stderr tail.
  Result<int> WaitFor(DurationNs timeout_ns) { return process_->WaitFor(timeout_ns); }
  // The first not yet consumed stdout line containing `needle`, waiting up
  // to `timeout_ns` (no sleeps: poll on the pipe).
  Result<std::string> WaitForStdoutLine(std::string_view needle, DurationNs timeout_ns) {
    return process_->WaitForStdoutLine(needle, timeout_ns);
  }
  Status Signal(int signo) { return process_->Signal(signo); }
  void Kill() { process_->Kill(); }
  const std::string& Stdout() { return process_->Stdout(); }
  const std::string& Stderr() { return process_->Stderr(); }

 private:
  NetnsProcess(int host, std::unique_ptr<Subprocess> process)
      : host_(host), process_(std::move(process)) {}

  int host_;
  std::unique_ptr<Subprocess> process_;
};

// Runs argv to completion inside host `host`, bounded by `timeout_ns`. A
// non-zero exit is returned in exit_code, not as an error.
Result<CommandOutput> RunIn(const NetnsCluster& cluster, int host, std::vector<std::string> argv,
                            DurationNs timeout_ns);

}  // namespace wharf::netns
