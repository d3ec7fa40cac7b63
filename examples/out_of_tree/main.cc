// main.cc: the smallest complete wharf application, built outside the wharf
// tree (CMakeLists.txt here, or `c++ -std=c++20 main.cc $(pkg-config --cflags
// --static --libs wharf)`). Two endpoints on 127.0.0.1 (embedded, or
// managed when a wharfd runs) with kernel-picked ports: the client makes one RPC to the server and exchanges
// one message with it over a connection. Built with its greeter.proto
// (CMakeLists.txt, when the installed wharf has typed RPCs: the compile
// definition WHARF_APP_GREETER), it also calls the server's Greeter through
// the generated stub. Prints "ok" and exits 0 when all of it worked.
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <utility>

#include "wharf/build_info.h"
#include "wharf/endpoint.h"

#ifdef WHARF_APP_GREETER
#include "greeter.wharf.h"  // generated from greeter.proto
#endif

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

#ifdef WHARF_APP_GREETER
// The server side of greeter.proto: the generated Service, one override.
class GreeterService final : public greeter::Greeter::Service {
 public:
  wharf::Result<greeter::HelloReply> SayHello(const wharf::rpc::ServerContext&,
                                              const greeter::HelloRequest& request) override {
    greeter::HelloReply reply;
    reply.set_message("Hello, " + request.name() + "!");
    return reply;
  }
  void SayHellos(const greeter::HelloRequest& request,
                 wharf::rpc::ServerStreamPtr<greeter::HelloRequest, greeter::HelloReply> stream)
      override {
    for (uint32_t i = 1; i <= request.count(); ++i) {
      greeter::HelloReply reply;
      reply.set_message("Hello #" + std::to_string(i) + ", " + request.name() + "!");
      if (!stream->Write(reply).ok()) return;  // the client went away
    }
    stream->Finish().IgnoreError();
  }
};

// Calls SayHello through the generated stub; prints the greeting.
bool Greet(wharf::Endpoint& client, const std::string& server) {
  greeter::Greeter::Stub stub(client, server);
  greeter::HelloRequest request;
  request.set_name("wharf_app");
  wharf::Result<greeter::HelloReply> reply = stub.SayHello(request, {.deadline = 10s});
  if (!Check(reply.status(), "SayHello")) return false;
  std::printf("typed RPC: %s\n", reply->message().c_str());

  request.set_count(3);
  auto stream = stub.SayHellos(request, {.deadline = 10s});
  if (!Check(stream.status(), "SayHellos")) return false;
  uint32_t greetings = 0;
  while (true) {
    auto next = stream->Read();
    if (!Check(next.status(), "SayHellos: read")) return false;
    if (!next->has_value()) break;
    std::printf("typed stream: %s\n", (*next)->message().c_str());
    ++greetings;
  }
  if (!Check(stream->Finish(), "SayHellos: finish")) return false;
  if (greetings != 3) {
    std::fprintf(stderr, "SayHellos: expected 3 greetings, got %u\n", greetings);
    return false;
  }
  return true;
}
#endif

}  // namespace

int main() {
#ifdef WHARF_APP_GREETER
  GreeterService greeter_service;  // outlives the server endpoint it serves on
#endif
  auto server = wharf::Endpoint::Open({.address = "homa://127.0.0.1:0"});
  auto client = wharf::Endpoint::Open({.address = "homa://127.0.0.1:0"});
  if (!Check(server.status(), "open server") || !Check(client.status(), "open client")) return 1;
  wharf::Status served = (*server)->Serve(
      kEchoMethod, [](const wharf::RpcContext&, wharf::Buffer request) -> wharf::Result<wharf::Buffer> {
        return request;
      });
  if (!Check(served, "serve") || !Check((*server)->Listen(), "listen")) return 1;
#ifdef WHARF_APP_GREETER
  if (!Check(greeter_service.Register(**server), "register the greeter")) return 1;
#endif

  std::thread server_thread(Serve, std::ref(**server));
  std::printf("wharf %s, %s endpoints\n", wharf::kVersion,
              (*server)->managed() ? "managed" : "embedded");
  bool ok = RunClient(**client, (*server)->address());
#ifdef WHARF_APP_GREETER
  ok = ok && Greet(**client, (*server)->address());
#endif
  // A Shutdown() before Run() starts is kept, so the thread ends either way
  // (after its Accept/Recv time out, if the client failed early).
  (*server)->Shutdown();
  server_thread.join();
  std::printf("%s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
