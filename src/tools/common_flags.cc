// --config / --set handling shared by endpoint-opening subcommands.
#include "tools/common_flags.h"

#include <CLI/CLI.hpp>

namespace wharf::tools {

void AddEndpointFlags(CLI::App& app, EndpointFlags& flags) {
  app.add_option("--config", flags.config_file, "YAML settings file (see docs/configuration.md)")
      ->check(CLI::ExistingFile);
  app.add_option("--set", flags.settings,
                 "Override one setting, e.g. --set homa.overcommit=4 (repeatable)");
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
