// daemon/daemon_limits_test.cc: wharfd's per-application limits and its
// admission, through the public API in managed mode against a wharfd on a
// thread: what goes past a limit fails for that application alone with
// kResourceExhausted (kPermissionDenied for a uid not allowed), at once,
// naming the limit, and what stays within it goes on.
#include <gtest/gtest.h>
#include <unistd.h>

#include <thread>

#include "base/mutex.h"
#include "client/testing/server_thread.h"
#include "daemon/testing/daemon_thread.h"
#include "wharf/endpoint.h"

namespace wharf {
namespace {

using namespace std::chrono_literals;
using daemon::testing::DaemonThread;
using SteadyClock = std::chrono::steady_clock;

constexpr uint32_t kMethod = 7;

::testing::AssertionResult Refused(const Status& s, StatusCode code, std::string_view names) {
  if (s.code() == code && s.message().find(names) != std::string_view::npos) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << "expected " << StatusCodeName(code) << " naming '" << names << "', got " << s;
}

// A managed server whose handler keeps every request's Responder until the
// test answers; waits on it are bounded.
class HoldingServer {
 public:
  explicit HoldingServer(Endpoint& ep) : ep_(ep) {
    Status s = ep_.ServeAsync(kMethod, [this](const RpcContext&, Buffer request, Responder r) {
      MutexLock lock(mu_);
      held_.push_back({std::move(r), std::move(request)});
      cv_.NotifyAll();
    });
    EXPECT_TRUE(s.ok()) << s;
    running_ = std::make_unique<testing::ServerThread>(ep_);
  }
  // True once `n` requests are held (within `timeout`).
  bool WaitHeld(size_t n, std::chrono::nanoseconds timeout = 5s) {
    const auto until = SteadyClock::now() + timeout;
    MutexLock lock(mu_);
    while (held_.size() < n) {
      if (!cv_.WaitUntil(mu_, until)) return held_.size() >= n;
    }
    return true;
  }
  size_t held() {
    MutexLock lock(mu_);
    return held_.size();
  }
  // Echoes every held request.
  void AnswerAll() {
    MutexLock lock(mu_);
    for (auto& [r, request] : held_) EXPECT_TRUE(r.Respond(std::move(request)).ok());
    held_.clear();
  }

 private:
  Endpoint& ep_;
  Mutex mu_;
  CondVar cv_;
  std::vector<std::pair<Responder, Buffer>> held_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<testing::ServerThread> running_;
};

class DaemonLimitsTest : public ::testing::Test {
 protected:
  void Start(std::vector<std::pair<std::string, std::string>> settings) {
    auto d = DaemonThread::Start(std::move(settings));
    ASSERT_TRUE(d.ok()) << d.status();
    daemon_ = std::move(*d);
  }
  Result<std::unique_ptr<Endpoint>> Open() {
    return Endpoint::Open({.address = "homa://127.0.0.1:0",
                           .hosting = Hosting::kManaged,
                           .daemon_socket = daemon_->socket()});
  }
  std::unique_ptr<Endpoint> MustOpen() {
    auto ep = Open();
    EXPECT_TRUE(ep.ok()) << ep.status();
    return ep.ok() ? std::move(*ep) : nullptr;
  }
  std::unique_ptr<DaemonThread> daemon_;
};

TEST_F(DaemonLimitsTest, CallsPastMaxInflightAreRefusedAndTheOthersSucceed) {
  Start({{"limits.max_inflight", "4"}});
  auto server_ep = MustOpen();
  ASSERT_NE(server_ep, nullptr);
  HoldingServer server(*server_ep);
  auto client = MustOpen();
  ASSERT_NE(client, nullptr);

  std::vector<Completion> calls;
  for (int i = 0; i < 6; ++i) {
    calls.push_back(client->ICall(server_ep->address(), kMethod, Buffer::Copy(std::to_string(i)),
                                  {.deadline = 10s}));
  }
  // The client's fifth and sixth: refused by wharfd, without waiting.
  for (int i = 4; i < 6; ++i) {
    const Status s = calls[i].Wait(2s);
    EXPECT_TRUE(Refused(s, StatusCode::kResourceExhausted, "limits.max_inflight")) << "call " << i;
  }
  ASSERT_TRUE(server.WaitHeld(4));

  // The server holds 4 requests, its own limit: another client's request
  // is refused by wharfd on the server's behalf.
  auto other = MustOpen();
  ASSERT_NE(other, nullptr);
  Result<Buffer> refused = other->Call(server_ep->address(), kMethod, Buffer::Copy("x"),
                                       {.deadline = 5s});
  EXPECT_TRUE(Refused(refused.status(), StatusCode::kResourceExhausted, "limits.max_inflight"));
  EXPECT_EQ(server.held(), 4u);

  // Within the limit everything goes through.
  server.AnswerAll();
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(calls[i].Wait(5s).ok()) << "call " << i << ": " << calls[i].status();
    EXPECT_EQ(calls[i].TakeMessage().AsStringView(), std::to_string(i));
  }
  Completion after = client->ICall(server_ep->address(), kMethod, Buffer::Copy("after"));
  ASSERT_TRUE(server.WaitHeld(1));
  server.AnswerAll();
  ASSERT_TRUE(after.Wait(5s).ok()) << after.status();
}

TEST_F(DaemonLimitsTest, ConnectionsPastMaxConnectionsAreRefused) {
  Start({{"limits.max_connections", "2"}});
  auto server = MustOpen();
  ASSERT_NE(server, nullptr);
  ASSERT_TRUE(server->Listen().ok());
  std::vector<std::unique_ptr<Connection>> accepted;
  std::thread acceptor([&] {
    for (int i = 0; i < 2; ++i) {
      auto a = server->Accept(5s);
      EXPECT_TRUE(a.ok()) << a.status();
      if (a.ok()) accepted.push_back(std::move(*a));
    }
  });
  auto client = MustOpen();
  ASSERT_NE(client, nullptr);
  std::vector<std::unique_ptr<Connection>> open;
  for (int i = 0; i < 2; ++i) {
    auto c = client->Connect(server->address());
    ASSERT_TRUE(c.ok()) << c.status();
    open.push_back(std::move(*c));
  }
  acceptor.join();
  ASSERT_EQ(accepted.size(), 2u);
  const auto start = SteadyClock::now();
  auto third = client->Connect(server->address());
  EXPECT_TRUE(Refused(third.status(), StatusCode::kResourceExhausted, "limits.max_connections"));
  EXPECT_LT(SteadyClock::now() - start, 1s);
  // The open ones still carry messages.
  ASSERT_TRUE(open[0]->Send(Buffer::Copy("hi")).ok());
  Result<Buffer> got = accepted[0]->Recv(5s);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->AsStringView(), "hi");
}

TEST_F(DaemonLimitsTest, SendsPastTheSendAreaAreRefused) {
  // A 1 MiB heap: half of it (512 KiB) for what the application sends.
  Start({{"limits.heap_bytes", "1MiB"}});
  auto server_ep = MustOpen();
  ASSERT_NE(server_ep, nullptr);
  HoldingServer server(*server_ep);
  auto client = MustOpen();
  ASSERT_NE(client, nullptr);

  // Bigger than the whole send area (far below homa.max_message_bytes).
  Result<Buffer> big = client->Call(server_ep->address(), kMethod, Buffer::Allocate(600'000),
                                    {.deadline = 5s});
  EXPECT_TRUE(Refused(big.status(), StatusCode::kResourceExhausted, "limits.heap_bytes"));

  // Two held buffers fill most of it; a third message does not fit.
  Buffer a = client->AllocateBuffer(200'000);
  Buffer b = client->AllocateBuffer(200'000);
  Result<Buffer> full = client->Call(server_ep->address(), kMethod, Buffer::Allocate(200'000),
                                     {.deadline = 5s});
  EXPECT_TRUE(Refused(full.status(), StatusCode::kResourceExhausted, "limits.heap_bytes"));
  EXPECT_EQ(server.held(), 0u);

  // Dropping one makes room again.
  a = Buffer();
  Completion fits = client->ICall(server_ep->address(), kMethod, Buffer::Allocate(200'000),
                                  {.deadline = 5s});
  ASSERT_TRUE(server.WaitHeld(1));
  server.AnswerAll();
  ASSERT_TRUE(fits.Wait(5s).ok()) << fits.status();
  EXPECT_EQ(fits.TakeMessage().size(), 200'000u);
}

TEST_F(DaemonLimitsTest, AttachesPastMaxApplicationsAreRefused) {
  Start({{"limits.max_applications", "2"}});
  auto a = MustOpen();
  auto b = MustOpen();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  auto c = Open();
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(Refused(c.status(), StatusCode::kResourceExhausted, "limits.max_applications"));
  // The attached ones are unaffected, and a slot frees once one leaves
  // (after its session's linger).
  a.reset();
  const auto deadline = SteadyClock::now() + 2s;
  Result<std::unique_ptr<Endpoint>> again = Open();
  while (!again.ok() && SteadyClock::now() < deadline) {
    ASSERT_EQ(again.status().code(), StatusCode::kResourceExhausted) << again.status();
    std::this_thread::sleep_for(10ms);  // polls the daemon thread's state
    again = Open();
  }
  EXPECT_TRUE(again.ok()) << again.status();
}

TEST_F(DaemonLimitsTest, AttachByAUidNotAllowedIsRefused) {
  const uid_t me = ::getuid();
  Start({{"daemon.allowed_uids", std::to_string(me + 1) + "," + std::to_string(me + 2)}});
  auto refused = Open();
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(Refused(refused.status(), StatusCode::kPermissionDenied, "daemon.allowed_uids"));
  EXPECT_NE(refused.status().message().find("uid " + std::to_string(me)), std::string_view::npos)
      << refused.status();

  daemon_->Stop();
  Start({{"daemon.allowed_uids", std::to_string(me + 1) + "," + std::to_string(me)}});
  EXPECT_NE(MustOpen(), nullptr);
}

}  // namespace
}  // namespace wharf
