// BenchHosts: a benchmark side's address, namespace and CPU, and starting
// processes there through netns::Subprocess.
#include "bench/bench_hosts.h"

#include <utility>

namespace wharf::bench {

BenchHosts BenchHosts::OnCluster(const netns::NetnsCluster& cluster, std::vector<int> cpus) {
  BenchHosts out;
  for (int h = 0; h < cluster.host_count(); ++h) {
    out.hosts_.push_back({.address = cluster.address(h),
                          .netns = cluster.namespace_name(h),
                          .cpu = h < static_cast<int>(cpus.size()) ? cpus[h] : -1});
  }
  return out;
}

BenchHosts BenchHosts::InThisNamespace(std::vector<std::string> addresses, std::vector<int> cpus) {
  BenchHosts out;
  for (size_t h = 0; h < addresses.size(); ++h) {
    out.hosts_.push_back({.address = std::move(addresses[h]),
                          .netns = "",
                          .cpu = h < cpus.size() ? cpus[h] : -1});
  }
  return out;
}

std::string BenchHosts::JoinedAddresses() const {
  std::string out;
  for (const Host& h : hosts_) out += (out.empty() ? "" : ",") + h.address;
  return out;
}

Result<netns::SubprocessOptions> BenchHosts::OptionsFor(int host) const {
  if (host < 0 || host >= count()) {
    return InvalidArgumentError("host " + std::to_string(host) + " is not one of the " +
                                std::to_string(count()) + " hosts");
  }
  const Host& h = hosts_[static_cast<size_t>(host)];
  netns::SubprocessOptions options;
  options.netns = h.netns;
  options.cpu = h.cpu;
  options.label = "host " + std::to_string(host) + " (" +
                  (h.netns.empty() ? h.address : h.netns) +
                  (h.cpu >= 0 ? ", CPU " + std::to_string(h.cpu) : std::string()) + ")";
  return options;
}

Result<std::unique_ptr<netns::Subprocess>> BenchHosts::Spawn(int host,
                                                             std::vector<std::string> argv) const {
  WHARF_ASSIGN_OR_RETURN(netns::SubprocessOptions options, OptionsFor(host));
  return netns::Subprocess::Start(std::move(argv), std::move(options));
}

Result<netns::CommandOutput> BenchHosts::Run(int host, std::vector<std::string> argv,
                                             DurationNs timeout_ns) const {
  WHARF_ASSIGN_OR_RETURN(netns::SubprocessOptions options, OptionsFor(host));
  return netns::RunCommand(std::move(argv), std::move(options), timeout_ns);
}

}  // namespace wharf::bench
