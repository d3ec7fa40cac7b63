// Tests for what `wharf bench cluster` adds to the netns harness, on real
// namespaces: a cluster comes up and goes down leaving nothing; the sweep
// removes the cluster (and its processes) of a SIGKILLed run but never that
// of a live one; a run with the ClusterGuard leaves nothing after SIGINT or
// SIGTERM and dies of that signal; and the tbf bottleneck holds its rate
// within 10% (one iperf3 TCP stream, 2 s; the FIFO at 200 and 500 Mbit/s, 8
// priority levels at 100 and 200). Runs the
// stand-in wharf_bench_cluster_child. Skips without root; waits are bounded.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "netns/bottleneck.h"
#include "netns/netns_cluster.h"
#include "netns/status_testing.h"
#include "netns/subprocess.h"
#include "bench/cluster_check.h"

namespace wharf::bench {
namespace {

using netns::NetnsCluster;

constexpr const char* kChild = WHARF_BENCH_CLUSTER_CHILD;
constexpr DurationNs kWaitNs = 30 * kNsPerSec;

class BenchClusterTest : public testing::Test {
 protected:
  void SetUp() override {
    if (Status supported = NetnsCluster::CheckSupported(); !supported.ok()) {
      GTEST_SKIP() << "needs root and network namespaces: " << supported;
    }
  }
};

std::vector<std::string> NamespacesOf(const std::string& tag) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/var/run/netns", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(tag + "-")) names.push_back(name);
  }
  return names;
}

// True once `pid` has exited (or never existed), within kWaitNs; works for
// processes that are not our children.
bool ExitsSoon(pid_t pid) {
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) return errno == ESRCH;
  pollfd p{.fd = pidfd, .events = POLLIN, .revents = 0};
  const int ready = ::poll(&p, 1, static_cast<int>(kWaitNs / kNsPerMs));
  ::close(pidfd);
  return ready == 1;
}

// A started stand-in run: its cluster's tag and the detached process in it.
// Whatever the test leaves is removed when this goes out of scope.
struct ChildRun {
  std::unique_ptr<netns::Subprocess> process;
  std::string tag;
  pid_t detached = -1;
  ~ChildRun() {
    if (process) process->Kill();
    if (!tag.empty()) NetnsCluster::RemoveCluster(tag).IgnoreError();
  }
};

void StartChild(ChildRun& run, bool guarded) {
  std::vector<std::string> argv = {kChild};
  if (guarded) argv.push_back("--guard");
  auto started = netns::Subprocess::Start(argv);
  ASSERT_TRUE(started.ok()) << started.status();
  run.process = std::move(started).value();
  Result<std::string> line = run.process->WaitForStdoutLine("ready ", kWaitNs);
  ASSERT_TRUE(line.ok()) << line.status() << run.process->Stderr();
  std::istringstream words(line->substr(6));
  words >> run.tag >> run.detached;
  ASSERT_TRUE(run.tag.starts_with(std::string(kBenchClusterPrefix) + "-")) << *line;
  ASSERT_GT(run.detached, 0) << *line;
  ASSERT_EQ(NamespacesOf(run.tag).size(), 3u) << "two hosts and the switch";
  ASSERT_EQ(::kill(run.detached, 0), 0) << "the detached process runs";
}

TEST_F(BenchClusterTest, ClusterComesUpWithBottleneckAndGoesDownLeavingNothing) {
  auto created = NetnsCluster::Create({.hosts = 3, .prefix = std::string(kBenchClusterPrefix)});
  ASSERT_TRUE(created.ok()) << created.status();
  std::unique_ptr<NetnsCluster> cluster = std::move(created).value();
  const std::string tag = cluster->tag();
  EXPECT_EQ(NamespacesOf(tag).size(), 4u);
  auto bottleneck = netns::ApplyBottleneck(*cluster, 1'000'000'000);
  ASSERT_TRUE(bottleneck.ok()) << bottleneck.status();
  EXPECT_EQ(bottleneck->queues.size(), 6u);
  auto queues = netns::ReadBottleneckQueues(*cluster);
  ASSERT_TRUE(queues.ok()) << queues.status();
  ASSERT_EQ(queues->size(), 6u);
  auto ping = UdpPing(*cluster, 0, 2, 3, kWaitNs, SystemClock::Get());
  ASSERT_TRUE(ping.ok()) << ping.status();
  EXPECT_EQ(ping->received, 3);
  ASSERT_OK(cluster->Destroy());
  EXPECT_TRUE(NamespacesOf(tag).empty());
}

TEST_F(BenchClusterTest, SweepRemovesAKilledRunsClusterAndProcessesButNotALiveRun) {
  ChildRun killed;
  ASSERT_NO_FATAL_FAILURE(StartChild(killed, /*guarded=*/false));
  ChildRun live;
  ASSERT_NO_FATAL_FAILURE(StartChild(live, /*guarded=*/false));

  killed.process->Kill();  // SIGKILL: no handler, no destructor runs
  EXPECT_EQ(NamespacesOf(killed.tag).size(), 3u) << "the kill leaked the cluster";
  std::vector<std::string> removed;
  ASSERT_OK(SweepStaleBenchClusters(&removed));
  // (A concurrent bench run's sweep may have removed some of them first.)
  EXPECT_TRUE(NamespacesOf(killed.tag).empty());
  EXPECT_TRUE(ExitsSoon(killed.detached)) << "the process left inside is killed";
  EXPECT_EQ(NamespacesOf(live.tag).size(), 3u) << "a live run's cluster is not touched";
  EXPECT_EQ(::kill(live.detached, 0), 0);
}

TEST_F(BenchClusterTest, GuardedRunLeavesNothingAfterSigintOrSigtermAndDiesOfIt) {
  for (const int signo : {SIGINT, SIGTERM}) {
    SCOPED_TRACE(::strsignal(signo));
    ChildRun run;
    ASSERT_NO_FATAL_FAILURE(StartChild(run, /*guarded=*/true));
    ASSERT_OK(run.process->Signal(signo));
    Result<int> exit_code = run.process->WaitFor(kWaitNs);
    ASSERT_TRUE(exit_code.ok()) << exit_code.status();
    EXPECT_EQ(*exit_code, 128 + signo) << "re-raised: " << run.process->Stderr();
    EXPECT_TRUE(NamespacesOf(run.tag).empty());
    EXPECT_TRUE(ExitsSoon(run.detached));
  }
}

// The goodput of one TCP stream through the bottleneck (a tbf, or with
// `priority_levels` > 1 the htb priority classes), as a fraction of what the
// rate carries as TCP payload.
double MeasuredFraction(NetnsCluster& cluster, int64_t rate_bps, int priority_levels) {
  auto bottleneck = netns::ApplyBottleneck(cluster, rate_bps, /*ingress=*/true, priority_levels);
  EXPECT_TRUE(bottleneck.ok()) << bottleneck.status();
  auto iperf = RunIperf3Between(cluster, 0, 1, /*seconds=*/2);
  EXPECT_TRUE(iperf.ok()) << iperf.status();
  if (!iperf.ok()) return 0;
  return iperf->received_bits_per_second /
         (static_cast<double>(rate_bps) * TcpGoodputPerWireBit(cluster.mtu()));
}

// Load on the machine can only slow the sender (goodput below the rate),
// never push more through the tbf than its rate: so every attempt must stay
// under rate + 10%, and the best of up to three must reach rate - 10%. Both
// kinds: one FIFO (tbf) and the default 8 priority levels (htb, whose small
// bucket and GSO-cutting class queues must not cost rate at the rates the
// cluster benchmark uses).
TEST_F(BenchClusterTest, BottleneckHoldsItsRateWithinTenPercent) {
  if (!netns::RunCommand({"iperf3", "--version"}, {}, kWaitNs).ok()) {
    GTEST_SKIP() << "iperf3 is not installed (scripts/setup installs it)";
  }
  auto created = NetnsCluster::Create({.hosts = 2, .prefix = std::string(kBenchClusterPrefix)});
  ASSERT_TRUE(created.ok()) << created.status();
  // The htb's small bucket (200 us of the rate) loses rate when the qdisc's
  // timers run late on busy CPUs: on this 2-core VM 8 levels at 500 Mbit/s
  // delivered 77-96%, so they are held to the rates the cluster benchmark
  // runs them at (100 Mbit/s by default) and the FIFO to 500 Mbit/s.
  const std::pair<int, std::vector<int64_t>> kRatesByLevels[] = {
      {1, {200'000'000, 500'000'000}}, {8, {100'000'000, 200'000'000}}};
  for (const auto& [levels, rates] : kRatesByLevels) {
    for (const int64_t rate : rates) {
      const std::string what = netns::FormatRate(rate) + ", " + std::to_string(levels) + " level(s)";
      double best = 0;
      for (int attempt = 0; attempt < 3 && best < 0.90; ++attempt) {
        const double fraction = MeasuredFraction(**created, rate, levels);
        EXPECT_LE(fraction, 1.10) << what << " let more through than its rate";
        std::cout << what << ", attempt " << attempt + 1 << ": " << fraction << " of the rate\n";
        best = std::max(best, fraction);
      }
      EXPECT_NEAR(best, 1.0, 0.10) << what << ": best of up to 3 attempts";
    }
  }
}

}  // namespace
}  // namespace wharf::bench
