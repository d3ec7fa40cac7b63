// Flags shared by the subcommands that open an endpoint: --config and --set.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "wharf/result.h"

namespace CLI {
class App;
}

namespace wharf::tools {

struct EndpointFlags {
  std::string config_file;
  std::vector<std::string> settings;  // "key=value"
};

void AddEndpointFlags(CLI::App& app, EndpointFlags& flags);

// "homa.overcommit=4" -> {"homa.overcommit", "4"}; an error names the bad one.
Result<std::vector<std::pair<std::string, std::string>>> ParseSettings(
    const std::vector<std::string>& settings);

// The RPC methods `wharf serve` answers (and `wharf ping` calls).
inline constexpr uint32_t kEchoMethod = 1;
inline constexpr uint32_t kServerStatsMethod = 2;

}  // namespace wharf::tools
