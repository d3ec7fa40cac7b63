// daemon/session_receive_test.cc: placed receives end to end. An embedded
// client calls a managed server over homa, so its requests reach wharfd's
// socket and are received straight into the server's receive area, in one
// datagram or several. Those handed to the application are counted; those wharfd
// refuses on the application's behalf (limits.max_inflight) give their
// range back at once, so the area is empty again once the application has
// answered and dropped what it held.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <span>
#include <string>
#include <nlohmann/json.hpp>
#include <thread>

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

// The server application's entry in wharfd's status JSON.
nlohmann::json ServerStatus(const std::string& socket, const std::string& endpoint) {
  Result<std::string> text = daemon::testing::DaemonStatus(socket);
  EXPECT_TRUE(text.ok()) << text.status();
  if (!text.ok()) return nlohmann::json::object();
  const nlohmann::json all = nlohmann::json::parse(*text);
  for (const auto& app : all["applications"]) {
    if (app["endpoint"] == endpoint) return app;
  }
  ADD_FAILURE() << "no application " << endpoint << " in " << *text;
  return nlohmann::json::object();
}

// The server's receive_bytes_in_use once it reads 0, or after 2 s: releases
// reach wharfd a pass or so after the application drops its buffers.
uint64_t ReceiveBytesInUseOnceSettled(const std::string& socket, const std::string& endpoint) {
  uint64_t in_use = 1;
  for (int i = 0; i < 200 && in_use != 0; ++i) {
    in_use = ServerStatus(socket, endpoint)["receive_bytes_in_use"];
    if (in_use != 0) std::this_thread::sleep_for(10ms);
  }
  return in_use;
}

// A checksum of every byte, for echoes compared by value.
uint64_t Checksum(std::span<const std::byte> bytes) {
  uint64_t sum = 0;
  for (std::byte b : bytes) sum = sum * 31 + std::to_integer<uint64_t>(b);
  return sum;
}

TEST(SessionReceiveTest, RefusedPlacedRequestsGiveTheirRangeBack) {
  auto daemon = daemon::testing::DaemonThread::Start({{"limits.max_inflight", "4"}});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  auto server = Endpoint::Open({.address = "homa://127.0.0.1:0/placed",
                                .hosting = Hosting::kManaged,
                                .daemon_socket = (*daemon)->socket()});
  ASSERT_TRUE(server.ok()) << server.status();
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::pair<Responder, Buffer>> held;
  ASSERT_TRUE((*server)
                  ->ServeAsync(kMethod,
                               [&](const RpcContext&, Buffer request, Responder r) {
                                 std::lock_guard<std::mutex> lock(mu);
                                 held.emplace_back(std::move(r), std::move(request));
                                 cv.notify_all();
                               })
                  .ok());
  testing::ServerThread running(**server);
  // Embedded: its requests cross wharfd's UDP socket.
  auto client = Endpoint::Open({.address = "homa://127.0.0.1:0", .hosting = Hosting::kEmbedded});
  ASSERT_TRUE(client.ok()) << client.status();
  std::vector<Completion> calls;
  for (int i = 0; i < 6; ++i) {
    calls.push_back((*client)->ICall((*server)->address(), kMethod,
                                     Buffer::Copy("request " + std::to_string(i)),
                                     {.deadline = 10s}));
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 5s, [&] { return held.size() == 4; }));
  }
  int refused = 0;
  for (Completion& c : calls) {
    if (c.Wait(100ms).code() == StatusCode::kResourceExhausted) ++refused;
  }
  EXPECT_EQ(refused, 2);
  EXPECT_EQ(CounterOf((*server)->Stats(), "session.received_in_place"), 4u);
  {
    std::lock_guard<std::mutex> lock(mu);
    for (auto& [r, request] : held) {
      EXPECT_EQ(request.AsStringView().substr(0, 8), "request ");
      EXPECT_TRUE(r.Respond(std::move(request)).ok());
    }
    held.clear();  // drops the Responders and any request left
  }
  for (Completion& c : calls) {
    if (c.Wait(5s).ok()) {
      EXPECT_EQ(c.TakeMessage().AsStringView().substr(0, 8), "request ");
    }
  }
  // Every range of the area is back: the four handed over were released by
  // the application, the two refused by wharfd itself.
  EXPECT_EQ(ReceiveBytesInUseOnceSettled((*daemon)->socket(), (*server)->address()), 0u);
}

TEST(SessionReceiveTest, MessagesOfManyDatagramsArePlacedUpToAQuarterOfTheArea) {
  // An 8 MiB heap: a 4 MiB receive area, of which placed messages in transit
  // may hold 1 MiB.
  auto daemon = daemon::testing::DaemonThread::Start({{"limits.heap_bytes", "8388608"}});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  auto server = Endpoint::Open({.address = "homa://127.0.0.1:0/placed",
                                .hosting = Hosting::kManaged,
                                .daemon_socket = (*daemon)->socket()});
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE((*server)
                  ->Serve(kMethod,
                          [](const RpcContext&, Buffer request) -> Result<Buffer> {
                            return Buffer::Copy(std::to_string(request.size()) + ":" +
                                                std::to_string(Checksum(request.span())));
                          })
                  .ok());
  testing::ServerThread running(**server);
  auto client = Endpoint::Open({.address = "homa://127.0.0.1:0", .hosting = Hosting::kEmbedded});
  ASSERT_TRUE(client.ok()) << client.status();
  auto call = [&](size_t size) -> std::string {
    std::string bytes(size, '\0');
    for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>(i * 7 + i / 251);
    Buffer request = Buffer::Copy(bytes);
    const uint64_t sum = Checksum(request.span());
    Result<Buffer> answer =
        (*client)->Call((*server)->address(), kMethod, std::move(request), {.deadline = 10s});
    EXPECT_TRUE(answer.ok()) << size << " bytes: " << answer.status();
    if (!answer.ok()) return "";
    EXPECT_EQ(answer->AsStringView(), std::to_string(size) + ":" + std::to_string(sum));
    return std::string(answer->AsStringView());
  };
  // 200 KB: four loopback datagrams (64 KiB each at most), reassembled in
  // the server's receive area.
  for (int i = 0; i < 3; ++i) call(200'000);
  EXPECT_EQ(CounterOf((*server)->Stats(), "session.received_in_place"), 3u);
  // 2 MB is more than the quarter: homa's own memory, then one copy.
  call(2'000'000);
  EXPECT_EQ(CounterOf((*server)->Stats(), "session.received_in_place"), 3u);
  EXPECT_EQ(ReceiveBytesInUseOnceSettled((*daemon)->socket(), (*server)->address()), 0u);
}

}  // namespace
}  // namespace wharf
