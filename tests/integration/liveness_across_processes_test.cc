// The project issue's liveness faults between real processes over loopback,
// each test once per transport (homa://, tcp://, ucx://), all with default settings:
// silence is not death, but a dead process is found at once.
//
// - a server stopped for 1 s (SIGSTOP/SIGCONT) under 4 calls in flight loses
//   no call and runs none twice;
// - 10 s handlers under a 30 s deadline succeed, on the async path (`wharf
//   serve --handler-delay`) and the sync path (an in-process handler that
//   sleeps, kept alive by the endpoint's keeper thread);
// - busy loops on every CPU starve the server without losing a call;
// - a SIGKILLed server fails the calls it held with kUnavailable within
//   50 ms of the kill (the kernel says so: ICMP port unreachable, refused
//   reconnect).
// The two-host versions (a pause across a veth link, a vanished host) are
// in netns_liveness_test.cc.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/sanitizer_build.h"
#include "integration/call_stream.h"
#include "integration/liveness_scenarios.h"
#include "integration/wharf_process.h"
#include "netns/status_testing.h"
#include "netns/subprocess.h"
#include "wharf/endpoint.h"


namespace wharf::integration {
namespace {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;

constexpr uint32_t kEchoMethod = 1;  // `wharf serve`, and the in-process slow server
constexpr auto kHandlerTime = 10s;
constexpr auto kLongDeadline = 30s;

// How soon after SIGKILL the held calls must fail. The issue asks for 50 ms;
// the detection itself takes about 5 ms (the client's next RESEND draws the
// ICMP; tcp's redial is refused after 1 ms). Sanitizer builds run on the
// same loaded machine several times slower, so they get 200 ms.
#ifdef WHARF_TEST_SANITIZED
constexpr auto kDeathNoticeBound = 200ms;
#else
constexpr auto kDeathNoticeBound = 50ms;
#endif

long long Ms(std::chrono::nanoseconds d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

class ProcessLivenessTest : public ::testing::TestWithParam<std::string> {
 protected:
  const std::string& scheme() const { return GetParam(); }
  std::string Loopback() const { return scheme() + "://127.0.0.1:0"; }

  std::unique_ptr<ServeProcess> StartServer(std::vector<std::string> args = {}) {
    auto server = ServeProcess::Start({.listen = Loopback(), .args = std::move(args)});
    EXPECT_TRUE(server.ok()) << server.status();
    return server.ok() ? std::move(server).value() : nullptr;
  }

  std::unique_ptr<Endpoint> OpenEndpoint(
      std::vector<std::pair<std::string, std::string>> settings = {}) {
    auto ep = Endpoint::Open({.address = Loopback(), .settings = std::move(settings)});
    EXPECT_TRUE(ep.ok()) << ep.status();
    return ep.ok() ? std::move(ep).value() : nullptr;
  }
};

// ------------------------------------------------------------ held pause

TEST_P(ProcessLivenessTest, ServerStoppedForOneSecondLosesNoCall) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  auto client = OpenEndpoint();
  ASSERT_NE(client, nullptr);
  CheckHeldPauseLosesNothing(*client, *server);
}

// ---------------------------------------------------------- long handlers

// An in-process server whose handler sleeps inside (the sync path), driven
// by Run() on a thread of its own. Destroying it shuts the endpoint down and
// joins the thread (after a handler in progress returns).
class SleepyServer {
 public:
  static std::unique_ptr<SleepyServer> Start(
      const std::string& listen, std::chrono::nanoseconds sleep,
      std::vector<std::pair<std::string, std::string>> settings = {}) {
    auto ep = Endpoint::Open({.address = listen, .settings = std::move(settings)});
    EXPECT_TRUE(ep.ok()) << ep.status();
    if (!ep.ok()) return nullptr;
    Status served = (*ep)->Serve(kEchoMethod, [sleep](const RpcContext&, Buffer request) {
      std::this_thread::sleep_for(sleep);  // the long handler under test
      return Result<Buffer>(std::move(request));
    });
    EXPECT_TRUE(served.ok()) << served;
    if (!served.ok()) return nullptr;
    return std::unique_ptr<SleepyServer>(new SleepyServer(std::move(ep).value()));
  }
  ~SleepyServer() {
    endpoint_->Shutdown();
    runner_.join();
  }
  std::string address() const { return endpoint_->address(); }

 private:
  explicit SleepyServer(std::unique_ptr<Endpoint> endpoint)
      : endpoint_(std::move(endpoint)), runner_([this] { (void)endpoint_->Run(); }) {}
  std::unique_ptr<Endpoint> endpoint_;
  std::thread runner_;
};

// Both paths at once, so the test costs one handler time: a 10 s async
// answer from `wharf serve --handler-delay 10000` (a child process) and a
// 10 s sleep inside an in-process sync handler, each under a 30 s deadline.
TEST_P(ProcessLivenessTest, TenSecondHandlersUnderAThirtySecondDeadlineSucceed) {
  auto async_server = StartServer({"--handler-delay", std::to_string(Ms(kHandlerTime))});
  ASSERT_NE(async_server, nullptr);
  auto sync_server = SleepyServer::Start(Loopback(), kHandlerTime);
  ASSERT_NE(sync_server, nullptr);
  auto client = OpenEndpoint();
  ASSERT_NE(client, nullptr);

  const auto start = SteadyClock::now();
  Completion async_call = client->ICall(async_server->address(), kEchoMethod, PatternBuffer(100, 1),
                                        {.deadline = kLongDeadline});
  Completion sync_call = client->ICall(sync_server->address(), kEchoMethod, PatternBuffer(100, 2),
                                       {.deadline = kLongDeadline});
  // Each call's own end, whichever ends first (callbacks run on this thread,
  // inside the waits below).
  SteadyClock::time_point async_done{}, sync_done{};
  async_call.OnComplete([&](const Status&) { async_done = SteadyClock::now(); });
  sync_call.OnComplete([&](const Status&) { sync_done = SteadyClock::now(); });
  const Status async_status = async_call.Wait(kLongDeadline + 10s);
  const Status sync_status = sync_call.Wait(kLongDeadline + 10s);
  const auto async_took = async_done - start;
  const auto sync_took = sync_done - start;

  EXPECT_TRUE(async_status.ok()) << "async handler (--handler-delay): " << async_status << " after "
                                 << Ms(async_took)
                                 << " ms\nclient counters: " << StatsText(*client);
  EXPECT_TRUE(sync_status.ok()) << "sync handler (sleeps inside): " << sync_status << " after "
                                << Ms(sync_took) << " ms\nclient counters: " << StatsText(*client);
  if (async_status.ok()) {
    EXPECT_TRUE(MatchesPattern(async_call.TakeMessage(), 100, 1));
    EXPECT_GE(async_took, kHandlerTime - 100ms) << "the async answer did not wait its delay";
  }
  if (sync_status.ok()) {
    EXPECT_TRUE(MatchesPattern(sync_call.TakeMessage(), 100, 2));
    EXPECT_GE(sync_took, kHandlerTime - 100ms) << "the sync handler did not sleep";
  }
  auto counts = FetchServerCounts(*client, async_server->address());
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->executed, 1u);
  EXPECT_EQ(counts->duplicates, 0u);
}

// --------------------------------------------------------- CPU saturation

// One busy loop per CPU (at least the issue's two), each a child process
// killed with its process group when the test ends, however it ends.
std::vector<std::unique_ptr<netns::Subprocess>> StartBusyLoops() {
  const int count = std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 2, 8);
  std::vector<std::unique_ptr<netns::Subprocess>> loops;
  for (int i = 0; i < count; ++i) {
    auto loop = netns::Subprocess::Start({"/bin/sh", "-c", "while :; do :; done"},
                                         {.label = "busy loop " + std::to_string(i)});
    EXPECT_TRUE(loop.ok()) << loop.status();
    if (loop.ok()) loops.push_back(std::move(loop).value());
  }
  return loops;
}

TEST_P(ProcessLivenessTest, BusyLoopsOnEveryCpuLoseNoCall) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  auto client = OpenEndpoint();
  ASSERT_NE(client, nullptr);
  auto loops = StartBusyLoops();
  ASSERT_GE(loops.size(), 2u);

  CallStream stream(*client, server->address(), /*depth=*/4);
  stream.RunUntil(SteadyClock::now() + 3s);
  ASSERT_TRUE(stream.Drain(SteadyClock::now() + 30s))
      << stream.in_flight() << " calls still pending 30 s after the run";
  for (auto& loop : loops) {
    EXPECT_FALSE(loop->exit_code().has_value()) << loop->command_line() << " stopped early";
  }
  loops.clear();  // kills them before the counts are fetched

  EXPECT_EQ(stream.failed(), 0) << stream.failed() << " of " << stream.issued()
                                << " calls failed; the first: " << stream.first_failure()
                                << "\nclient counters: " << StatsText(*client);
  EXPECT_GT(stream.ok(), 0);
  auto counts = FetchServerCounts(*client, server->address());
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->executed, static_cast<uint64_t>(stream.ok()));
  EXPECT_EQ(counts->duplicates, 0u);
}

// ------------------------------------------------------------- fast death

// The server holds 4 calls (its answers are an hour away), so they are
// surely in flight when it is SIGKILLed; the client must fail each with
// kUnavailable within kDeathNoticeBound of the kill, measured from just
// before kill(2) (so the kernel's teardown of the process counts too).
TEST_P(ProcessLivenessTest, KilledServerFailsHeldCallsWithinFiftyMs) {
  constexpr int kHeld = 4;
  auto server = StartServer({"--handler-delay", "3600000"});
  ASSERT_NE(server, nullptr);
  auto client = OpenEndpoint();
  ASSERT_NE(client, nullptr);
  CallStream stream(*client, server->address(), kHeld);
  stream.Issue(kHeld);
  // Until the server has run all of them (a bounded poll over RPCs; each
  // counts query drives the held calls too).
  const auto give_up = SteadyClock::now() + 20s;
  uint64_t executed = 0;
  while (executed < kHeld && SteadyClock::now() < give_up) {
    auto counts = FetchServerCounts(*client, server->address());
    ASSERT_TRUE(counts.ok()) << counts.status();
    executed = counts->executed;
  }
  ASSERT_EQ(executed, static_cast<uint64_t>(kHeld)) << "the server never got every call";
  ASSERT_EQ(stream.in_flight(), kHeld);

  const auto kill_at = SteadyClock::now();
  ASSERT_OK(server->process().Signal(SIGKILL));
  ASSERT_TRUE(stream.Drain(kill_at + 30s)) << "held calls still pending 30 s after the kill";
  EXPECT_EQ(stream.unavailable(), kHeld) << "of " << kHeld << " held calls, " << stream.failed()
                                         << " failed; the first: " << stream.first_failure();
  EXPECT_LE(stream.last_failure_at() - kill_at, kDeathNoticeBound)
      << "the last held call failed " << Ms(stream.last_failure_at() - kill_at)
      << " ms after the kill (first: " << Ms(stream.first_failure_at() - kill_at)
      << " ms): " << stream.first_failure() << "\nclient counters: " << StatsText(*client);
  auto code = server->process().WaitFor(kStopTimeoutNs);
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 128 + SIGKILL);
}

INSTANTIATE_TEST_SUITE_P(EveryTransport, ProcessLivenessTest, ::testing::Values("homa", "tcp", "ucx"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace wharf::integration
