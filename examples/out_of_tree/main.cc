// main.cc: the smallest complete wharf application, built outside the wharf
// tree (CMakeLists.txt here, or `c++ -std=c++20 main.cc $(pkg-config --cflags
// --static --libs wharf)`). Two embedded endpoints on 127.0.0.1 with
// kernel-picked ports: the client makes one RPC to the server and exchanges
// one message with it over a connection. Prints "ok" and exits 0 when both
// worked.
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <utility>

#include "wharf/build_info.h"
#include "wharf/endpoint.h"

namespace {

using namespace std::chrono_literals;

constexpr uint32_t kEchoMethod = 1;

bool Check(const wharf::Status& s, const char* what) {
  if (!s.ok()) std::fprintf(stderr, "%s: %s\n", what, s.ToString().c_str());
  return s.ok();
}

// The server's thread: echoes one message on the first connection, then
// drives the endpoint (serving RPCs) until Shutdown().
void Serve(wharf::Endpoint& server) {
  if (auto conn = server.Accept(10s); Check(conn.status(), "server: accept")) {
    if (auto m = (*conn)->Recv(10s); Check(m.status(), "server: recv")) {
      (void)Check((*conn)->Send(std::move(m).value()), "server: send");
    }
  }
  (void)server.Run();
}

bool RunClient(wharf::Endpoint& client, const std::string& server) {
  auto conn = client.Connect(server);
  if (!Check(conn.status(), "connect")) return false;
  if (!Check((*conn)->Send(wharf::Buffer::Copy("hello")), "send")) return false;
  auto echo = (*conn)->Recv(10s);
  if (!Check(echo.status(), "recv")) return false;
  if (echo->AsStringView() != "hello") {
    std::fprintf(stderr, "recv: expected 'hello', got '%s'\n",
                 std::string(echo->AsStringView()).c_str());
    return false;
  }

  auto reply = client.Call(server, kEchoMethod, wharf::Buffer::Copy("ping"), {.deadline = 10s});
  if (!Check(reply.status(), "call")) return false;
  if (reply->AsStringView() != "ping") {
    std::fprintf(stderr, "call: expected 'ping', got '%s'\n",
                 std::string(reply->AsStringView()).c_str());
    return false;
  }
  // The server drops its side after the echo; *conn closes on destruction.
  return true;
}

}  // namespace

int main() {
  auto server = wharf::Endpoint::Open({.address = "homa://127.0.0.1:0"});
  auto client = wharf::Endpoint::Open({.address = "homa://127.0.0.1:0"});
  if (!Check(server.status(), "open server") || !Check(client.status(), "open client")) return 1;
  wharf::Status served = (*server)->Serve(
      kEchoMethod, [](const wharf::RpcContext&, wharf::Buffer request) -> wharf::Result<wharf::Buffer> {
        return request;
      });
  if (!Check(served, "serve") || !Check((*server)->Listen(), "listen")) return 1;

  std::thread server_thread(Serve, std::ref(**server));
  bool ok = RunClient(**client, (*server)->address());
  // A Shutdown() before Run() starts is kept, so the thread ends either way
  // (after its Accept/Recv time out, if the client failed early).
  (*server)->Shutdown();
  server_thread.join();
  std::printf("wharf %s, embedded endpoints\n%s\n", wharf::kVersion, ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
