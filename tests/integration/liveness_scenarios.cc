// The shared liveness scenarios.
#include "integration/liveness_scenarios.h"

#include <gtest/gtest.h>
#include <signal.h>

#include "integration/call_stream.h"
#include "netns/status_testing.h"

namespace wharf::integration {
namespace {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;

constexpr uint32_t kCountsMethod = 2;  // `wharf serve`: "executed N duplicates M"
constexpr int kDepth = 4;              // calls in flight, as in the ping

long long Ms(std::chrono::nanoseconds d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

}  // namespace

std::string StatsText(const Endpoint& ep) {
  std::string out;
  for (const auto& [name, value] : ep.Stats()) {
    if (value != 0) out += name + "=" + std::to_string(value) + " ";
  }
  return out;
}

Result<ServerCounts> FetchServerCounts(Endpoint& client, const std::string& address) {
  WHARF_ASSIGN_OR_RETURN(Buffer reply,
                         client.Call(address, kCountsMethod, Buffer(), {.deadline = 10s}));
  return ParseServerCounts(reply.AsStringView());
}

void CheckHeldPauseLosesNothing(Endpoint& client, ServeProcess& server,
                                std::chrono::milliseconds pause) {
  CallStream stream(client, server.address(), kDepth);
  // Traffic flows first, so the pause catches calls at every stage.
  stream.RunUntil(SteadyClock::now() + 300ms);
  ASSERT_GT(stream.ok(), 0) << "no call completed before the pause: " << stream.first_failure();
  ASSERT_OK(server.process().Signal(SIGSTOP));
  const auto stopped_at = SteadyClock::now();
  // The pause is what is tested, so here the test does wait out the time
  // (driving its calls meanwhile).
  stream.RunUntil(stopped_at + pause);
  ASSERT_OK(server.process().Signal(SIGCONT));
  stream.RunUntil(SteadyClock::now() + 1s);
  ASSERT_TRUE(stream.Drain(SteadyClock::now() + 30s))
      << stream.in_flight() << " calls still pending 30 s after the pause";

  EXPECT_EQ(stream.failed(), 0) << stream.failed() << " of " << stream.issued()
                                << " calls failed; the first: " << stream.first_failure()
                                << "\nclient counters: " << StatsText(client);
  // A slowest call well short of the pause would mean the server was never
  // stopped while calls waited on it, and the test proved nothing.
  EXPECT_GE(stream.max_ok_latency(), pause * 8 / 10)
      << "the slowest call took " << Ms(stream.max_ok_latency()) << " ms";
  auto counts = FetchServerCounts(client, server.address());
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->executed, static_cast<uint64_t>(stream.ok()))
      << "the server ran " << counts->executed << " requests for " << stream.ok()
      << " successful calls";
  EXPECT_EQ(counts->duplicates, 0u);
}

}  // namespace wharf::integration
