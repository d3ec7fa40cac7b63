// Serving through the public API in embedded mode: handlers run outside the
// endpoint's lock one at a time, answers come later through a Responder, the
// server sees the client's deadline and cancellation, and a handler that runs
// long is not taken for a dead server (the keeper thread answers the
// client's probes meanwhile). Real loopback sockets, both transports.
#include <pthread.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/sanitizer_build.h"
#include "client/testing/server_thread.h"
#include "wharf/endpoint.h"

namespace wharf {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<Endpoint> Open(const std::string& scheme,
                               std::vector<std::pair<std::string, std::string>> settings = {}) {
  auto ep = Endpoint::Open({.address = scheme + "://127.0.0.1:0", .settings = std::move(settings)});
  if (!ep.ok()) ADD_FAILURE() << ep.status();
  return ep.ok() ? std::move(ep).value() : nullptr;
}

using testing::ServerThread;

// Polls `done` every millisecond for up to `limit`; a bounded wait for
// something another thread does.
template <typename Fn>
bool Eventually(Fn done, std::chrono::milliseconds limit = 5000ms) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// Serves method 1 by keeping every call's Responder in `held` (under `mu`),
// unanswered, for the test to look at.
Status HoldEveryCall(Endpoint& server, std::mutex& mu, std::vector<Responder>& held) {
  return server.ServeAsync(1, [&mu, &held](const RpcContext&, Buffer, Responder r) {
    std::lock_guard<std::mutex> lock(mu);
    held.push_back(std::move(r));
  });
}

class EndpointServeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(EndpointServeTest, HandlerThatThrowsBecomesInternalError) {
  auto server = Open(GetParam());
  auto client = Open(GetParam());
  ASSERT_TRUE(server->Serve(3, [](const RpcContext&, Buffer) -> Result<Buffer> {
    throw std::runtime_error("boom");
  }).ok());
  ServerThread run(*server);
  auto reply = client->Call(server->address(), 3, Buffer::Copy("x"), {.deadline = 5s});
  EXPECT_EQ(reply.status().code(), StatusCode::kInternal);
  EXPECT_NE(reply.status().message().find("boom"), std::string::npos) << reply.status();
}

TEST_P(EndpointServeTest, AsyncHandlerAnswersLaterFromAnotherThread) {
  auto server = Open(GetParam());
  auto client = Open(GetParam());
  std::mutex mu;
  std::vector<std::thread> workers;
  ASSERT_TRUE(server->ServeAsync(1, [&](const RpcContext&, Buffer request, Responder responder) {
    std::lock_guard<std::mutex> lock(mu);
    workers.emplace_back([request = std::move(request), r = std::move(responder)]() mutable {
      std::this_thread::sleep_for(20ms);
      std::string text = "later:" + std::string(request.AsStringView());
      EXPECT_TRUE(r.Respond(Buffer::Copy(text)).ok());
      EXPECT_EQ(r.Respond(Buffer::Copy("twice")).code(), StatusCode::kFailedPrecondition);
    });
  }).ok());
  {
    ServerThread run(*server);
    std::vector<Completion> calls;
    for (int i = 0; i < 8; ++i) {
      calls.push_back(client->ICall(server->address(), 1, Buffer::Copy(std::to_string(i)),
                                    {.deadline = 5s}));
    }
    for (int i = 0; i < 8; ++i) {
      ASSERT_TRUE(calls[i].Wait().ok()) << calls[i].status();
      EXPECT_EQ(calls[i].TakeMessage().AsStringView(), "later:" + std::to_string(i));
    }
  }
  for (auto& w : workers) w.join();
}

TEST_P(EndpointServeTest, DroppedResponderAnswersInternal) {
  auto server = Open(GetParam());
  auto client = Open(GetParam());
  ASSERT_TRUE(server->ServeAsync(1, [](const RpcContext&, Buffer, Responder) {}).ok());
  ServerThread run(*server);
  auto reply = client->Call(server->address(), 1, Buffer::Copy("x"), {.deadline = 5s});
  EXPECT_EQ(reply.status().code(), StatusCode::kInternal) << reply.status();
}

TEST_P(EndpointServeTest, ServerSeesTheClientsDeadline) {
  auto server = Open(GetParam());
  auto client = Open(GetParam());
  std::atomic<int64_t> left_ms{-1};
  std::atomic<bool> no_deadline{false};
  ASSERT_TRUE(server->Serve(1, [&](const RpcContext& ctx, Buffer) -> Result<Buffer> {
    if (ctx.deadline == std::chrono::steady_clock::time_point::max()) {
      no_deadline = true;
    } else {
      left_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                    ctx.deadline - std::chrono::steady_clock::now()).count();
    }
    return Buffer();
  }).ok());
  ServerThread run(*server);
  ASSERT_TRUE(client->Call(server->address(), 1, Buffer(), {.deadline = 2s}).ok());
  EXPECT_GT(left_ms.load(), 1000);
  EXPECT_LE(left_ms.load(), 2000);
  ASSERT_TRUE(client->Call(server->address(), 1, Buffer(), {.deadline = 0s}).ok());
  EXPECT_TRUE(no_deadline.load());
}

TEST_P(EndpointServeTest, CancelledCallIsVisibleToItsResponder) {
  auto server = Open(GetParam());
  auto client = Open(GetParam());
  std::mutex mu;
  std::vector<Responder> held;
  ASSERT_TRUE(HoldEveryCall(*server, mu, held).ok());
  ServerThread run(*server);
  Completion call = client->ICall(server->address(), 1, Buffer::Copy("x"), {.deadline = 30s});
  ASSERT_TRUE(Eventually([&] {
    client->Poll();  // tcp:// connects first
    std::lock_guard<std::mutex> lock(mu);
    return !held.empty();
  }));
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_FALSE(held[0].cancelled());
  }
  call.Cancel();
  EXPECT_EQ(call.status().code(), StatusCode::kCancelled);
  // The notice travels as a request of its own; the client polls to send it.
  EXPECT_TRUE(Eventually([&] {
    client->Poll();
    std::lock_guard<std::mutex> lock(mu);
    return held[0].cancelled();
  }));
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_TRUE(held[0].Respond(Buffer::Copy("too late")).ok());  // dropped, harmlessly
}

TEST_P(EndpointServeTest, ResponderSeesAPassedDeadline) {
  auto server = Open(GetParam());
  auto client = Open(GetParam());
  std::mutex mu;
  std::vector<Responder> held;
  ASSERT_TRUE(HoldEveryCall(*server, mu, held).ok());
  ServerThread run(*server);
  auto reply = client->Call(server->address(), 1, Buffer(), {.deadline = 50ms});
  EXPECT_EQ(reply.status().code(), StatusCode::kDeadlineExceeded);
  // The server's copy of the deadline starts when the request left (after
  // tcp://'s connection set-up), so it passes a little later there.
  EXPECT_TRUE(Eventually([&] {
    std::lock_guard<std::mutex> lock(mu);
    return held.size() == 1 && held[0].cancelled();
  }, 1000ms));
}

TEST_P(EndpointServeTest, HandlersRunOneAtATime) {
  auto server = Open(GetParam());
  auto client = Open(GetParam());
  std::atomic<int> running{0};
  std::atomic<int> most{0};
  ASSERT_TRUE(server->Serve(1, [&](const RpcContext&, Buffer) -> Result<Buffer> {
    int now = ++running;
    most = std::max(most.load(), now);
    std::this_thread::sleep_for(5ms);
    --running;
    return Buffer();
  }).ok());
  // Two threads drive the server: one runs it, the other waits on its own
  // calls through it.
  ServerThread run(*server);
  std::vector<Completion> calls;
  for (int i = 0; i < 10; ++i) {
    calls.push_back(client->ICall(server->address(), 1, Buffer(), {.deadline = 10s}));
  }
  Completion self_call = server->ICall(server->address(), 1, Buffer(), {.deadline = 10s});
  EXPECT_TRUE(self_call.Wait().ok()) << self_call.status();
  for (auto& c : calls) EXPECT_TRUE(c.Wait().ok()) << c.status();
  EXPECT_EQ(most.load(), 1);
}

// Fault 1 of the engine issue: a handler running longer than the peer
// timeout made the client presume the server dead. The keeper thread now
// answers the client's probes while the handler runs. The peer timeout is
// set short here (300 ms) so the test is quick; the handler runs 3x that.
TEST_P(EndpointServeTest, LongHandlerIsNotADeadServer) {
  const std::vector<std::pair<std::string, std::string>> short_timeout = {
      {"tcp.peer_timeout", "300ms"}, {"homa.peer_timeout", "300ms"},
      {"tcp.ping_interval", "50ms"}};
  auto server = Open(GetParam(), short_timeout);
  auto client = Open(GetParam(), short_timeout);
  ASSERT_TRUE(server && client);
  std::atomic<int> runs{0};
  ASSERT_TRUE(server->Serve(1, [&](const RpcContext&, Buffer request) -> Result<Buffer> {
    ++runs;
    std::this_thread::sleep_for(900ms);
    return request;
  }).ok());
  ServerThread run(*server);
  auto reply = client->Call(server->address(), 1, Buffer::Copy("slow"), {.deadline = 10s});
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->AsStringView(), "slow");
  EXPECT_EQ(runs.load(), 1);
}

// CPU time a thread has used so far.
std::chrono::nanoseconds ThreadCpu(std::thread& t) {
  clockid_t id;
  timespec ts{};
  if (pthread_getcpuclockid(t.native_handle(), &id) != 0 || clock_gettime(id, &ts) != 0) {
    return std::chrono::nanoseconds(0);
  }
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

// `wharf serve`'s shape: one thread in Run(), another blocked in Accept().
// Whichever drives the endpoint, the other waits off the CPU, so together
// they use at most one CPU's time. Each used to spin and poll on its own,
// two CPUs' worth where two were free, and on a shared CPU the thread
// holding the engine's lock was preempted for a scheduler slice while the
// other spun, which made round trips of milliseconds.
TEST_P(EndpointServeTest, AThreadBlockedInAcceptStaysOffTheCpuWhileAnotherRuns) {
  auto server = Open(GetParam());
  auto client = Open(GetParam());
  ASSERT_TRUE(server && client);
  ASSERT_TRUE(server->Serve(1, [](const RpcContext&, Buffer b) { return Result<Buffer>(std::move(b)); }).ok());
  ASSERT_TRUE(server->Listen().ok());
  std::atomic<bool> stop{false};
  std::thread runner([&] {
    while (!stop) (void)server->Run(30s);
  });
  std::thread acceptor([&] {
    while (!stop) (void)server->Accept(50ms);
  });
  const auto acceptor_before = ThreadCpu(acceptor);
  const auto runner_before = ThreadCpu(runner);
  const auto wall_before = std::chrono::steady_clock::now();
  // A count of calls, not a time: a loaded or sanitized machine takes
  // longer, and the bounds below are per wall time anyway.
  int answered = 0;
  const auto give_up = std::chrono::steady_clock::now() + 20s;
  while (answered < 800 && std::chrono::steady_clock::now() < give_up) {
    std::vector<Completion> calls;
    for (int i = 0; i < 8; ++i) calls.push_back(client->ICall(server->address(), 1, Buffer::Copy("x")));
    for (Completion& c : calls) answered += c.Wait(5s).ok() ? 1 : 0;
  }
  const auto acceptor_used = ThreadCpu(acceptor) - acceptor_before;
  const auto runner_used = ThreadCpu(runner) - runner_before;
  const auto wall = std::chrono::steady_clock::now() - wall_before;
  stop = true;
  server->Shutdown();
  runner.join();
  acceptor.join();
  EXPECT_GE(answered, 800);
  // Never both turning the engine: a turn that finds the lock taken by the
  // other thread (which, preempted while holding it, stalled the spinner
  // for a scheduler slice) is rare; the few left are the acceptor issuing
  // and cancelling its Accepts and this thread starting its calls (about
  // 100 here, against 30,000 when both spun). Under ASan every lock is held
  // several times longer and the driver spins through more turns meanwhile
  // (2,146 in one sanitized run): the bound there only tells spinning from
  // waiting, and the CPU bound below is the same.
  uint64_t busy = 0;
  for (const auto& [name, value] : server->Stats()) {
    if (name == "endpoint.driver_turns_lock_busy") busy = value;
  }
  const uint64_t max_busy = kSanitizedBuild ? 10'000 : 1'000;
  EXPECT_LT(busy, max_busy) << "turns that found the lock taken";
  // And together they use at most one CPU's time (a little slack).
  EXPECT_LT(acceptor_used + runner_used, wall * 11 / 10)
      << "acceptor " << acceptor_used.count() / 1000 << " us, runner "
      << runner_used.count() / 1000 << " us of CPU in "
      << std::chrono::duration_cast<std::chrono::microseconds>(wall).count() << " us";
}

INSTANTIATE_TEST_SUITE_P(Transports, EndpointServeTest, ::testing::Values("homa", "tcp", "ucx"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace wharf
