// `wharf daemon` (also the `wharfd` program): runs wharfd in the foreground
// until SIGINT or SIGTERM.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace wharf::tools {

struct DaemonOptions {
  std::string config_file;            // --config (YAML; packaging/wharfd.yaml)
  std::vector<std::string> settings;  // --set key=value
  std::string socket;                 // --socket (else WHARF_SOCKET, else the config)
  std::string log_level;              // --log-level
  bool check_config = false;          // --check-config: load, report, exit
};

void AddDaemonFlags(CLI::App& app, DaemonOptions& options);
int RunDaemon(const DaemonOptions& options);

}  // namespace wharf::tools
