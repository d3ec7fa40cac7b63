// Flags shared by the subcommands that open an endpoint: --config, --set,
// --mode (embedded or managed by wharfd) and --socket.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "wharf/endpoint.h"
#include "wharf/result.h"

namespace CLI {
class App;
}

namespace wharf::tools {

struct EndpointFlags {
  std::string config_file;
  std::vector<std::string> settings;  // "key=value"
  std::string mode = "auto";          // auto | embedded | managed
  std::string daemon_socket;          // wharfd's control socket
};

void AddEndpointFlags(CLI::App& app, EndpointFlags& flags);

// EndpointOptions for `address` from the flags; an error names the bad flag.
Result<EndpointOptions> MakeEndpointOptions(const EndpointFlags& flags, std::string address);

// "homa.overcommit=4" -> {"homa.overcommit", "4"}; an error names the bad one.
Result<std::vector<std::pair<std::string, std::string>>> ParseSettings(
    const std::vector<std::string>& settings);

// The RPC methods `wharf serve` answers (and `wharf ping` calls).
inline constexpr uint32_t kEchoMethod = 1;
inline constexpr uint32_t kServerStatsMethod = 2;
// `wharf serve --lend-bytes`: lends the caller (by its ucx:// address) the
// server's region; the answer is its size in decimal.
inline constexpr uint32_t kLendMethod = 3;

}  // namespace wharf::tools
