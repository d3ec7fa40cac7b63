// bench/cluster_guard.h: what makes an interrupted `wharf bench
// cluster` leave nothing behind. A ClusterGuard owns the process's handlers
// for SIGINT, SIGTERM and SIGHUP; on one of them it removes every cluster it
// protects (kills the processes inside each namespace, deletes the
// namespaces; NetnsCluster::RemoveCluster) and then re-raises the signal
// with its default action, so the exit status still says what killed the run.
//
// Signals belong to the program, not to a library: this lives in the tool
// (and its tests' helper), never in src/netns/. What the guard cannot catch
// (SIGKILL, a crash, power loss) the next run's start-up sweep removes
// (SweepStaleBenchClusters in cluster_check.h).
//
// How: the handler only write()s the signal number to a self-pipe
// (async-signal-safe); a watcher thread reads it and does the teardown with
// ordinary code (fork/exec of `ip`), by tag, without touching the
// NetnsCluster object the main thread may be using at that moment. Children
// the run started (Subprocess) run inside the cluster's namespaces and die
// with them; those also carry PR_SET_PDEATHSIG.
#pragma once

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "wharf/result.h"

namespace wharf::bench {

// Owned by main (or the command); one per process at a time. Protect and
// Unprotect are thread-safe.
class ClusterGuard {
 public:
  // Installs the handlers (sigaction, SA_RESTART) and starts the watcher.
  // kFailedPrecondition if another guard exists in this process.
  static Result<std::unique_ptr<ClusterGuard>> Install();

  // Restores the previous handlers and stops the watcher. A signal that
  // arrives after this gets the previous disposition.
  ~ClusterGuard();
  ClusterGuard(const ClusterGuard&) = delete;
  ClusterGuard& operator=(const ClusterGuard&) = delete;

  // Removes the cluster tagged `tag` (NetnsCluster::tag()) if a signal
  // comes; call it right after the cluster is created.
  void Protect(std::string tag) ABSL_LOCKS_EXCLUDED(mu_);
  // Forgets `tag` (after the run destroyed the cluster itself, or --keep).
  void Unprotect(const std::string& tag) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  ClusterGuard(int read_fd, int write_fd);
  // The watcher thread: waits on the pipe; a signal number there means tear
  // down and re-raise, a 0 byte means the guard is going away.
  void Watch();
  // Removes every protected cluster, then dies of `signo`.
  [[noreturn]] void TearDownAndReraise(int signo) ABSL_LOCKS_EXCLUDED(mu_);

  int read_fd_;
  int write_fd_;
  Mutex mu_;
  std::vector<std::string> tags_ ABSL_GUARDED_BY(mu_);
  std::thread watcher_;
};

}  // namespace wharf::bench
