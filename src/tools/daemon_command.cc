// `wharf daemon` / `wharfd`: configuration from file, flags and environment,
// then the daemon's loop on this thread, with the mesh prober on it and its
// HTTP pages on threads of their own; SIGINT/SIGTERM stop it cleanly (a
// signal-waiting thread calls Daemon::Stop), SIGHUP re-reads the pinglist.
#include "tools/daemon_command.h"

#include <CLI/CLI.hpp>

#include <pthread.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>

#include "daemon/wharfd.h"
#include "mesh/mesh_http.h"
#include "mesh/mesh_service.h"
#include "tools/common_flags.h"

namespace wharf::tools {

void AddDaemonFlags(CLI::App& app, DaemonOptions& o) {
  app.add_option("--config", o.config_file,
                 "YAML configuration (packaging/wharfd.yaml documents every key)")
      ->check(CLI::ExistingFile);
  app.add_option("--set", o.settings,
                 "Override one setting, e.g. --set limits.max_inflight=1024 (repeatable)");
  app.add_option("--socket", o.socket,
                 "Control socket path (default: $WHARF_SOCKET, else daemon.socket, else "
                 "/run/wharf/wharfd.sock)");
  app.add_option("--log-level", o.log_level, "trace, debug, info, warn, error or off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  app.add_flag("--check-config", o.check_config,
               "Load and check the configuration (file, --set, --socket), print the result and "
               "exit: 0 if it is valid");
}

int RunDaemon(const DaemonOptions& o) {
  auto settings = ParseSettings(o.settings);
  if (!settings.ok()) {
    std::fprintf(stderr, "wharfd: %s\n", settings.status().ToString().c_str());
    return 2;
  }
  // The socket: --socket, then WHARF_SOCKET, then the file's daemon.socket.
  std::string socket = o.socket;
  if (const char* env = std::getenv("WHARF_SOCKET"); socket.empty() && env != nullptr && *env) {
    socket = env;
  }
  if (!socket.empty()) settings->emplace_back("daemon.socket", socket);
  if (!o.log_level.empty()) settings->emplace_back("daemon.log_level", o.log_level);
  auto config = daemon::LoadDaemonConfig(o.config_file, *settings);
  if (!config.ok()) {
    std::fprintf(stderr, "wharfd: %s\n", config.status().ToString().c_str());
    return 2;
  }
  // The pinglist is configuration too: a bad one stops the start here.
  const daemon::MeshSettings mesh_settings = config->mesh;
  auto mesh = mesh::MeshService::Create(mesh_settings, SystemClock::Get(), std::random_device{}() |
                                        (uint64_t{std::random_device{}()} << 32));
  if (!mesh.ok()) {
    std::fprintf(stderr, "wharfd: %s\n", mesh.status().ToString().c_str());
    return 2;
  }
  if (o.check_config) {
    std::printf("wharfd: configuration OK: socket %s, homa %s, tcp %s, heap %llu B per "
                "application, at most %zu applications\n",
                config->socket_path.c_str(),
                config->listen_homa.empty() ? "(off)" : config->listen_homa.c_str(),
                config->listen_tcp.empty() ? "(off)" : config->listen_tcp.c_str(),
                static_cast<unsigned long long>(config->limits.heap_bytes),
                config->max_applications);
    return 0;
  }
  // Signals are taken by a thread of their own, blocked everywhere else
  // (threads started later inherit the mask).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  auto daemon = daemon::Daemon::Start(std::move(*config));
  if (!daemon.ok()) {
    std::fprintf(stderr, "wharfd: %s\n", daemon.status().ToString().c_str());
    return 1;
  }
  mesh::MeshService* service = mesh->get();
  if (Status added = (*daemon)->AddService(std::move(*mesh)); !added.ok()) {
    std::fprintf(stderr, "wharfd: %s\n", added.ToString().c_str());
    return 1;
  }
  std::unique_ptr<mesh::MeshHttp> http;
  if (!mesh_settings.http_listen.empty()) {
    auto started = mesh::MeshHttp::Start(mesh_settings.http_listen, &service->board(),
                                         SystemClock::Get());
    if (!started.ok()) {
      std::fprintf(stderr, "wharfd: %s\n", started.status().ToString().c_str());
      return 1;
    }
    http = std::move(*started);
    std::fprintf(stderr, "wharfd: metrics, API and dashboard on http://%s/\n",
                 http->address().ToString().c_str());
  }
  std::thread waiter([&] {
    for (;;) {
      int sig = 0;
      sigwait(&signals, &sig);
      if (sig != SIGHUP) break;
      (*daemon)->RequestReload();
    }
    (*daemon)->Stop();
  });
  Status s = (*daemon)->Run();
  // Wakes the waiter if Run ended for another reason than a signal.
  pthread_kill(waiter.native_handle(), SIGTERM);
  waiter.join();
  // The pages read the service's board: stop them before the daemon goes.
  http.reset();
  if (!s.ok()) {
    std::fprintf(stderr, "wharfd: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace wharf::tools
