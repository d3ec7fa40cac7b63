// The `wharf` command-line tool: one binary, one subcommand per job. Each
// subcommand lives in its own *_command.cc; this file only wires them up.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "tools/check_command.h"
#include "wharf/build_info.h"

int main(int argc, char** argv) {
  CLI::App app{"wharf: low-latency message and RPC transport (Homa-style over UDP)", "wharf"};
  app.set_version_flag("--version", std::string("wharf ") + wharf::kVersion);
  app.require_subcommand(1);

  wharf::tools::CheckOptions check_options;
  CLI::App* check = app.add_subcommand(
      "check", "Self-check: version, transports built in, and a loopback smoke test");
  wharf::tools::AddCheckFlags(*check, check_options);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (*check) return wharf::tools::RunCheck(check_options);
  return 2;
}
