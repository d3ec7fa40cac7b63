// messages: connections and one-way messages with wharf, both sides in one
// process (the server side runs on a thread of its own).
//
//   server: Listen(), Accept() a connection, echo every message until the
//           client disconnects, then accept the next one.
//   client: Connect(); Send/Recv (blocking); ISend/IRecv (asynchronous, with
//           Completions); an ordered connection; Disconnect().
//
// Messages keep their boundaries and may be up to 64 MiB. On a plain
// connection a short message may overtake a long one (wharf schedules the
// shortest remaining first); an ordered connection delivers in send order.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "wharf/endpoint.h"

namespace {

using namespace std::chrono_literals;

// Prints `what` and the status; true if ok.
bool Check(const wharf::Status& s, const char* what) {
  if (!s.ok()) std::fprintf(stderr, "%s: %s\n", what, s.ToString().c_str());
  return s.ok();
}

// Accepts `connections` connections one after the other and echoes each
// message back on the connection it came from.
void EchoServer(wharf::Endpoint& server, int connections) {
  for (int i = 0; i < connections; ++i) {
    auto conn = server.Accept(10s);
    if (!Check(conn.status(), "server: accept")) return;
    while (true) {
      // kUnavailable: the client disconnected and everything it sent was read.
      wharf::Result<wharf::Buffer> m = (*conn)->Recv(10s);
      if (!m.ok()) break;
      if (!Check((*conn)->Send(std::move(m).value()), "server: send")) return;
    }
  }
}

// A message of `size` bytes whose content says which one it is.
wharf::Buffer Pattern(size_t size, char fill) {
  wharf::Buffer b = wharf::Buffer::Allocate(size);
  std::fill_n(reinterpret_cast<char*>(b.data()), size, fill);
  return b;
}

bool IsPattern(const wharf::Buffer& b, size_t size, char fill) {
  const char* p = reinterpret_cast<const char*>(b.data());
  return b.size() == size && std::all_of(p, p + size, [fill](char c) { return c == fill; });
}

bool RunClient(wharf::Endpoint& client, const std::string& server) {
  // 1. Blocking send and receive.
  auto conn = client.Connect(server);
  if (!Check(conn.status(), "connect")) return false;
  if (!Check((*conn)->Send(wharf::Buffer::Copy("hello")), "send")) return false;
  auto reply = (*conn)->Recv(5s);
  if (!Check(reply.status(), "recv")) return false;
  std::printf("blocking: sent 'hello', got '%s' back\n",
              std::string(reply->AsStringView()).c_str());

  // 2. Asynchronous: post the receives first, then the sends, and wait for
  // all completions. Echoes may come back in any order (shortest first).
  const std::vector<std::pair<size_t, char>> sizes = {{1'000'000, 'L'}, {100'000, 'M'}, {10, 's'}};
  std::vector<wharf::Completion> recvs, sends;
  for (size_t i = 0; i < sizes.size(); ++i) recvs.push_back((*conn)->IRecv());
  for (auto [size, fill] : sizes) sends.push_back((*conn)->ISend(Pattern(size, fill)));
  for (wharf::Completion& c : sends) {
    if (!Check(c.Wait(5s), "isend")) return false;
  }
  std::string order;
  for (wharf::Completion& c : recvs) {
    if (!Check(c.Wait(5s), "irecv")) return false;
    wharf::Buffer m = c.TakeMessage();
    auto it = std::find_if(sizes.begin(), sizes.end(),
                           [&](auto& p) { return IsPattern(m, p.first, p.second); });
    if (it == sizes.end()) {
      std::fprintf(stderr, "irecv: an echo of %zu bytes matches no message sent\n", m.size());
      return false;
    }
    order += std::to_string(m.size()) + " ";
  }
  std::printf("async: echoes arrived as %s(bytes)\n", order.c_str());
  if (!Check((*conn)->Disconnect(), "disconnect")) return false;

  // 3. An ordered connection: the long message goes first and stays first.
  auto ordered = client.Connect(server, {.ordered = true});
  if (!Check(ordered.status(), "connect ordered")) return false;
  const std::vector<std::pair<size_t, char>> in_order = {{2'000'000, 'B'}, {1, 'a'}, {2, 'b'}};
  for (auto [size, fill] : in_order) sends.push_back((*ordered)->ISend(Pattern(size, fill)));
  for (auto [size, fill] : in_order) {
    auto m = (*ordered)->Recv(5s);
    if (!Check(m.status(), "recv ordered")) return false;
    if (!IsPattern(*m, size, fill)) {
      std::fprintf(stderr, "ordered: expected %zu x '%c', got %zu bytes\n", size, fill, m->size());
      return false;
    }
  }
  std::printf("ordered: echoes arrived in send order (2000000 1 2)\n");
  return Check((*ordered)->Disconnect(), "disconnect ordered");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"messages: connect/listen/accept, send/recv, isend/irecv and ordered connections"};
  CLI11_PARSE(app, argc, argv);

  auto server = wharf::Endpoint::Open({.address = "homa://127.0.0.1:0"});
  auto client = wharf::Endpoint::Open({.address = "homa://127.0.0.1:0"});
  if (!Check(server.status(), "open server") || !Check(client.status(), "open client")) return 1;
  // Before Listen(), connection attempts are refused with kUnavailable.
  if (!Check((*server)->Listen(), "listen")) return 1;

  std::thread server_thread(EchoServer, std::ref(**server), 2);
  bool ok = RunClient(**client, (*server)->address());
  // A failed client leaves the server waiting in Accept; closing the client
  // endpoint first and then joining bounds that wait to its timeout.
  client->reset();
  server_thread.join();
  std::printf("%s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
