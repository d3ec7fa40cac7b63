// --config / --set handling shared by endpoint-opening subcommands.
#include "tools/common_flags.h"

#include <CLI/CLI.hpp>

namespace wharf::tools {

void AddEndpointFlags(CLI::App& app, EndpointFlags& flags) {
  app.add_option("--config", flags.config_file, "YAML settings file (see docs/configuration.md)")
      ->check(CLI::ExistingFile);
  app.add_option("--set", flags.settings,
                 "Override one setting, e.g. --set homa.overcommit=4 (repeatable)");
  app.add_option("--mode", flags.mode,
                 "Where the engine runs: embedded (in this process), managed (in wharfd, "
                 "through shared memory), or auto (managed when wharfd's socket exists)")
      ->check(CLI::IsMember({"auto", "embedded", "managed"}))
      ->capture_default_str();
  app.add_option("--socket", flags.daemon_socket,
                 "wharfd's control socket (default: $WHARF_SOCKET, else /run/wharf/wharfd.sock)");
}

Result<EndpointOptions> MakeEndpointOptions(const EndpointFlags& flags, std::string address) {
  WHARF_ASSIGN_OR_RETURN(auto settings, ParseSettings(flags.settings));
  EndpointOptions o{.address = std::move(address),
                    .config_file = flags.config_file,
                    .settings = std::move(settings),
                    .daemon_socket = flags.daemon_socket};
  if (flags.mode == "embedded") {
    o.hosting = Hosting::kEmbedded;
  } else if (flags.mode == "managed") {
    o.hosting = Hosting::kManaged;
  } else if (flags.mode == "auto") {
    o.hosting = Hosting::kAuto;
  } else {
    return InvalidArgumentError("--mode '" + flags.mode + "': expected auto, embedded or managed");
  }
  return o;
}

Result<std::vector<std::pair<std::string, std::string>>> ParseSettings(
    const std::vector<std::string>& settings) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& s : settings) {
    size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidArgumentError("--set '" + s + "': expected key=value, e.g. homa.overcommit=4");
    }
    out.emplace_back(s.substr(0, eq), s.substr(eq + 1));
  }
  return out;
}

}  // namespace wharf::tools
