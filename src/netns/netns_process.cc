// NetnsProcess and RunIn: Subprocess placed on a cluster host.
#include "netns/netns_process.h"

#include <utility>

namespace wharf::netns {
namespace {

Result<SubprocessOptions> OptionsFor(const NetnsCluster& cluster, int host) {
  if (host < 0 || host >= cluster.host_count()) {
    return InvalidArgumentError("host " + std::to_string(host) + " is not in cluster " +
                                cluster.tag() + " of " + std::to_string(cluster.host_count()) +
                                " hosts");
  }
  SubprocessOptions options;
  options.netns = cluster.namespace_name(host);
  options.label = "host " + std::to_string(host) + " (" + options.netns + ")";
  return options;
}

}  // namespace

Result<std::unique_ptr<NetnsProcess>> NetnsProcess::Spawn(const NetnsCluster& cluster, int host,
                                                          std::vector<std::string> argv,
                                                          SpawnOptions spawn_options) {
  WHARF_ASSIGN_OR_RETURN(SubprocessOptions options, OptionsFor(cluster, host));
  options.extra_env = std::move(spawn_options.extra_env);
  options.stdin_data = std::move(spawn_options.stdin_data);
  options.cpu = spawn_options.cpu;
  WHARF_ASSIGN_OR_RETURN(std::unique_ptr<Subprocess> process,
                         Subprocess::Start(std::move(argv), std::move(options)));
  return std::unique_ptr<NetnsProcess>(new NetnsProcess(host, std::move(process)));
}

Result<CommandOutput> RunIn(const NetnsCluster& cluster, int host, std::vector<std::string> argv,
                            DurationNs timeout_ns) {
  WHARF_ASSIGN_OR_RETURN(SubprocessOptions options, OptionsFor(cluster, host));
  return RunCommand(std::move(argv), std::move(options), timeout_ns);
}

}  // namespace wharf::netns
