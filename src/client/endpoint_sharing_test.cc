// Several endpoints on one engine and socket: a process that opens
// homa://HOST:PORT/a and homa://HOST:PORT/b gets two endpoints on one UDP
// socket, told apart by name on the wire; clients reach each by name.
#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "client/testing/server_thread.h"
#include "wharf/endpoint.h"

namespace wharf {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<Endpoint> MustOpen(const std::string& address) {
  auto ep = Endpoint::Open({.address = address});
  if (!ep.ok()) ADD_FAILURE() << address << ": " << ep.status();
  return ep.ok() ? std::move(ep).value() : nullptr;
}

// The port of "homa://127.0.0.1:PORT[/name]".
std::string HostPort(const std::string& address) {
  std::string rest = address.substr(address.find("://") + 3);
  return rest.substr(0, rest.find('/'));
}

uint64_t StatOf(const Endpoint& ep, const std::string& name) {
  for (const auto& [key, value] : ep.Stats()) {
    if (key == name) return value;
  }
  return 0;
}

using Runner = testing::ServerThread;

TEST(EndpointSharingTest, TwoNamedEndpointsShareOneSocket) {
  auto a = MustOpen("homa://127.0.0.1:0/a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->address().substr(a->address().size() - 2), "/a") << a->address();
  const std::string host_port = HostPort(a->address());
  auto b = MustOpen("homa://" + host_port + "/b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->address(), "homa://" + host_port + "/b");
  ASSERT_TRUE(a->Serve(1, [](const RpcContext&, Buffer) { return Result<Buffer>(Buffer::Copy("A")); }).ok());
  ASSERT_TRUE(b->Serve(1, [](const RpcContext&, Buffer) { return Result<Buffer>(Buffer::Copy("B")); }).ok());
  // One runner drives both: they share the engine's poll passes.
  Runner run(*a);
  auto client = MustOpen("homa://127.0.0.1:0");
  auto ra = client->Call("homa://" + host_port + "/a", 1, Buffer(), {.deadline = 5s});
  auto rb = client->Call("homa://" + host_port + "/b", 1, Buffer(), {.deadline = 5s});
  ASSERT_TRUE(ra.ok()) << ra.status();
  ASSERT_TRUE(rb.ok()) << rb.status();
  EXPECT_EQ(ra->AsStringView(), "A");
  EXPECT_EQ(rb->AsStringView(), "B");
  // Their socket counters are the same socket's: both count every packet.
  // The runner still reads late packets (the client's acks), so compare
  // b's count with two of a's that agree: nothing arrived in between.
  uint64_t a_before = 0;
  uint64_t b_count = 0;
  uint64_t a_after = 1;
  for (int i = 0; i < 1000 && a_before != a_after; ++i) {
    a_before = StatOf(*a, "udp.received");
    b_count = StatOf(*b, "udp.received");
    a_after = StatOf(*a, "udp.received");
  }
  ASSERT_EQ(a_before, a_after) << "packets kept arriving";
  EXPECT_EQ(b_count, a_before);
  EXPECT_EQ(StatOf(*a, "homa.endpoints"), 2u);
}

TEST(EndpointSharingTest, AShortCallToOneOvertakesALongOneToTheOther) {
  auto bulk = MustOpen("homa://127.0.0.1:0/bulk");
  const std::string host_port = HostPort(bulk->address());
  auto quick = MustOpen("homa://" + host_port + "/quick");
  ASSERT_TRUE(bulk && quick);
  std::atomic<int> order{0};
  std::atomic<int> bulk_done_at{0};
  std::atomic<int> quick_done_at{0};
  ASSERT_TRUE(bulk->Serve(1, [](const RpcContext&, Buffer r) { return Result<Buffer>(std::move(r)); }).ok());
  ASSERT_TRUE(quick->Serve(1, [](const RpcContext&, Buffer r) { return Result<Buffer>(std::move(r)); }).ok());
  Runner run(*bulk);
  auto client = MustOpen("homa://127.0.0.1:0");
  std::string big(16 << 20, 'x');
  Completion long_call =
      client->ICall("homa://" + host_port + "/bulk", 1, Buffer::Copy(big), {.deadline = 20s});
  long_call.OnComplete([&](const Status&) { bulk_done_at = ++order; });
  Completion short_call =
      client->ICall("homa://" + host_port + "/quick", 1, Buffer::Copy("hi"), {.deadline = 20s});
  short_call.OnComplete([&](const Status&) { quick_done_at = ++order; });
  ASSERT_TRUE(long_call.Wait().ok()) << long_call.status();
  ASSERT_TRUE(short_call.Wait().ok()) << short_call.status();
  EXPECT_EQ(quick_done_at.load(), 1);
  EXPECT_EQ(bulk_done_at.load(), 2);
  EXPECT_EQ(long_call.TakeMessage().size(), big.size());
  EXPECT_EQ(short_call.TakeMessage().AsStringView(), "hi");
}

TEST(EndpointSharingTest, NamesAreCheckedAndFreedWithTheirEndpoint) {
  auto first = MustOpen("homa://127.0.0.1:0/svc");
  const std::string host_port = HostPort(first->address());
  // The same name twice on one socket is refused.
  auto again = Endpoint::Open({.address = "homa://" + host_port + "/svc"});
  EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists) << again.status();
  // The default endpoint may join a named one.
  auto plain = MustOpen("homa://" + host_port);
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(plain->address(), "homa://" + host_port);
  // Closing an endpoint frees its name; the socket stays while one is open.
  first.reset();
  auto reopened = MustOpen("homa://" + host_port + "/svc");
  EXPECT_NE(reopened, nullptr);
  // tcp:// has one endpoint per port.
  auto named_tcp = Endpoint::Open({.address = "tcp://127.0.0.1:0/svc"});
  EXPECT_EQ(named_tcp.status().code(), StatusCode::kInvalidArgument) << named_tcp.status();
  // Malformed names.
  for (const char* bad : {"homa://127.0.0.1:0/", "homa://127.0.0.1:0/#0", "homa://127.0.0.1:0/#70000",
                          "homa://127.0.0.1:0/a/b"}) {
    EXPECT_EQ(Endpoint::Open({.address = bad}).status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(EndpointSharingTest, ACallToAnEndpointNobodyOpenedFails) {
  auto server = MustOpen("homa://127.0.0.1:0/here");
  const std::string host_port = HostPort(server->address());
  Runner run(*server);
  auto client = MustOpen("homa://127.0.0.1:0");
  auto r = client->Call("homa://" + host_port + "/elsewhere", 1, Buffer(), {.deadline = 5s});
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status();
}

TEST(EndpointSharingTest, AServerSeesANamedClientByItsId) {
  auto server = MustOpen("homa://127.0.0.1:0");
  std::string seen;
  ASSERT_TRUE(server->Serve(1, [&](const RpcContext& ctx, Buffer) {
    seen = std::string(ctx.peer);
    return Result<Buffer>(Buffer());
  }).ok());
  Runner run(*server);
  auto client = MustOpen("homa://127.0.0.1:0/caller");
  ASSERT_TRUE(client->Call(server->address(), 1, Buffer(), {.deadline = 5s}).ok());
  // homa://127.0.0.1:PORT/#ID: the client's socket and its endpoint id.
  EXPECT_NE(seen.find("/#"), std::string::npos) << seen;
  EXPECT_EQ(HostPort(seen), HostPort(client->address()));
}

}  // namespace
}  // namespace wharf
