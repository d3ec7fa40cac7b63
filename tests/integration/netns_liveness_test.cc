// The project issue's liveness faults across a real link: `wharf serve` on
// host 1 of a two-host cluster (network namespaces on a bridge, veth links),
// the client an in-process Endpoint whose sockets live on host 0 (the test
// thread enters host 0's namespace to open it). Once per transport:
//
// - the server stopped for 1 s (SIGSTOP/SIGCONT) with 4 calls in flight
//   loses no call and runs none twice (default settings);
// - the server's host vanishes (its cable is cut: no ICMP, no RST, nothing)
//   while calls are in flight; with a configured 1 s peer timeout on the
//   client they fail with kUnavailable after about 1 s (not before 0.8 s,
//   not after 3 s).
// Needs root; skips without.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "integration/call_stream.h"
#include "integration/liveness_scenarios.h"
#include "integration/wharf_process.h"
#include "netns/netns_cluster.h"
#include "netns/status_testing.h"
#include "netns/thread_netns.h"
#include "wharf/endpoint.h"

namespace wharf::integration {
namespace {

using namespace std::chrono_literals;
using netns::NetnsCluster;
using SteadyClock = std::chrono::steady_clock;

// Milliseconds, so that fractions of it (8/10) are not rounded to 0 s.
constexpr std::chrono::milliseconds kConfiguredPeerTimeout = 1s;

long long Ms(std::chrono::nanoseconds d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

class NetnsLivenessTest : public ::testing::TestWithParam<std::string> {
 protected:
  const std::string& scheme() const { return GetParam(); }

  void SetUp() override {
    if (Status supported = NetnsCluster::CheckSupported(); !supported.ok()) {
      GTEST_SKIP() << "needs root and network namespaces: " << supported;
    }
    auto cluster = NetnsCluster::Create({.hosts = 2, .mtu = 1500, .prefix = "wharflive"});
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = std::move(cluster).value();
    auto server = ServeProcess::Start(
        {.listen = scheme() + "://" + cluster_->address(1) + ":0",
         .process = {.netns = cluster_->namespace_name(1), .label = "wharf serve on host 1"}});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(server).value();
  }

  // An endpoint on host 0. The test thread stays in host 0's namespace
  // until TearDown, so sockets the endpoint makes later (tcp:// dials) are
  // there too.
  std::unique_ptr<Endpoint> OpenClientOnHost0(
      std::vector<std::pair<std::string, std::string>> settings = {}) {
    auto inside = netns::ThreadNetns::Enter(cluster_->namespace_name(0));
    EXPECT_TRUE(inside.ok()) << inside.status();
    if (!inside.ok()) return nullptr;
    on_host0_ = std::move(inside).value();
    auto ep = Endpoint::Open({.address = scheme() + "://" + cluster_->address(0) + ":0",
                              .settings = std::move(settings)});
    EXPECT_TRUE(ep.ok()) << ep.status();
    return ep.ok() ? std::move(ep).value() : nullptr;
  }

  void TearDown() override {
    client_.reset();
    on_host0_.reset();  // back to the test's own namespace
    server_.reset();
    cluster_.reset();
  }

  // Destroyed in TearDown in the reverse order of their declaration.
  std::unique_ptr<NetnsCluster> cluster_;
  std::unique_ptr<ServeProcess> server_;
  std::unique_ptr<netns::ThreadNetns> on_host0_;
  std::unique_ptr<Endpoint> client_;
};

TEST_P(NetnsLivenessTest, ServerStoppedForOneSecondLosesNoCall) {
  client_ = OpenClientOnHost0();
  ASSERT_NE(client_, nullptr);
  CheckHeldPauseLosesNothing(*client_, *server_);
}

TEST_P(NetnsLivenessTest, VanishedHostFailsCallsAfterTheConfiguredTimeout) {
  client_ = OpenClientOnHost0({{scheme() + ".peer_timeout", "1s"}});
  ASSERT_NE(client_, nullptr);
  CallStream stream(*client_, server_->address(), /*depth=*/4);
  stream.RunUntil(SteadyClock::now() + 300ms);
  ASSERT_GT(stream.ok(), 0) << "no call completed before the cut: " << stream.first_failure();
  ASSERT_EQ(stream.failed(), 0) << stream.first_failure();

  // The cut takes effect somewhere inside the `ip` command, and packets that
  // arrived just before it may be read only after it (nobody drives the
  // client meanwhile), so the peer was last heard between its start and its
  // end: the lower bound is checked from the start, the upper from the end.
  const auto cut_started = SteadyClock::now();
  ASSERT_OK(cluster_->SetLinkUp(1, false));
  const auto cut_done = SteadyClock::now();
  const int ok_before = stream.ok();
  stream.Issue(4);  // calls made after the host vanished fail the same way
  ASSERT_TRUE(stream.Drain(cut_done + 30s)) << "calls still pending 30 s after the cut";

  const int failed = stream.failed();
  EXPECT_GE(failed, 4) << (stream.ok() - ok_before) << " calls completed after the cut";
  EXPECT_EQ(stream.unavailable(), failed) << "the first failure: " << stream.first_failure();
  EXPECT_GE(stream.first_failure_at() - cut_started, kConfiguredPeerTimeout * 8 / 10)
      << "the first call failed " << Ms(stream.first_failure_at() - cut_started)
      << " ms after the cut: " << stream.first_failure();
  EXPECT_LE(stream.last_failure_at() - cut_done, kConfiguredPeerTimeout * 3)
      << "the last call failed " << Ms(stream.last_failure_at() - cut_done)
      << " ms after the cut\nclient counters: " << StatsText(*client_);
}

INSTANTIATE_TEST_SUITE_P(BothTransports, NetnsLivenessTest, ::testing::Values("homa", "tcp"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace wharf::integration
