// wharfd: the transport daemon as a program of its own (the same as
// `wharf daemon`), for the systemd unit.
#include <CLI/CLI.hpp>

#include "tools/daemon_command.h"
#include "wharf/build_info.h"

int main(int argc, char** argv) {
  CLI::App app{"wharfd: wharf's per-host transport daemon. Applications attach through its "
               "control socket and exchange messages through shared memory.",
               "wharfd"};
  app.set_version_flag("--version", std::string("wharfd ") + wharf::kVersion);
  wharf::tools::DaemonOptions options;
  wharf::tools::AddDaemonFlags(app, options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return wharf::tools::RunDaemon(options);
}
