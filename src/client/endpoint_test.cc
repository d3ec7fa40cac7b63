// The public API in embedded mode, two endpoints on real loopback sockets in
// one process (a server thread runs one of them).
#include "wharf/endpoint.h"

#include <poll.h>

#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "client/testing/server_thread.h"
#include "wharf/group.h"

namespace wharf {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<Endpoint> OpenLoopback() {
  auto ep = Endpoint::Open({.address = "homa://127.0.0.1:0"});
  if (!ep.ok()) ADD_FAILURE() << ep.status();
  return ep.ok() ? std::move(ep).value() : nullptr;
}

using testing::ServerThread;

TEST(EndpointTest, OpenReportsItsAddress) {
  auto ep = OpenLoopback();
  ASSERT_NE(ep, nullptr);
  EXPECT_EQ(ep->address().rfind("homa://127.0.0.1:", 0), 0u) << ep->address();
}

TEST(EndpointTest, OpenRejectsBadAddressAndSettings) {
  auto a = Endpoint::Open({.address = "tcpx://1.2.3.4:1"});
  EXPECT_EQ(a.status().code(), StatusCode::kInvalidArgument);
  auto b = Endpoint::Open({.address = "homa://127.0.0.1:0", .settings = {{"homa.nope", "1"}}});
  EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument);
}

TEST(EndpointTest, CallRunsHandlerAndReturnsResponse) {
  auto server = OpenLoopback();
  auto client = OpenLoopback();
  ASSERT_TRUE(server && client);
  ASSERT_TRUE(server
                  ->Serve(7,
                          [](const RpcContext& ctx, Buffer req) -> Result<Buffer> {
                            std::string s(req.AsStringView());
                            return Buffer::Copy(s + " from " + std::to_string(ctx.method));
                          })
                  .ok());
  ServerThread st(*server);
  auto r = client->Call(server->address(), 7, Buffer::Copy("hello"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->AsStringView(), "hello from 7");
}

TEST(EndpointTest, HandlerErrorsAndMissingMethodsReachTheCaller) {
  auto server = OpenLoopback();
  auto client = OpenLoopback();
  ASSERT_TRUE(server
                  ->Serve(1, [](const RpcContext&, Buffer) -> Result<Buffer> {
                    return PermissionDeniedError("not you");
                  })
                  .ok());
  ServerThread st(*server);
  auto denied = client->Call(server->address(), 1, Buffer());
  EXPECT_EQ(denied.status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(denied.status().message(), "not you");
  auto missing = client->Call(server->address(), 2, Buffer());
  EXPECT_EQ(missing.status().code(), StatusCode::kUnimplemented);
  EXPECT_FALSE(client->Serve(kFirstReservedMethod, [](const RpcContext&, Buffer b) -> Result<Buffer> {
                       return b;
                     }).ok());
}

TEST(EndpointTest, HandlerReplyOverTheLimitReachesTheCallerAsAnError) {
  auto server = Endpoint::Open({.address = "homa://127.0.0.1:0",
                                .settings = {{"homa.max_message_bytes", "1000"}}});
  ASSERT_TRUE(server.ok());
  auto client = OpenLoopback();
  ASSERT_TRUE((*server)
                  ->Serve(1, [](const RpcContext&, Buffer) -> Result<Buffer> {
                    return Buffer::Allocate(2000);
                  })
                  .ok());
  ServerThread st(**server);
  auto r = client->Call((*server)->address(), 1, Buffer::Copy("x"), {.deadline = 5s});
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status();
  EXPECT_NE(r.status().message().find("max_message_bytes"), std::string::npos) << r.status();
}

TEST(EndpointTest, DeadlineExceededWhenServerIsSlow) {
  auto server = OpenLoopback();
  auto client = OpenLoopback();
  std::atomic<bool> release{false};
  ASSERT_TRUE(server
                  ->Serve(3,
                          [&](const RpcContext&, Buffer b) -> Result<Buffer> {
                            while (!release) std::this_thread::yield();
                            return b;
                          })
                  .ok());
  ServerThread st(*server);
  auto r = client->Call(server->address(), 3, Buffer::Copy("x"), {.deadline = 30ms});
  release = true;
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded);
}

TEST(EndpointTest, CallToDeadPeerFailsUnavailable) {
  auto client = Endpoint::Open({.address = "homa://127.0.0.1:0",
                                .settings = {{"homa.timeout_ticks", "20"}}});
  ASSERT_TRUE(client.ok());
  std::string dead;
  {
    auto gone = OpenLoopback();
    dead = gone->address();
  }
  auto r = (*client)->Call(dead, 1, Buffer::Copy("anyone?"), {.deadline = 5s});
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status();
}

TEST(EndpointTest, ConnectSendRecvBothWaysAndDisconnect) {
  auto server = OpenLoopback();
  auto client = OpenLoopback();
  ASSERT_TRUE(server->Listen().ok());
  std::unique_ptr<Connection> accepted;
  std::thread acceptor([&] {
    auto c = server->Accept(5s);
    ASSERT_TRUE(c.ok()) << c.status();
    accepted = std::move(c).value();
    auto m = accepted->Recv(5s);
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_EQ(m->AsStringView(), "ping");
    EXPECT_TRUE(accepted->Send(Buffer::Copy("pong")).ok());
    auto end = accepted->Recv(5s);
    EXPECT_EQ(end.status().code(), StatusCode::kUnavailable) << end.status();
  });
  auto conn = client->Connect(server->address());
  ASSERT_TRUE(conn.ok()) << conn.status();
  ASSERT_TRUE((*conn)->Send(Buffer::Copy("ping")).ok());
  auto reply = (*conn)->Recv(5s);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->AsStringView(), "pong");
  EXPECT_TRUE((*conn)->Disconnect().ok());
  EXPECT_EQ((*conn)->Send(Buffer::Copy("late")).code(), StatusCode::kFailedPrecondition);
  acceptor.join();
}

TEST(EndpointTest, ConnectWithoutListenIsRefused) {
  auto server = OpenLoopback();
  auto client = OpenLoopback();
  ServerThread st(*server);
  auto conn = client->Connect(server->address());
  EXPECT_EQ(conn.status().code(), StatusCode::kUnavailable) << conn.status();
}

TEST(EndpointTest, StreamsGoToTheirMethodsHandlerAndPlainConnectionsToAccept) {
  auto server = OpenLoopback();
  auto client = OpenLoopback();
  ASSERT_TRUE(server->Listen().ok());
  // The handler runs on the driving thread: it answers asynchronously and
  // keeps the stream.
  std::vector<std::unique_ptr<Connection>> streams;
  ASSERT_TRUE(server
                  ->ServeStreams(7,
                                 [&](std::unique_ptr<Connection> stream) {
                                   stream->ISend(Buffer::Copy("seven"));
                                   streams.push_back(std::move(stream));
                                 })
                  .ok());
  ServerThread st(*server);
  auto stream = client->Connect(server->address(), {.stream_method = 7});
  ASSERT_TRUE(stream.ok()) << stream.status();
  auto hello = (*stream)->Recv(5s);
  ASSERT_TRUE(hello.ok()) << hello.status();
  EXPECT_EQ(hello->AsStringView(), "seven");
  // A method with no stream handler is refused at connect, by name.
  auto other = client->Connect(server->address(), {.stream_method = 8});
  EXPECT_EQ(other.status().code(), StatusCode::kUnimplemented) << other.status();
  // The application's own connections still queue for its Accept.
  auto plain = client->Connect(server->address());
  ASSERT_TRUE(plain.ok()) << plain.status();
  auto accepted = server->Accept(5s);
  ASSERT_TRUE(accepted.ok()) << accepted.status();
  EXPECT_EQ(server->Accept(50ms).status().code(), StatusCode::kDeadlineExceeded);
}

TEST(EndpointTest, ServeStreamsRefusesMethodZeroAndReservedIds) {
  auto server = OpenLoopback();
  auto handler = [](std::unique_ptr<Connection>) {};
  EXPECT_EQ(server->ServeStreams(0, handler).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(server->ServeStreams(kFirstReservedMethod, handler).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(server->ServeStreams(5, nullptr).code(), StatusCode::kInvalidArgument);
}

TEST(EndpointTest, OrderedConnectionKeepsOrderUnorderedDeliversAll) {
  auto server = OpenLoopback();
  auto client = OpenLoopback();
  ASSERT_TRUE(server->Listen().ok());
  for (bool ordered : {true, false}) {
    std::vector<std::string> got;
    std::thread receiver([&] {
      auto c = server->Accept(5s);
      ASSERT_TRUE(c.ok());
      for (int i = 0; i < 6; ++i) {
        auto m = (*c)->Recv(5s);
        ASSERT_TRUE(m.ok()) << m.status();
        got.emplace_back(m->size() > 100 ? std::string("big") : std::string(m->AsStringView()));
      }
    });
    auto conn = client->Connect(server->address(), {.ordered = ordered});
    ASSERT_TRUE(conn.ok());
    std::vector<Completion> sends;
    for (int i = 0; i < 6; ++i) {
      Buffer b = (i == 0) ? Buffer::Allocate(2'000'000) : Buffer::Copy(std::to_string(i));
      sends.push_back((*conn)->ISend(std::move(b)));
    }
    for (auto& s : sends) EXPECT_TRUE(s.Wait(5s).ok());
    receiver.join();
    ASSERT_EQ(got.size(), 6u);
    if (ordered) {
      EXPECT_EQ(got, (std::vector<std::string>{"big", "1", "2", "3", "4", "5"}));
    } else {
      std::sort(got.begin(), got.end());
      EXPECT_EQ(got, (std::vector<std::string>{"1", "2", "3", "4", "5", "big"}));
    }
  }
}

TEST(EndpointTest, CompletionCallbackAndPoll) {
  auto server = OpenLoopback();
  auto client = OpenLoopback();
  ASSERT_TRUE(server->Serve(1, [](const RpcContext&, Buffer b) -> Result<Buffer> { return b; }).ok());
  ServerThread st(*server);
  Completion c = client->ICall(server->address(), 1, Buffer::Copy("cb"));
  std::atomic<int> called{0};
  c.OnComplete([&](const Status& s) {
    EXPECT_TRUE(s.ok());
    ++called;
  });
  while (!c.Poll()) {
  }
  EXPECT_EQ(called.load(), 1);
  EXPECT_EQ(c.TakeMessage().AsStringView(), "cb");
  Completion late;
  EXPECT_FALSE(late.valid());
  EXPECT_EQ(late.Wait().code(), StatusCode::kFailedPrecondition);
}

TEST(EndpointTest, CancelledCallCompletesWithCancelled) {
  auto server = OpenLoopback();
  auto client = OpenLoopback();
  // No server thread: the request is never answered.
  Completion c = client->ICall(server->address(), 1, Buffer::Copy("x"));
  c.Cancel();
  EXPECT_EQ(c.Wait(1s).code(), StatusCode::kCancelled);
}

TEST(EndpointTest, CompletionsOutliveTheEndpoint) {
  auto server = OpenLoopback();
  Completion c;
  {
    auto client = OpenLoopback();
    c = client->ICall(server->address(), 1, Buffer::Copy("x"));
  }
  EXPECT_EQ(c.Wait(1s).code(), StatusCode::kCancelled);
}

TEST(EndpointTest, BarrierWithThreeMembersInOneProcess) {
  std::vector<std::unique_ptr<Endpoint>> eps;
  std::vector<std::string> members;
  for (int i = 0; i < 3; ++i) {
    eps.push_back(OpenLoopback());
    members.push_back(eps.back()->address());
  }
  std::atomic<int> passed{0};
  std::vector<std::thread> threads;
  for (size_t r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      auto g = Group::Join(*eps[r], members, r);
      ASSERT_TRUE(g.ok()) << g.status();
      for (int round = 0; round < 3; ++round) {
        Status s = (*g)->Barrier(5s);
        EXPECT_TRUE(s.ok()) << s;
      }
      ++passed;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(passed.load(), 3);
}

TEST(EndpointTest, BlockingInsideAHandlerFailsInsteadOfDeadlocking) {
  auto server = OpenLoopback();
  auto client = OpenLoopback();
  Endpoint* self = server.get();
  ASSERT_TRUE(server
                  ->Serve(1,
                          [self](const RpcContext&, Buffer) -> Result<Buffer> {
                            // Calls back into the endpoint that runs this handler.
                            auto inner = self->Call(self->address(), 2, Buffer());
                            return Buffer::Copy(inner.status().ToString());
                          })
                  .ok());
  ServerThread st(*server);
  auto r = client->Call(server->address(), 1, Buffer());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NE(r->AsStringView().find("FAILED_PRECONDITION"), std::string_view::npos)
      << r->AsStringView();
}

TEST(EndpointTest, FdWakesForTimersSoAnEpollLoopDrivesTimeouts) {
  auto client = Endpoint::Open({.address = "homa://127.0.0.1:0",
                                .settings = {{"homa.timeout_ticks", "10"}}});
  ASSERT_TRUE(client.ok());
  std::string dead;
  {
    auto gone = OpenLoopback();
    dead = gone->address();
  }
  Completion c = (*client)->ICall(dead, 1, Buffer::Copy("x"), {.deadline = 0s});
  // Only the application's own poll(2) on fd() and Poll(): no Wait().
  pollfd pfd{(*client)->fd(), POLLIN, 0};
  auto give_up = std::chrono::steady_clock::now() + 5s;
  while (!c.done() && std::chrono::steady_clock::now() < give_up) {
    (*client)->Poll();
    ::poll(&pfd, 1, 1000);
  }
  ASSERT_TRUE(c.done());
  EXPECT_EQ(c.status().code(), StatusCode::kUnavailable) << c.status();
}

TEST(EndpointTest, GroupJoinValidatesRank) {
  auto ep = OpenLoopback();
  EXPECT_FALSE(Group::Join(*ep, {}, 0).ok());
  EXPECT_FALSE(Group::Join(*ep, {ep->address()}, 1).ok());
}

}  // namespace
}  // namespace wharf

namespace wharf {
namespace {

uint64_t StatOf(const Endpoint& ep, const std::string& name) {
  for (const auto& [key, value] : ep.Stats()) {
    if (key == name) return value;
  }
  ADD_FAILURE() << "no counter " << name;
  return 0;
}

// Without spinning every wait sleeps in epoll; once a peer is hot its
// packets arrive on the hot-peer socket, which the endpoint must then wait
// on too, or each call would sleep until a timer instead of its reply. With
// the protocol's timer slowed to 1 s and the server thread's Run calls 1 s
// long, only that wake-up can answer a call within its deadline.
TEST(EndpointTest, SleepingCallsWakeForRepliesOnTheHotPeerSocket) {
  const EndpointOptions options{.address = "homa://127.0.0.1:0",
                                .settings = {{"endpoint.spin", "0ns"}, {"homa.tick", "1s"}}};
  auto server = Endpoint::Open(options);
  auto client = Endpoint::Open(options);
  ASSERT_TRUE(server.ok() && client.ok());
  ASSERT_TRUE((*server)->Serve(1, [](const RpcContext&, Buffer b) {
    return Result<Buffer>(std::move(b));
  }).ok());
  ServerThread thread(**server, 1s);
  for (int i = 0; i < 200; ++i) {
    // Far below the 100 ms sleep cap or the 1 s Run an unwatched socket
    // would wait for.
    Result<Buffer> r = (*client)->Call((*server)->address(), 1, Buffer::Copy(std::to_string(i)),
                                       {.deadline = 80ms});
    ASSERT_TRUE(r.ok()) << "call " << i << ": " << r.status();
    EXPECT_EQ(r->AsStringView(), std::to_string(i));
  }
  EXPECT_EQ(StatOf(**client, "udp.hot_sockets_opened"), 1u);
  EXPECT_GT(StatOf(**client, "udp.hot_sends"), 100u);
  EXPECT_EQ(StatOf(**server, "udp.hot_sockets_opened"), 1u);
}

// WaitForAny: the reaping loop of a client with many calls in flight.
Result<Buffer> Echo(const RpcContext&, Buffer request) { return request; }

TEST(EndpointWaitForAnyTest, ReturnsZeroAfterTheTimeoutWithNothingInFlight) {
  auto ep = OpenLoopback();
  ASSERT_NE(ep, nullptr);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(ep->WaitForAny(20ms), 0);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 20ms);
}

TEST(EndpointWaitForAnyTest, CountsEveryCompletionOnceUntilAllAreReaped) {
  auto server = OpenLoopback();
  auto client = OpenLoopback();
  ASSERT_TRUE(server && client);
  ASSERT_TRUE(server->Serve(1, Echo).ok());
  ServerThread st(*server);
  constexpr int kCalls = 16;
  std::vector<Completion> calls;
  for (int i = 0; i < kCalls; ++i) {
    calls.push_back(client->ICall(server->address(), 1, Buffer::Copy(std::to_string(i))));
  }
  int reported = 0;
  int reaped = 0;
  const auto give_up = std::chrono::steady_clock::now() + 10s;
  while (reaped < kCalls && std::chrono::steady_clock::now() < give_up) {
    const int n = client->WaitForAny(1s);
    reported += n;
    int done_now = 0;
    for (const Completion& c : calls) done_now += c.done();
    // What it reports has completed (and no more than has).
    EXPECT_LE(reported, done_now);
    reaped = done_now;
  }
  ASSERT_EQ(reaped, kCalls);
  EXPECT_EQ(reported, kCalls);
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_TRUE(calls[i].status().ok()) << calls[i].status();
    EXPECT_EQ(calls[i].TakeMessage().AsStringView(), std::to_string(i));
  }
  // Nothing left: the next wait times out.
  EXPECT_EQ(client->WaitForAny(10ms), 0);
}

TEST(EndpointWaitForAnyTest, ReportsWhatCompletedBeforeTheCallAtOnce) {
  auto server = OpenLoopback();
  auto client = OpenLoopback();
  ASSERT_TRUE(server && client);
  ASSERT_TRUE(server->Serve(1, Echo).ok());
  ServerThread st(*server);
  Completion call = client->ICall(server->address(), 1, Buffer::Copy("x"));
  ASSERT_TRUE(call.Wait(10s).ok());  // completed through another wait
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(client->WaitForAny(10s), 1);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST(EndpointWaitForAnyTest, ACallThatFailsAtOnceEndsTheWait) {
  auto client = OpenLoopback();
  ASSERT_NE(client, nullptr);
  Completion bad = client->ICall("nope://x", 1, Buffer::Copy("x"));
  ASSERT_TRUE(bad.done());
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(client->WaitForAny(10s), 1);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_FALSE(bad.status().ok());
}

TEST(EndpointWaitForAnyTest, ShutdownEndsTheWait) {
  auto client = OpenLoopback();
  ASSERT_NE(client, nullptr);
  std::thread stopper([&] {
    std::this_thread::sleep_for(20ms);
    client->Shutdown();
  });
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(client->WaitForAny(30s), 0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  stopper.join();
}

}  // namespace
}  // namespace wharf
