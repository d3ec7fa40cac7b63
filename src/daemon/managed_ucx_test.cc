// daemon/managed_ucx_test.cc: ucx:// inside wharfd. A managed endpoint on
// ucx:// serves an embedded client, and calls an embedded server: the
// traffic crosses UCX (not wharfd's same-host switch), requests are
// received straight into the server application's receive area where they
// fit, every echo is checked by value, and `wharf status`'s JSON names the
// UCX lanes each managed client's peers are reached by.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "base/testing/counter_of.h"
#include "client/testing/server_thread.h"
#include "daemon/testing/daemon_thread.h"
#include "daemon/testing/rogue_app.h"
#include "wharf/endpoint.h"

namespace wharf {
namespace {

using namespace std::chrono_literals;
using testing_support::CounterOf;
constexpr uint32_t kMethod = 7;

uint64_t Checksum(std::span<const std::byte> bytes) {
  uint64_t sum = 0;
  for (std::byte b : bytes) sum = sum * 31 + std::to_integer<uint64_t>(b);
  return sum;
}

Buffer Pattern(size_t size) {
  Buffer b = Buffer::Allocate(size);
  for (size_t i = 0; i < size; ++i) b.data()[i] = static_cast<std::byte>(i * 7 + i / 251);
  return b;
}

// Answers each request with its size and checksum.
Status ServeChecksums(Endpoint& server) {
  return server.Serve(kMethod, [](const RpcContext&, Buffer request) -> Result<Buffer> {
    return Buffer::Copy(std::to_string(request.size()) + ":" +
                        std::to_string(Checksum(request.span())));
  });
}

void CallEverySize(Endpoint& client, const std::string& server) {
  for (size_t size : {size_t{0}, size_t{1}, size_t{8192}, size_t{200'000}, size_t{4} << 20,
                      size_t{32} << 20}) {
    Buffer request = Pattern(size);
    const std::string expected = std::to_string(size) + ":" + std::to_string(Checksum(request.span()));
    Result<Buffer> answer = client.Call(server, kMethod, std::move(request), {.deadline = 20s});
    ASSERT_TRUE(answer.ok()) << size << " bytes: " << answer.status();
    EXPECT_EQ(answer->AsStringView(), expected) << size << " bytes";
  }
}

std::unique_ptr<daemon::testing::DaemonThread> StartDaemon() {
  // Room in the shared heap for the 32 MiB messages each way.
  auto d = daemon::testing::DaemonThread::Start({{"limits.heap_bytes", "144MiB"}});
  EXPECT_TRUE(d.ok()) << d.status();
  return d.ok() ? std::move(*d) : nullptr;
}

TEST(ManagedUcxTest, AManagedServerAnswersAnEmbeddedClientOverUcx) {
  auto daemon = StartDaemon();
  ASSERT_NE(daemon, nullptr);
  auto server = Endpoint::Open({.address = "ucx://127.0.0.1:0",
                                .hosting = Hosting::kManaged,
                                .daemon_socket = daemon->socket()});
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ((*server)->address().rfind("ucx://127.0.0.1:", 0), 0u) << (*server)->address();
  ASSERT_TRUE(ServeChecksums(**server).ok());
  testing::ServerThread running(**server);
  auto client = Endpoint::Open({.address = "ucx://127.0.0.1:0", .hosting = Hosting::kEmbedded});
  ASSERT_TRUE(client.ok()) << client.status();
  CallEverySize(**client, (*server)->address());
  // UCX received them into the application's receive area (the largest
  // do not fit there and take one copy instead).
  EXPECT_GE(CounterOf((*server)->Stats(), "session.received_in_place"), 4u);
  EXPECT_EQ(CounterOf((*client)->Stats(), "ucx.responses_received"), 6u);
}

TEST(ManagedUcxTest, AManagedClientCallsAnEmbeddedServerAndStatusNamesTheLanes) {
  auto daemon = StartDaemon();
  ASSERT_NE(daemon, nullptr);
  auto server = Endpoint::Open({.address = "ucx://127.0.0.1:0", .hosting = Hosting::kEmbedded});
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE(ServeChecksums(**server).ok());
  ASSERT_TRUE((*server)->Listen().ok());
  testing::ServerThread running(**server);
  auto client = Endpoint::Open({.address = "ucx://127.0.0.1:0",
                                .hosting = Hosting::kManaged,
                                .daemon_socket = daemon->socket()});
  ASSERT_TRUE(client.ok()) << client.status();
  CallEverySize(**client, (*server)->address());
  // And a connection.
  auto conn = (*client)->Connect((*server)->address());
  ASSERT_TRUE(conn.ok()) << conn.status();
  EXPECT_EQ((*conn)->peer(), (*server)->address());

  Result<std::string> text = daemon::testing::DaemonStatus(daemon->socket());
  ASSERT_TRUE(text.ok()) << text.status();
  const nlohmann::json all = nlohmann::json::parse(*text);
  bool found = false;
  for (const auto& app : all["applications"]) {
    if (app["endpoint"] != (*client)->address()) continue;
    for (const auto& path : app["paths"]) {
      if (path["peer"] != (*server)->address()) continue;
      found = true;
      EXPECT_NE(path["path"].get<std::string>().find("tcp/"), std::string::npos) << path;
    }
  }
  EXPECT_TRUE(found) << "no path to " << (*server)->address() << " in " << *text;
}

}  // namespace
}  // namespace wharf
