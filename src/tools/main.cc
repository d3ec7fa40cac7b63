// The `wharf` command-line tool: one binary, one subcommand per job. Each
// subcommand lives in its own *_command.cc; this file only wires them up.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "tools/bench_command.h"
#include "tools/check_command.h"
#include "tools/daemon_command.h"
#include "tools/mesh_command.h"
#include "tools/ping_command.h"
#include "tools/rma_command.h"
#include "tools/serve_command.h"
#include "tools/status_command.h"
#include "wharf/build_info.h"

int main(int argc, char** argv) {
  CLI::App app{"wharf: low-latency message and RPC transport (Homa-style over UDP)", "wharf"};
  app.set_version_flag("--version", std::string("wharf ") + wharf::kVersion);
  app.require_subcommand(1);

  wharf::tools::CheckOptions check_options;
  CLI::App* check = app.add_subcommand(
      "check", "Self-check: version, transports built in, and a loopback smoke test");
  wharf::tools::AddCheckFlags(*check, check_options);

  wharf::tools::BenchOptions bench_options;
  CLI::App* bench = wharf::tools::AddBenchCommand(app, bench_options);

  wharf::tools::ServeOptions serve_options;
  CLI::App* serve = app.add_subcommand(
      "serve", "Run an echo server (RPC method 1, and messages on accepted connections)");
  wharf::tools::AddServeFlags(*serve, serve_options);

  wharf::tools::PingOptions ping_options;
  CLI::App* ping =
      app.add_subcommand("ping", "Measure RPC round trips to a `wharf serve` (RTT percentiles, loss)");
  wharf::tools::AddPingFlags(*ping, ping_options);

  wharf::tools::RmaOptions rma_options;
  CLI::App* rma = app.add_subcommand(
      "rma", "One remote-memory operation (read, write, cas, add) on the region a "
             "`wharf serve --lend-bytes N` lends (ucx://)");
  wharf::tools::AddRmaFlags(*rma, rma_options);

  wharf::tools::DaemonOptions daemon_options;
  CLI::App* daemon = app.add_subcommand(
      "daemon", "Run wharfd, the host's transport daemon, in the foreground (same as `wharfd`)");
  wharf::tools::AddDaemonFlags(*daemon, daemon_options);

  wharf::tools::StatusOptions status_options;
  CLI::App* status = app.add_subcommand(
      "status", "Show what the local wharfd is doing: applications, connections, RPCs, bytes");
  wharf::tools::AddStatusFlags(*status, status_options);

  wharf::tools::MeshOptions mesh_options;
  CLI::App* mesh = wharf::tools::AddMeshCommand(app, mesh_options);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (*check) return wharf::tools::RunCheck(check_options);
  if (*bench) return wharf::tools::RunBench(bench_options);
  if (*serve) return wharf::tools::RunServe(serve_options);
  if (*ping) return wharf::tools::RunPing(ping_options);
  if (*rma) return wharf::tools::RunRma(rma_options);
  if (*daemon) return wharf::tools::RunDaemon(daemon_options);
  if (*status) return wharf::tools::RunStatus(status_options);
  if (*mesh) return wharf::tools::RunMesh(mesh_options);
  return 2;
}
