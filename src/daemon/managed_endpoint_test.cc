// daemon/managed_endpoint_test.cc: the public API in managed mode against a
// wharfd on a thread: RPCs, messages, zero-copy buffers, errors, limits,
// same-host delivery, and applications coming and going.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "base/clock.h"
#include "client/daemon_link.h"
#include "client/testing/server_thread.h"
#include "daemon/testing/daemon_thread.h"
#include "wharf/endpoint.h"

namespace wharf {
namespace {

using daemon::testing::DaemonThread;

class ManagedEndpointTest : public ::testing::Test {
 protected:
  void SetUp() override { Start({}); }
  void Start(std::vector<std::pair<std::string, std::string>> settings) {
    auto d = DaemonThread::Start(std::move(settings));
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    daemon_ = std::move(*d);
  }
  Result<std::unique_ptr<Endpoint>> Open(std::string address = "homa://0.0.0.0:0") {
    return Endpoint::Open({.address = std::move(address),
                           .hosting = Hosting::kManaged,
                           .daemon_socket = daemon_->socket()});
  }
  // The commands wharfd executed for the application at `address` (its
  // status entry).
  uint64_t CommandsExecuted(const std::string& address) {
    Result<std::string> text = internal::QueryDaemonStatus(daemon_->socket(), std::chrono::seconds(5));
    EXPECT_TRUE(text.ok()) << text.status();
    if (!text.ok()) return 0;
    const nlohmann::json doc = nlohmann::json::parse(*text);
    for (const auto& app : doc["applications"]) {
      if (app["endpoint"] == address) return app["commands"].get<uint64_t>();
    }
    ADD_FAILURE() << "no application at " << address << " in " << *text;
    return 0;
  }
  std::unique_ptr<DaemonThread> daemon_;
};

uint64_t StatOf(Endpoint& e, const std::string& name) {
  for (const auto& [key, value] : e.Stats()) {
    if (key == name) return value;
  }
  ADD_FAILURE() << "no counter " << name;
  return 0;
}

// Method 7 answers "re:" and the request.
Status ServeEcho(Endpoint& server) {
  return server.Serve(7, [](const RpcContext&, Buffer req) -> Result<Buffer> {
    return Buffer::Copy("re:" + std::string(req.AsStringView()));
  });
}

TEST_F(ManagedEndpointTest, AMessageOverTheLimitFailsAloneAndTheSessionLives) {
  // wharfd ends the session of an application whose command ring holds a
  // longer descriptor: the library must refuse such a message itself.
  auto server = Open("homa://0.0.0.0:0/echo");
  auto client = Open();
  ASSERT_TRUE(server.ok() && client.ok());
  ASSERT_TRUE(ServeEcho(**server).ok());
  testing::ServerThread serving(**server);
  const size_t limit = size_t{64} << 20;  // homa.max_message_bytes
  Result<Buffer> big =
      (*client)->Call((*server)->address(), 7, Buffer::Copy(std::string(limit + 1, 'x')));
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kInvalidArgument) << big.status();
  EXPECT_NE(big.status().message().find("homa.max_message_bytes"), std::string::npos);
  // Still attached: the next call goes through.
  Result<Buffer> next = (*client)->Call((*server)->address(), 7, Buffer::Copy("hi"));
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->AsStringView(), "re:hi");
}

TEST_F(ManagedEndpointTest, RpcBetweenTwoApplications) {
  auto server = Open("homa://0.0.0.0:0/echo");
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  EXPECT_TRUE((*server)->managed());
  ASSERT_TRUE((*server)
                  ->Serve(7, [](const RpcContext& ctx, Buffer req) -> Result<Buffer> {
                    EXPECT_FALSE(ctx.peer.empty());
                    std::string out = "re:" + std::string(req.AsStringView());
                    return Buffer::Copy(out);
                  })
                  .ok());
  testing::ServerThread running(**server);
  auto client = Open();
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  for (int i = 0; i < 100; ++i) {
    Result<Buffer> r = (*client)->Call((*server)->address(), 7, Buffer::Copy("ping" + std::to_string(i)));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->AsStringView(), "re:ping" + std::to_string(i));
  }
  // Unserved methods and unknown endpoints fail for the caller only.
  EXPECT_EQ((*client)->Call((*server)->address(), 8, Buffer::Copy("x")).status().code(),
            StatusCode::kUnimplemented);
}


TEST_F(ManagedEndpointTest, HandlersSeeEachCallersOwnAddress) {
  // wharfd names each peer to the application once (kPeerName) and then
  // refers to it by id: two callers must never share a name, and one
  // caller's calls must all carry its own.
  auto server = Open("homa://0.0.0.0:0/echo");
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  std::mutex mu;
  std::vector<std::string> peers;
  ASSERT_TRUE((*server)
                  ->Serve(7, [&](const RpcContext& ctx, Buffer req) -> Result<Buffer> {
                    std::lock_guard<std::mutex> lock(mu);
                    peers.emplace_back(ctx.peer);
                    return req;
                  })
                  .ok());
  testing::ServerThread running(**server);
  std::vector<std::unique_ptr<Endpoint>> clients;
  for (int c = 0; c < 2; ++c) {
    auto client = Endpoint::Open({.address = "homa://127.0.0.1:0"});
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    clients.push_back(std::move(*client));
  }
  for (int round = 0; round < 3; ++round) {
    for (auto& client : clients) {
      ASSERT_TRUE(client->Call((*server)->address(), 7, Buffer::Copy("x")).ok());
    }
  }
  ASSERT_EQ(peers.size(), 6u);
  for (size_t i = 0; i < peers.size(); ++i) {
    // "homa://127.0.0.1:PORT": the caller's own socket, port included.
    const std::string& own = clients[i % 2]->address();
    const std::string port = own.substr(own.rfind(':'));
    EXPECT_NE(peers[i].find("127.0.0.1" + port), std::string::npos) << peers[i] << " vs " << own;
    EXPECT_EQ(peers[i], peers[i % 2]);
  }
  EXPECT_NE(peers[0], peers[1]);
}
TEST_F(ManagedEndpointTest, BackToBackCallsToAnEmbeddedServerAreAllAnswered) {
  // The server is embedded (its own socket), so wharfd sends the requests
  // over homa; the commands it takes in one pass go out as one batch. How
  // many share a pass depends on the two threads' timing, so the batching
  // itself is tested deterministically in engine_batch_test.cc and
  // src/homa/batch_test.cc; here every call must be answered, in any grouping.
  auto server = Endpoint::Open({.address = "homa://127.0.0.1:0"});
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  ASSERT_TRUE(ServeEcho(**server).ok());
  testing::ServerThread running(**server);
  auto client = Open();
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  constexpr int kCalls = 64;
  std::vector<Completion> calls;
  {
    SendBatch batch(**client);  // a no-op for a managed endpoint; must not hurt
    for (int i = 0; i < kCalls; ++i) {
      calls.push_back((*client)->ICall((*server)->address(), 7, Buffer::Copy(std::to_string(i))));
    }
  }
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_TRUE(calls[i].Wait(std::chrono::seconds(20)).ok()) << i << ": " << calls[i].status();
    EXPECT_EQ(calls[i].TakeMessage().AsStringView(), "re:" + std::to_string(i));
  }
  // Every answer came in one datagram: homa put it straight into our
  // receive area and wharfd handed it over without a copy.
  EXPECT_EQ(StatOf(**client, "session.received_in_place"), static_cast<uint64_t>(kCalls));
  // Each request range came back with its call's completion
  // (kFlagSendReleased): no kSendReleased entries of their own.
  EXPECT_EQ(StatOf(**client, "managed.send_area_bytes_in_use"), 0u);
  EXPECT_LE(StatOf(**client, "managed.completions"), kCalls + 8u);
  // wharfd reports the batching counter with its socket's.
  bool reported = false;
  for (const auto& [name, value] : (*client)->Stats()) reported |= name == "homa.batched_flushes";
  EXPECT_TRUE(reported);
}

TEST_F(ManagedEndpointTest, SendReleasesAndBufferReleasesAreBatched) {
  // Both sides managed on one wharfd: a request range is released when the
  // server's session copies it (same host), long before the call completes,
  // so it comes back in a kSendReleased entry carrying up to four; the
  // server's answers likewise once acked; each side's received buffers go
  // back four per kReleaseBuffer. Counted: nothing stays lent, and both
  // rings carried well under the two entries per call of one per release.
  auto server = Open("homa://0.0.0.0:0/echo");
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  ASSERT_TRUE(ServeEcho(**server).ok());
  testing::ServerThread running(**server);
  auto client = Open();
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  constexpr int kRounds = 20;
  constexpr int kCalls = 16;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<Completion> calls;
    for (int i = 0; i < kCalls; ++i) {
      calls.push_back((*client)->ICall((*server)->address(), 7, Buffer::Copy(std::to_string(i))));
    }
    for (int i = 0; i < kCalls; ++i) {
      ASSERT_TRUE(calls[i].Wait(std::chrono::seconds(20)).ok()) << i << ": " << calls[i].status();
      EXPECT_EQ(calls[i].TakeMessage().AsStringView(), "re:" + std::to_string(i));
    }
  }
  EXPECT_EQ(StatOf(**client, "managed.send_area_bytes_in_use"), 0u);
  EXPECT_LT(StatOf(**client, "managed.completions"), 3u * kRounds * kCalls / 2);
  EXPECT_LT(StatOf(**client, "managed.commands"), 3u * kRounds * kCalls / 2);
  // The server's answers are released once acked; by then its commands were
  // fewer than two per request (a respond and a release each).
  const TimeNs end = SystemClock::Get().NowNs() + 5 * kNsPerSec;
  while (StatOf(**server, "managed.send_area_bytes_in_use") != 0 &&
         SystemClock::Get().NowNs() < end) {
    ASSERT_TRUE((*client)->Call((*server)->address(), 7, Buffer::Copy("ack")).ok());
  }
  EXPECT_EQ(StatOf(**server, "managed.send_area_bytes_in_use"), 0u);
  EXPECT_LT(StatOf(**server, "managed.commands"), 2u * kRounds * kCalls);
}

// What wharfd's status says of the application at `endpoint`: its "idle"
// (it waits for wharfd with nothing of its own to do), or nullopt.
std::optional<bool> IdleOf(const std::string& socket, const std::string& endpoint) {
  Result<std::string> text = internal::QueryDaemonStatus(socket, std::chrono::seconds(2));
  if (!text.ok()) return std::nullopt;
  const nlohmann::json doc = nlohmann::json::parse(*text, nullptr, false);
  if (doc.is_discarded()) return std::nullopt;
  for (const nlohmann::json& app : doc["applications"]) {
    if (app["endpoint"] == endpoint) return app["idle"].get<bool>();
  }
  return std::nullopt;
}

// Polls IdleOf until it reads `want` (10 s at most).
bool BecomesIdle(const std::string& socket, const std::string& endpoint, bool want) {
  const TimeNs end = SystemClock::Get().NowNs() + 10 * kNsPerSec;
  while (SystemClock::Get().NowNs() < end) {
    if (IdleOf(socket, endpoint) == want) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

// An application tells wharfd when it waits with nothing of its own to do
// (its completion ring's idle hint), so that wharfd keeps a CPU they share
// longer before yielding it to them. A handler that runs is work of its
// own, and so is whatever the application does outside a wait.
TEST_F(ManagedEndpointTest, ApplicationsSayWhenTheyWaitIdle) {
  auto server = Open("homa://0.0.0.0:0/echo");
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  std::atomic<bool> entered{false};
  std::atomic<bool> release{false};
  ASSERT_TRUE((*server)
                  ->Serve(7, [&](const RpcContext&, Buffer req) -> Result<Buffer> {
                    entered = true;
                    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
                    return Buffer::Copy(req.AsStringView());
                  })
                  .ok());
  testing::ServerThread running(**server);
  auto client = Open();
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  const std::string& socket = daemon_->socket();
  const std::string server_at = (*server)->address();
  const std::string client_at = (*client)->address();
  EXPECT_TRUE(BecomesIdle(socket, server_at, true)) << "a server with nothing to serve waits idle";
  EXPECT_EQ(IdleOf(socket, client_at), false) << "an application not waiting is at work";

  Completion call = (*client)->ICall(server_at, 7, Buffer::Copy("x"));
  std::thread waiting([&] { (void)call.Wait(std::chrono::seconds(20)); });
  const TimeNs end = SystemClock::Get().NowNs() + 10 * kNsPerSec;
  while (!entered && SystemClock::Get().NowNs() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(entered);
  EXPECT_TRUE(BecomesIdle(socket, client_at, true)) << "the caller waits for its answer";
  // Past endpoint.keeper_after (20 ms) twice: a keeper thread drives the
  // server's engine while the handler runs, and finds nothing to do.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(IdleOf(socket, server_at), false) << "a handler runs";

  release = true;
  waiting.join();
  EXPECT_TRUE(call.status().ok()) << call.status();
  EXPECT_TRUE(BecomesIdle(socket, client_at, false)) << "back to its own work after the wait";
  EXPECT_TRUE(BecomesIdle(socket, server_at, true)) << "the server waits again";
}

TEST_F(ManagedEndpointTest, MessagesOverAConnection) {
  auto server = Open("homa://0.0.0.0:0/msgs");
  ASSERT_TRUE(server.ok());
  ASSERT_TRUE((*server)->Listen().ok());
  auto client = Open();
  ASSERT_TRUE(client.ok());
  std::unique_ptr<Connection> accepted;
  std::thread acceptor([&] {
    auto a = (*server)->Accept(std::chrono::seconds(5));
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    accepted = std::move(*a);
  });
  auto conn = (*client)->Connect((*server)->address());
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  acceptor.join();
  ASSERT_NE(accepted, nullptr);
  EXPECT_EQ((*conn)->peer(), (*server)->address());
  EXPECT_FALSE(accepted->peer().empty());
  // A zero-copy buffer from the shared heap (sent where it lies: the copy
  // counter stays), then an ordinary one (copied into the heap once).
  const uint64_t copied_before = StatOf(**client, "managed.copied_sends");
  Buffer big = (*client)->AllocateBuffer(300'000);
  for (size_t i = 0; i < big.size(); ++i) big.data()[i] = static_cast<std::byte>(i * 7);
  ASSERT_TRUE((*conn)->Send(std::move(big)).ok());
  EXPECT_EQ(StatOf(**client, "managed.copied_sends"), copied_before) << "the heap buffer was copied";
  ASSERT_TRUE((*conn)->Send(Buffer::Copy("small")).ok());
  EXPECT_EQ(StatOf(**client, "managed.copied_sends"), copied_before + 1);
  std::vector<std::string> got;
  for (int i = 0; i < 2; ++i) {
    Result<Buffer> m = accepted->Recv(std::chrono::seconds(5));
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    if (m->size() == 300'000) {
      for (size_t j = 0; j < m->size(); j += 4999) {
        ASSERT_EQ(m->data()[j], static_cast<std::byte>(j * 7)) << j;
      }
      got.push_back("big");
    } else {
      got.emplace_back(m->AsStringView());
    }
  }
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::string>{"big", "small"}));
}

// endpoint.h's promise for managed mode: what a SendBatch issues reaches
// wharfd together, at the batch's end, with one doorbell.
TEST_F(ManagedEndpointTest, SendBatchHoldsCommandsUntilItsEnd) {
  auto server = Open("homa://0.0.0.0:0/batched");
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE(ServeEcho(**server).ok());
  testing::ServerThread running(**server);
  auto client = Open();
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*client)->Call((*server)->address(), 7, Buffer::Copy("warm")).ok());
  const uint64_t batched_before = StatOf(**client, "managed.batched_commands");
  const uint64_t executed_before = CommandsExecuted((*client)->address());
  const uint64_t rung_before = StatOf(**client, "managed.doorbells_rung");
  std::vector<Completion> calls;
  {
    SendBatch batch(**client);
    for (int i = 0; i < 16; ++i) {
      calls.push_back((*client)->ICall((*server)->address(), 7, Buffer::Copy(std::to_string(i))));
    }
    // Nothing went out: wharfd, which would take them within microseconds,
    // has executed none of them.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(CommandsExecuted((*client)->address()), executed_before);
    EXPECT_EQ(StatOf(**client, "managed.batched_commands"), batched_before + 16);
  }
  for (size_t i = 0; i < calls.size(); ++i) {
    ASSERT_TRUE(calls[i].Wait(std::chrono::seconds(5)).ok()) << i;
    EXPECT_EQ(calls[i].TakeMessage().AsStringView(), "re:" + std::to_string(i));
  }
  EXPECT_LE(StatOf(**client, "managed.doorbells_rung"), rung_before + 1)
      << "one doorbell for the batch (none if wharfd was awake)";
}

TEST_F(ManagedEndpointTest, CallToNobodyFailsAndOthersCarryOn) {
  auto server = Open("homa://0.0.0.0:0/others");
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE(ServeEcho(**server).ok());
  testing::ServerThread running(**server);
  auto client = Open();
  ASSERT_TRUE(client.ok());
  auto other = Open();
  ASSERT_TRUE(other.ok());
  // A call to a port nobody serves fails (the kernel's port unreachable, or
  // the deadline), while the same client's and another application's calls
  // to a live server go on being answered, before and after.
  Completion nobody = (*client)->ICall("homa://127.0.0.1:1", 1, Buffer::Copy("x"),
                                       {.deadline = std::chrono::milliseconds(300)});
  for (int i = 0; i < 20; ++i) {
    for (Endpoint* e : {client->get(), other->get()}) {
      Result<Buffer> r = e->Call((*server)->address(), 7, Buffer::Copy(std::to_string(i)));
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_EQ(r->AsStringView(), "re:" + std::to_string(i));
    }
  }
  (void)nobody.Wait(std::chrono::seconds(5));  // its outcome is read below
  ASSERT_TRUE(nobody.done());
  EXPECT_TRUE(nobody.status().code() == StatusCode::kUnavailable ||
              nobody.status().code() == StatusCode::kDeadlineExceeded)
      << nobody.status();
  Result<Buffer> after = (*client)->Call((*server)->address(), 7, Buffer::Copy("after"));
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->AsStringView(), "re:after");
}

TEST_F(ManagedEndpointTest, OpenWithoutDaemonFailsClearly) {
  Result<std::unique_ptr<Endpoint>> ep = Endpoint::Open(
      {.hosting = Hosting::kManaged, .daemon_socket = "/nonexistent/wharfd.sock"});
  ASSERT_FALSE(ep.ok());
  EXPECT_EQ(ep.status().code(), StatusCode::kUnavailable) << ep.status().ToString();
  EXPECT_NE(ep.status().message().find("/nonexistent/wharfd.sock"), std::string::npos);
}

TEST_F(ManagedEndpointTest, AutoModeAttachesWhenTheSocketExists) {
  auto ep = Endpoint::Open({.daemon_socket = daemon_->socket()});
  ASSERT_TRUE(ep.ok()) << ep.status().ToString();
  EXPECT_TRUE((*ep)->managed());
  auto embedded = Endpoint::Open({.address = "homa://127.0.0.1:0",
                                  .daemon_socket = "/nonexistent/wharfd.sock"});
  ASSERT_TRUE(embedded.ok());
  EXPECT_FALSE((*embedded)->managed());
}

}  // namespace
}  // namespace wharf

namespace wharf {
namespace {

// wharfd and an attached application that have nothing to do sleep: the
// daemon's loop runs a handful of passes a second (its idle timer), not
// thousands (a spin, or a wake-up ping-pong with the application).
TEST(ManagedIdleTest, AnIdleDaemonAndApplicationSleep) {
  auto d = daemon::testing::DaemonThread::Start();
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  auto server = Endpoint::Open({.address = "homa://0.0.0.0:0/idle",
                                .hosting = Hosting::kManaged,
                                .daemon_socket = (*d)->socket()});
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  ASSERT_TRUE((*server)->Serve(1, [](const RpcContext&, Buffer b) { return Result<Buffer>(std::move(b)); }).ok());
  ASSERT_TRUE((*server)->Listen().ok());
  testing::ServerThread running(**server);
  auto passes = [&] {
    Result<std::string> json = internal::QueryDaemonStatus((*d)->socket(), std::chrono::seconds(2));
    EXPECT_TRUE(json.ok());
    const std::string& text = *json;
    const size_t at = text.find("\"passes\":");
    return std::stoull(text.substr(at + 9));
  };
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // attach settles
  const uint64_t before = passes();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const uint64_t after = passes();
  // 500 ms: about 10 idle timer passes, plus the two status queries'.
  EXPECT_LT(after - before, 200u);
}

}  // namespace
}  // namespace wharf

namespace wharf {
namespace {

// A receive that times out is withdrawn without losing what comes next:
// in managed mode the withdrawal is a round trip through wharfd.
TEST(ManagedRecvTest, TimedOutReceivesLoseNoMessage) {
  auto d = daemon::testing::DaemonThread::Start();
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EndpointOptions o{.address = "homa://0.0.0.0:0", .hosting = Hosting::kManaged,
                    .daemon_socket = (*d)->socket()};
  auto server = Endpoint::Open(o);
  auto client = Endpoint::Open(o);
  ASSERT_TRUE(server.ok() && client.ok());
  ASSERT_TRUE((*server)->Listen().ok());
  std::unique_ptr<Connection> accepted;
  std::thread acceptor([&] { accepted = std::move((*server)->Accept(std::chrono::seconds(5))).value(); });
  auto conn = (*client)->Connect((*server)->address());
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  acceptor.join();
  ASSERT_NE(accepted, nullptr);
  std::atomic<bool> stop{false};
  std::thread sender([&] {
    for (int i = 0; i < 400 && !stop; ++i) {
      ASSERT_TRUE((*conn)->Send(Buffer::Copy(std::to_string(i))).ok());
      std::this_thread::sleep_for(std::chrono::microseconds(50 + (i % 7) * 40));
    }
  });
  // Short timeouts race the arrivals; every message must still be read, in
  // some order, exactly once.
  std::set<std::string> got;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (got.size() < 400 && std::chrono::steady_clock::now() < give_up) {
    Result<Buffer> m = accepted->Recv(std::chrono::microseconds(20 + got.size() % 5 * 20));
    if (m.ok()) {
      EXPECT_TRUE(got.insert(std::string(m->AsStringView())).second);
    }
  }
  stop = true;
  sender.join();
  EXPECT_EQ(got.size(), 400u);
}

}  // namespace
}  // namespace wharf

namespace wharf {
namespace {

// A message larger than an application's receive area can never be
// delivered to it: the operation fails (or the request is refused to its
// client) with kResourceExhausted instead of waiting for room for good.
TEST(ManagedLimitsTest, MessagesLargerThanTheReceiveAreaFailClearly) {
  auto d = daemon::testing::DaemonThread::Start({{"limits.heap_bytes", "256KiB"}});
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EndpointOptions managed{.address = "homa://0.0.0.0:0", .hosting = Hosting::kManaged,
                          .daemon_socket = (*d)->socket()};
  auto small = Endpoint::Open(managed);
  ASSERT_TRUE(small.ok());
  ASSERT_TRUE((*small)->Serve(1, [](const RpcContext&, Buffer b) { return Result<Buffer>(std::move(b)); }).ok());
  testing::ServerThread running(**small);
  auto big = Endpoint::Open({.address = "homa://127.0.0.1:0", .hosting = Hosting::kEmbedded});
  ASSERT_TRUE(big.ok());
  ASSERT_TRUE((*big)->Serve(2, [](const RpcContext&, Buffer) {
    return Result<Buffer>(Buffer::Allocate(200'000));
  }).ok());
  testing::ServerThread running_big(**big);
  // A 200 kB request to the managed server: refused, not left hanging.
  Result<Buffer> r = (*big)->Call((*small)->address(), 1, Buffer::Allocate(200'000),
                                  {.deadline = std::chrono::seconds(10)});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status().ToString();
  EXPECT_NE(r.status().message().find("receive area"), std::string::npos) << r.status().ToString();
  // A 200 kB response to a managed caller: its call fails the same way.
  auto caller = Endpoint::Open(managed);
  ASSERT_TRUE(caller.ok());
  r = (*caller)->Call((*big)->address(), 2, Buffer::Copy("x"), {.deadline = std::chrono::seconds(10)});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status().ToString();
  // Small messages still flow.
  EXPECT_TRUE((*caller)->Call((*small)->address(), 1, Buffer::Copy("ok")).ok());
}

}  // namespace
}  // namespace wharf
