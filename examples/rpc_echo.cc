// rpc_echo: the smallest wharf RPC server and client.
//
//   rpc_echo                                     both sides in this process
//   rpc_echo --server --listen homa://127.0.0.1:4000
//   rpc_echo --client homa://127.0.0.1:4000 --message hi --count 3
//
// A server registers one handler per method id (Endpoint::Serve) and drives
// its endpoint (Endpoint::Run); handlers run on that driving thread. A client
// calls Endpoint::Call, which blocks until the response arrives, the deadline
// passes (kDeadlineExceeded) or the server is found dead (kUnavailable).
#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>

#include "wharf/endpoint.h"

namespace {

using namespace std::chrono_literals;

constexpr uint32_t kEchoMethod = 1;

std::atomic<wharf::Endpoint*> g_server{nullptr};

// Shutdown() only writes an eventfd, so it is safe in a signal handler.
void OnSignal(int) {
  if (wharf::Endpoint* ep = g_server.load()) ep->Shutdown();
}

wharf::Status AddEchoHandler(wharf::Endpoint& server) {
  return server.Serve(
      kEchoMethod,
      [](const wharf::RpcContext& ctx, wharf::Buffer request) -> wharf::Result<wharf::Buffer> {
        std::printf("server: %zu bytes from %.*s\n", request.size(),
                    static_cast<int>(ctx.peer.size()), ctx.peer.data());
        // Echo: hand the request's bytes back without a copy.
        return request;
      });
}

// Calls the echo method `count` times and checks each answer.
int RunClient(const std::string& server, const std::string& message, int count) {
  // The client's own address only needs the server's address family.
  std::string bind = server.find('[') != std::string::npos ? "homa://[::]:0" : "homa://0.0.0.0:0";
  auto client = wharf::Endpoint::Open({.address = bind});
  if (!client.ok()) {
    std::fprintf(stderr, "client: %s\n", client.status().ToString().c_str());
    return 1;
  }
  for (int i = 0; i < count; ++i) {
    wharf::Result<wharf::Buffer> reply =
        (*client)->Call(server, kEchoMethod, wharf::Buffer::Copy(message), {.deadline = 5s});
    if (!reply.ok()) {
      std::fprintf(stderr, "client: call %d: %s\n", i, reply.status().ToString().c_str());
      return 1;
    }
    if (reply->AsStringView() != message) {
      std::fprintf(stderr, "client: call %d: the echo differs from the request\n", i);
      return 1;
    }
    std::printf("client: echo %d: %s\n", i, std::string(reply->AsStringView()).c_str());
  }
  return 0;
}

// Serves until SIGINT/SIGTERM.
int RunServer(const std::string& listen) {
  auto server = wharf::Endpoint::Open({.address = listen});
  if (!server.ok()) {
    std::fprintf(stderr, "server: %s\n", server.status().ToString().c_str());
    return 1;
  }
  if (wharf::Status s = AddEchoHandler(**server); !s.ok()) {
    std::fprintf(stderr, "server: %s\n", s.ToString().c_str());
    return 1;
  }
  g_server = server->get();
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::printf("listening on %s\n", (*server)->address().c_str());
  std::fflush(stdout);
  // Run returns when a signal calls Shutdown().
  wharf::Status s = (*server)->Run();
  g_server = nullptr;
  return s.ok() ? 0 : 1;
}

// Both sides in one process: the server endpoint runs on a thread of its own.
int RunBoth(const std::string& message, int count) {
  auto server = wharf::Endpoint::Open({.address = "homa://127.0.0.1:0"});
  if (!server.ok()) {
    std::fprintf(stderr, "server: %s\n", server.status().ToString().c_str());
    return 1;
  }
  if (wharf::Status s = AddEchoHandler(**server); !s.ok()) {
    std::fprintf(stderr, "server: %s\n", s.ToString().c_str());
    return 1;
  }
  wharf::Endpoint& ep = **server;
  // A Shutdown() that comes before Run() starts is not lost: Run returns at once.
  std::thread runner([&ep] { (void)ep.Run(); });
  int rc = RunClient(ep.address(), message, count);
  ep.Shutdown();
  runner.join();
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rpc_echo: an echo RPC server and client with wharf"};
  bool server_mode = false;
  std::string listen = "homa://127.0.0.1:0";
  std::string target;
  std::string message = "hello, wharf";
  int count = 1;
  app.add_flag("--server", server_mode, "Only serve (until Ctrl-C)");
  app.add_option("--listen", listen, "Server address, homa://HOST:PORT")->capture_default_str();
  app.add_option("--client", target, "Only call the server at this address");
  app.add_option("--message", message, "Request payload")->capture_default_str();
  app.add_option("--count", count, "Calls to make")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  if (server_mode && !target.empty()) {
    std::fprintf(stderr, "rpc_echo: pick one of --server and --client\n");
    return 2;
  }
  if (server_mode) return RunServer(listen);
  if (!target.empty()) return RunClient(target, message, count);
  return RunBoth(message, count);
}
