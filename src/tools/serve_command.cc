// `wharf serve`.
#include "tools/serve_command.h"

#include <CLI/CLI.hpp>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "wharf/endpoint.h"

namespace wharf::tools {
namespace {

std::atomic<Endpoint*> g_endpoint{nullptr};
std::atomic<bool> g_stop{false};

void OnSignal(int) {
  g_stop = true;
  if (Endpoint* ep = g_endpoint.load()) ep->Shutdown();  // an eventfd write: signal-safe
}

// Execution accounting: a request whose payload starts with an 8-byte id is
// recorded per client; a second run of the same id is a duplicate.
class ExecutionLog {
 public:
  void Record(std::string_view peer, const Buffer& request) {
    std::lock_guard<std::mutex> lock(mu_);
    ++executed_;
    if (request.size() < 8) return;
    uint64_t id;
    std::memcpy(&id, request.data(), 8);
    if (!seen_.emplace(std::string(peer), id).second) ++duplicates_;
  }
  std::string Summary() {
    std::lock_guard<std::mutex> lock(mu_);
    return "executed " + std::to_string(executed_) + " duplicates " + std::to_string(duplicates_);
  }

 private:
  std::mutex mu_;
  uint64_t executed_ = 0;
  uint64_t duplicates_ = 0;
  std::set<std::pair<std::string, uint64_t>> seen_;
};

// Echoes every message on `conn` until it closes; re-arms itself from the
// completion callback, so one thread serves any number of connections.
void EchoLoop(std::shared_ptr<Connection> conn) {
  Completion recv = conn->IRecv();
  recv.OnComplete([conn, recv](const Status& s) mutable {
    if (!s.ok()) return;  // closed or peer gone: the shared_ptr lets go
    conn->ISend(recv.TakeMessage());
    EchoLoop(conn);
  });
}

void AcceptLoop(Endpoint& ep) {
  // Accept without blocking the runner: poll for queued connections.
  while (true) {
    auto conn = ep.Accept(std::chrono::nanoseconds(0));
    if (!conn.ok()) return;
    EchoLoop(std::shared_ptr<Connection>(std::move(conn).value()));
  }
}

}  // namespace

void AddServeFlags(CLI::App& app, ServeOptions& options) {
  app.add_option("--listen", options.listen, "Address to serve on: homa://HOST:PORT, tcp://HOST:PORT, or HOST:PORT (endpoint.default_transport)")
      ->capture_default_str();
  app.add_option("--duration", options.duration_s,
                 "Stop after this many seconds (0: run until Ctrl-C / SIGTERM)")
      ->check(CLI::NonNegativeNumber);
  AddEndpointFlags(app, options.endpoint);
}

int RunServe(const ServeOptions& options) {
  auto settings = ParseSettings(options.endpoint.settings);
  if (!settings.ok()) {
    std::fprintf(stderr, "wharf serve: %s\n", settings.status().ToString().c_str());
    return 2;
  }
  auto ep = Endpoint::Open({.address = options.listen,
                            .config_file = options.endpoint.config_file,
                            .settings = *settings});
  if (!ep.ok()) {
    std::fprintf(stderr, "wharf serve: %s\n", ep.status().ToString().c_str());
    return 1;
  }
  Endpoint& endpoint = **ep;
  ExecutionLog log;
  Status s = endpoint.Serve(kEchoMethod, [&log](const RpcContext& ctx, Buffer request) {
    log.Record(ctx.peer, request);
    return Result<Buffer>(std::move(request));
  });
  if (s.ok()) {
    s = endpoint.Serve(kServerStatsMethod, [&log](const RpcContext&, Buffer) {
      return Result<Buffer>(Buffer::Copy(log.Summary()));
    });
  }
  if (s.ok()) s = endpoint.Listen();
  if (!s.ok()) {
    std::fprintf(stderr, "wharf serve: %s\n", s.ToString().c_str());
    return 1;
  }
  g_endpoint = &endpoint;
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::printf("listening on %s\n", endpoint.address().c_str());
  std::fflush(stdout);

  using Clock = std::chrono::steady_clock;
  auto end = options.duration_s > 0
                 ? Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(options.duration_s))
                 : Clock::time_point::max();
  // Run in short slices so new connections get their echo loop promptly
  // (their first messages wait in the connection's queue meanwhile).
  while (!g_stop && Clock::now() < end) {
    if (!endpoint.Run(std::chrono::milliseconds(5)).ok()) break;
    AcceptLoop(endpoint);
  }
  g_endpoint = nullptr;
  std::printf("%s\n", log.Summary().c_str());
  return 0;
}

}  // namespace wharf::tools
