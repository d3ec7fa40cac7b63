// A stand-in for a `wharf bench cluster` run, for bench_cluster_test.cc: it
// builds a 2-host cluster under the bench prefix ("wbc"), starts a process
// in host 0 that is detached from it (as a daemon would be: no parent-death
// signal, its own session), prints "ready <tag> <pid of that process>" and
// waits to be signalled. With --guard it installs the ClusterGuard first, as
// the tool does, so a SIGINT/SIGTERM removes the cluster; without it a
// signal (or SIGKILL) leaves the cluster behind for the next sweep.
//
//   wharf_bench_cluster_child [--guard]
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>

#include "netns/netns_cluster.h"
#include "netns/netns_process.h"
#include "bench/cluster_check.h"
#include "bench/cluster_guard.h"

int main(int argc, char** argv) {
  using namespace wharf;
  const bool guarded = argc > 1 && std::strcmp(argv[1], "--guard") == 0;
  std::unique_ptr<bench::ClusterGuard> guard;
  if (guarded) {
    auto installed = bench::ClusterGuard::Install();
    if (!installed.ok()) {
      std::fprintf(stderr, "guard: %s\n", installed.status().ToString().c_str());
      return 1;
    }
    guard = std::move(installed).value();
  }
  auto cluster = netns::NetnsCluster::Create(
      {.hosts = 2, .prefix = std::string(bench::kBenchClusterPrefix)});
  if (!cluster.ok()) {
    std::fprintf(stderr, "cluster: %s\n", cluster.status().ToString().c_str());
    return 1;
  }
  if (guard) guard->Protect((*cluster)->tag());
  // The shell forks `sleep` into its own session and exits: the sleep has
  // no parent-death signal and nobody reaps it but init.
  auto started = netns::RunIn(
      **cluster, 0, {"/bin/sh", "-c", "setsid sleep 600 </dev/null >/dev/null 2>&1 & echo $!"},
      10 * kNsPerSec);
  if (!started.ok() || started->exit_code != 0) {
    std::fprintf(stderr, "detached process did not start\n");
    return 1;
  }
  std::printf("ready %s %s", (*cluster)->tag().c_str(), started->stdout_text.c_str());
  std::fflush(stdout);
  while (true) ::pause();
}
