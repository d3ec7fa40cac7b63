// bench/bench_hosts.h: where the processes of a two-sided benchmark
// run. BenchHosts names each side ("host" 0, 1, ...) by its address, its
// network namespace and its CPU, and starts processes there: on the hosts
// of a NetnsCluster (each in its namespace), or on loopback addresses of
// this namespace (127.0.0.1 and 127.0.0.2: two "hosts" whose traffic still
// crosses the kernel's network stack). A CPU >= 0 pins the process from
// before exec, as taskset does.
//
// A value type: it copies the namespace names, not the cluster, which must
// outlive the processes' use only (NetnsCluster::Destroy kills stragglers).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "netns/netns_cluster.h"
#include "netns/subprocess.h"
#include "wharf/result.h"

namespace wharf::bench {

class BenchHosts {
 public:
  // The cluster's hosts; `cpus[i]` pins host i's processes (missing or -1:
  // unpinned).
  static BenchHosts OnCluster(const netns::NetnsCluster& cluster, std::vector<int> cpus = {});
  // Hosts in this process's namespace at `addresses` (numeric).
  static BenchHosts InThisNamespace(std::vector<std::string> addresses, std::vector<int> cpus = {});

  int count() const { return static_cast<int>(hosts_.size()); }
  // For host in [0, count()); out of range throws std::out_of_range.
  const std::string& address(int host) const { return hosts_.at(host).address; }
  int cpu(int host) const { return hosts_.at(host).cpu; }
  // "" in this namespace.
  const std::string& netns(int host) const { return hosts_.at(host).netns; }
  // Every address, comma-separated (a cluster node's --addresses).
  std::string JoinedAddresses() const;

  // Starts argv on `host`.
  Result<std::unique_ptr<netns::Subprocess>> Spawn(int host, std::vector<std::string> argv) const;
  // Runs argv on `host` to completion within `timeout_ns` (a non-zero exit
  // is in exit_code, not an error).
  Result<netns::CommandOutput> Run(int host, std::vector<std::string> argv,
                                   DurationNs timeout_ns) const;

 private:
  struct Host {
    std::string address;
    std::string netns;
    int cpu = -1;
  };
  Result<netns::SubprocessOptions> OptionsFor(int host) const;

  std::vector<Host> hosts_;
};

}  // namespace wharf::bench
