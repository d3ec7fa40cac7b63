// RPCs between two hosts (network namespaces on a bridge, 1500-byte links):
// `wharf serve` on host 1, `wharf ping` on host 0. First every message size
// of the loopback suite over each transport (homa://, tcp://, and ucx://
// over UCX's tcp on the hosts' eth0: the namespaces share IPC, so UCX would
// otherwise be free to pick shared memory), each echo
// checked byte for byte by ping; then, with 5% random loss of UDP on both
// hosts' input, 2,000 homa RPCs of mixed sizes that must all complete and run
// on the server exactly once. Needs root; skips without.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "integration/rma_scenarios.h"
#include "integration/wharf_process.h"
#include "netns/netns_cluster.h"
#include "netns/status_testing.h"

namespace wharf::integration {
namespace {

using netns::NetnsCluster;

// Bound on one `wharf ping` run; only reached on failure.
constexpr DurationNs kPingTimeoutNs = 60 * kNsPerSec;

class NetnsRpcBase : public ::testing::Test {
 protected:
  void SetUp() override {
    if (Status supported = NetnsCluster::CheckSupported(); !supported.ok()) {
      GTEST_SKIP() << "needs root and network namespaces: " << supported;
    }
    auto cluster = NetnsCluster::Create({.hosts = 2, .mtu = 1500, .prefix = "wharfint"});
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = std::move(cluster).value();
  }

  // `wharf serve` on host 1, on the host's address and a kernel-picked port.
  std::unique_ptr<ServeProcess> StartServer(const std::string& scheme = "homa") {
    auto server = ServeProcess::Start(
        {.listen = scheme + "://" + cluster_->address(1) + ":0",
         .settings = UcxSettings(scheme),
         .process = {.netns = cluster_->namespace_name(1), .label = "wharf serve on host 1"}});
    EXPECT_TRUE(server.ok()) << server.status();
    return server.ok() ? std::move(server).value() : nullptr;
  }

  // ucx:// between the hosts: UCX's tcp over their veth, never its shared
  // memory (the namespaces share IPC and PIDs).
  static std::vector<std::string> UcxSettings(const std::string& scheme) {
    if (scheme != "ucx") return {};
    return {"ucx.tls=tcp", std::string("ucx.devices=") + NetnsCluster::kHostInterface};
  }

  // `wharf ping <args> TARGET` on host 0.
  Result<netns::CommandOutput> Ping(std::vector<std::string> args, const std::string& target) {
    if (target.rfind("ucx://", 0) == 0) {
      for (const std::string& s : UcxSettings("ucx")) args.insert(args.end(), {"--set", s});
    }
    args.insert(args.begin(), "ping");
    args.push_back(target);
    return RunWharf(std::move(args), kPingTimeoutNs,
                    {.netns = cluster_->namespace_name(0), .label = "wharf ping on host 0"});
  }

  // Declared before the processes of each test, so it is destroyed after them.
  std::unique_ptr<NetnsCluster> cluster_;
};

class NetnsRpcTest : public NetnsRpcBase, public ::testing::WithParamInterface<std::string> {};

TEST_P(NetnsRpcTest, EverySizeIsEchoedByteForByte) {
  auto server = StartServer(GetParam());
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->address().rfind(GetParam() + "://" + cluster_->address(1) + ":", 0), 0u);
  // The sizes of the loopback SizeTest on a real 1500-byte link. The last is
  // the largest payload that fits today: exactly 64 MiB fails on loopback
  // (SizeTest/DefaultMtu_67108864B), and would fail here the same way.
  std::vector<size_t> sizes = {0, 1};
  // One byte either side of: the last payload byte of the first packet, the
  // last message byte of it, and the largest UDP payload of a 1500-byte packet.
  for (size_t boundary : {1392, 1424, 1472}) {
    sizes.insert(sizes.end(), {boundary - 1, boundary, boundary + 1});
  }
  sizes.insert(sizes.end(), {2 * 1392, size_t{1} << 20, (size_t{64} << 20) - 32});
  for (size_t size : sizes) {
    // Small sizes three times (cheap); the big ones once.
    std::string count = size <= (size_t{1} << 20) ? "3" : "1";
    auto ping = Ping({"--count", count, "--size", std::to_string(size), "--timeout", "30", "-q"},
                     server->address());
    ASSERT_TRUE(ping.ok()) << size << " bytes: " << ping.status();
    EXPECT_EQ(ping->exit_code, 0) << size << " bytes:\n" << ping->stdout_text << ping->stderr_text;
  }
  auto summary = server->Stop();
  ASSERT_TRUE(summary.ok()) << summary.status();
  auto counts = ParseServerCounts(*summary);
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->executed, 3 * (sizes.size() - 1) + 1);
  EXPECT_EQ(counts->duplicates, 0u);
}

// Five concurrent pings of different sizes (400 RPCs each, 16 in flight per
// ping) while each host drops 5% of the UDP packets it receives. Retransmitted
// and duplicated requests must not run the handler twice.
INSTANTIATE_TEST_SUITE_P(EveryTransport, NetnsRpcTest, ::testing::Values("homa", "tcp", "ucx"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

// Remote memory between the hosts (ucx:// over UCX's tcp on eth0): `wharf
// serve --lend-bytes` on host 1, `wharf rma` children on host 0; the same
// checks as between processes on one host (rma_across_processes_test.cc).
TEST_F(NetnsRpcBase, RemoteMemoryRoundTripsEverySizeAndLosesNoAtomicUpdate) {
  auto server = ServeProcess::Start(
      {.listen = "ucx://" + cluster_->address(1) + ":0",
       .settings = UcxSettings("ucx"),
       .args = {"--lend-bytes", std::to_string(kRmaLendBytes), "--mode", "embedded"},
       .process = {.netns = cluster_->namespace_name(1), .label = "wharf serve on host 1"}});
  ASSERT_TRUE(server.ok()) << server.status();
  const RmaClient client{.settings = UcxSettings("ucx"),
                         .process = {.netns = cluster_->namespace_name(0),
                                     .label = "wharf rma on host 0"}};
  CheckEverySizeRoundTrips((*server)->address(), client);
  CheckConcurrentAtomicsLoseNothing((*server)->address(), client);
  CheckBadAccessIsRefused((*server)->address(), client);
}

TEST_F(NetnsRpcBase, TwoThousandMixedRpcsUnderFivePercentLossRunExactlyOnce) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  ASSERT_OK(cluster_->SetLoss(0, 5));
  ASSERT_OK(cluster_->SetLoss(1, 5));

  const std::vector<size_t> sizes = {64, 1500, 10'000, 50'000, 100'000};
  constexpr int kPerSize = 400;
  std::vector<std::unique_ptr<netns::Subprocess>> pings;
  for (size_t size : sizes) {
    auto p = netns::Subprocess::Start(
        {WharfCliPath(), "ping", "--count", std::to_string(kPerSize), "--size",
         std::to_string(size), "--concurrency", "16", "--timeout", "30", "-q", server->address()},
        {.netns = cluster_->namespace_name(0), .label = "ping " + std::to_string(size) + " B"});
    ASSERT_TRUE(p.ok()) << p.status();
    pings.push_back(std::move(p).value());
  }
  for (size_t i = 0; i < pings.size(); ++i) {
    auto code = pings[i]->WaitFor(kPingTimeoutNs);
    ASSERT_TRUE(code.ok()) << code.status();
    EXPECT_EQ(*code, 0) << sizes[i] << " B:\n" << pings[i]->Stdout() << pings[i]->Stderr();
  }
  auto dropped0 = cluster_->LossDropCount(0);
  auto dropped1 = cluster_->LossDropCount(1);
  ASSERT_TRUE(dropped0.ok() && dropped1.ok());
  // Seen once under ASan with other netns tests running (both counters 0,
  // every RPC answered); what the hosts' filters and links say is the clue.
  EXPECT_GT(*dropped0, 0) << "the loss rule on host 0 dropped nothing\n"
                          << cluster_->DescribeFiltering(0);
  EXPECT_GT(*dropped1, 0) << "the loss rule on host 1 dropped nothing\n"
                          << cluster_->DescribeFiltering(1);

  auto summary = server->Stop();
  ASSERT_TRUE(summary.ok()) << summary.status();
  auto counts = ParseServerCounts(*summary);
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->executed, sizes.size() * kPerSize)
      << "packets dropped: host 0 " << *dropped0 << ", host 1 " << *dropped1;
  EXPECT_EQ(counts->duplicates, 0u);
}

}  // namespace
}  // namespace wharf::integration
