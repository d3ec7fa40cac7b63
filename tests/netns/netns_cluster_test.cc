// Tests for NetnsCluster and NetnsProcess on real namespaces: layout and
// addresses, UDP between every pair of hosts, loss injection, a cut link,
// rate limits, MTU, parallel clusters, and cleanup (Destroy, processes left inside,
// leftovers of dead processes). Traffic comes from wharf_netns_udp_echo.
// Skips only without root or namespace support; every wait is bounded.
#include "netns/netns_cluster.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <algorithm>
#include <string>
#include <vector>

#include "netns/netns_process.h"
#include "netns/status_testing.h"

namespace wharf::netns {
namespace {

constexpr const char* kUdpEcho = WHARF_NETNS_UDP_ECHO;
// Generous for a loaded 2-core CI box under ASan; only reached on failure.
constexpr DurationNs kWaitNs = 30 * kNsPerSec;

class NetnsClusterTest : public testing::Test {
 protected:
  void SetUp() override {
    if (Status supported = NetnsCluster::CheckSupported(); !supported.ok()) {
      GTEST_SKIP() << "multi-host tests need root and network namespaces: " << supported;
    }
  }
};

std::unique_ptr<NetnsCluster> MustCreate(ClusterOptions options = {}) {
  Result<std::unique_ptr<NetnsCluster>> cluster = NetnsCluster::Create(std::move(options));
  EXPECT_TRUE(cluster.ok()) << cluster.status();
  return cluster.ok() ? std::move(cluster).value() : nullptr;
}

// Namespace names under /var/run/netns that start with `start`.
std::vector<std::string> NamespacesStartingWith(const std::string& start) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/var/run/netns", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(start)) names.push_back(name);
  }
  return names;
}

// Deletes the named namespaces when the test ends, however it ends.
class NamespaceGuard {
 public:
  void Add(std::string name) { names_.push_back(std::move(name)); }
  ~NamespaceGuard() {
    for (const std::string& name : names_) {
      if (std::filesystem::exists("/var/run/netns/" + name)) {
        RunCommand({"ip", "netns", "delete", name}, {}, kWaitNs).status().IgnoreError();
      }
    }
  }

 private:
  std::vector<std::string> names_;
};

Status AddNamespace(NamespaceGuard& guard, const std::string& name) {
  guard.Add(name);
  return RunChecked({"ip", "netns", "add", name}, {}, kWaitNs).status();
}

// Output of a command run in `host`, which must succeed.
std::string MustRunIn(const NetnsCluster& cluster, int host, std::vector<std::string> argv) {
  Result<CommandOutput> out = RunIn(cluster, host, argv, kWaitNs);
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return "";
  EXPECT_EQ(out->exit_code, 0) << FormatCommandLine(argv) << ": " << out->stderr_text;
  return out->stdout_text;
}

// An echo server on `host`; `count` echoes before it exits (0: never).
struct EchoServer {
  std::unique_ptr<NetnsProcess> process;
  std::string endpoint;  // "198.18.X.Y:port"
};

EchoServer StartEchoServer(const NetnsCluster& cluster, int host, int count) {
  EchoServer server;
  Result<std::unique_ptr<NetnsProcess>> spawned = NetnsProcess::Spawn(
      cluster, host, {kUdpEcho, "serve", cluster.address(host), "--count", std::to_string(count)});
  EXPECT_TRUE(spawned.ok()) << spawned.status();
  if (!spawned.ok()) return server;
  server.process = std::move(spawned).value();
  Result<std::string> line = server.process->WaitForStdoutLine("listening on ", kWaitNs);
  EXPECT_TRUE(line.ok()) << line.status();
  if (line.ok()) server.endpoint = line->substr(line->rfind(' ') + 1);
  return server;
}

struct ProbeResult {
  int exit_code = -1;
  long sent = -1;
  long received = -1;
  std::string stderr_text;
};

// Sends `count` datagrams from `host` to `endpoint` and counts the echoes.
ProbeResult Probe(const NetnsCluster& cluster, int host, const std::string& endpoint, int count,
                  std::vector<std::string> extra = {}) {
  std::vector<std::string> argv = {kUdpEcho, "probe", endpoint, "--count", std::to_string(count)};
  argv.insert(argv.end(), extra.begin(), extra.end());
  ProbeResult result;
  Result<CommandOutput> out = RunIn(cluster, host, argv, kWaitNs);
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return result;
  result.exit_code = out->exit_code;
  result.stderr_text = out->stderr_text;
  std::sscanf(out->stdout_text.c_str(), "sent %ld received %ld", &result.sent, &result.received);
  return result;
}

TEST_F(NetnsClusterTest, BuildsHostsWithUniqueNamesAndOnlyBenchmarkingAddresses) {
  auto cluster = MustCreate({.hosts = 3});
  ASSERT_NE(cluster, nullptr);
  ASSERT_EQ(cluster->host_count(), 3);
  const std::string tag = "wharf-" + std::to_string(::getpid()) + "-";
  EXPECT_TRUE(cluster->tag().starts_with(tag)) << cluster->tag();
  EXPECT_TRUE(cluster->subnet().starts_with("198.18.")) << cluster->subnet();
  std::set<std::string> names = {cluster->switch_namespace()};
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE("host " + std::to_string(i));
    names.insert(cluster->namespace_name(i));
    const std::string prefix = cluster->subnet().substr(0, cluster->subnet().rfind('.') + 1);
    EXPECT_EQ(cluster->address(i), prefix + std::to_string(i + 1));
    EXPECT_TRUE(std::filesystem::exists("/var/run/netns/" + cluster->namespace_name(i)));
    // Every address in the host is loopback or the cluster's own.
    const std::string addresses = MustRunIn(*cluster, i, {"ip", "-o", "addr", "show"});
    EXPECT_NE(addresses.find("inet " + cluster->address(i) + "/24"), std::string::npos)
        << addresses;
    std::istringstream lines(addresses);
    for (std::string line; std::getline(lines, line);) {
      const bool allowed =
          line.find(" lo ") != std::string::npos || line.find("inet 198.18.") != std::string::npos;
      EXPECT_TRUE(allowed) << "unexpected address: " << line;
    }
    EXPECT_NE(MustRunIn(*cluster, i, {"ip", "-o", "link", "show", "lo"}).find("UP"),
              std::string::npos);
    EXPECT_NE(MustRunIn(*cluster, i, {"ip", "-o", "link", "show", "eth0"}).find("mtu 1500"),
              std::string::npos);
  }
  EXPECT_EQ(names.size(), 4u);
  EXPECT_EQ(NamespacesStartingWith(cluster->tag() + "-").size(), 4u);
  Result<CommandOutput> root_links = RunCommand({"ip", "-o", "link"}, {}, kWaitNs);
  ASSERT_TRUE(root_links.ok()) << root_links.status();
  EXPECT_EQ(root_links->stdout_text.find(cluster->tag()), std::string::npos)
      << "the root namespace holds nothing of the cluster";
}

TEST_F(NetnsClusterTest, EveryHostReachesEveryOtherAndBack) {
  constexpr int kHosts = 3;
  constexpr int kDatagrams = 10;
  auto cluster = MustCreate({.hosts = kHosts});
  ASSERT_NE(cluster, nullptr);
  std::vector<EchoServer> servers;
  for (int i = 0; i < kHosts; ++i) {
    servers.push_back(StartEchoServer(*cluster, i, (kHosts - 1) * kDatagrams));
    ASSERT_NE(servers.back().process, nullptr);
    ASSERT_FALSE(servers.back().endpoint.empty());
  }
  for (int from = 0; from < kHosts; ++from) {
    for (int to = 0; to < kHosts; ++to) {
      if (from == to) continue;
      SCOPED_TRACE("host " + std::to_string(from) + " -> host " + std::to_string(to));
      const ProbeResult probe = Probe(*cluster, from, servers[to].endpoint, kDatagrams);
      ASSERT_EQ(probe.exit_code, 0) << probe.stderr_text;
      EXPECT_EQ(probe.received, kDatagrams);
    }
  }
  for (int i = 0; i < kHosts; ++i) {
    // Each server counted exactly its share, then exited by itself.
    EXPECT_EQ(servers[i].process->WaitFor(kWaitNs).value_or(-1), 0);
    EXPECT_NE(
        servers[i].process->Stdout().find("echoed " + std::to_string((kHosts - 1) * kDatagrams)),
        std::string::npos);
  }
}

TEST_F(NetnsClusterTest, LossDropsAboutHalfAtFiftyPercentAndNoneAtZero) {
  constexpr int kDatagrams = 400;
  auto cluster = MustCreate();
  ASSERT_NE(cluster, nullptr);
  EchoServer server = StartEchoServer(*cluster, 1, 0);
  ASSERT_FALSE(server.endpoint.empty());
  // A window of 100 keeps the run near a second: each lost datagram holds
  // its slot for the 500 ms timeout.
  const std::vector<std::string> pacing = {"--window", "100", "--timeout-ms", "500"};

  ASSERT_OK(cluster->SetLoss(1, 50));
  const ProbeResult lossy = Probe(*cluster, 0, server.endpoint, kDatagrams, pacing);
  ASSERT_EQ(lossy.exit_code, 0) << lossy.stderr_text;
  const long lost = kDatagrams - lossy.received;
  // Binomial(400, 0.5): 200 +- 10 (one sigma); the band is +-8 sigma.
  EXPECT_GE(lost, 120);
  EXPECT_LE(lost, 280);
  // The losses are the rule's drops (a late echo is counted lost only).
  Result<int64_t> drops = cluster->LossDropCount(1);
  ASSERT_TRUE(drops.ok()) << drops.status();
  EXPECT_LE(*drops, lost);
  EXPECT_GE(*drops, lost - 10);

  ASSERT_OK(cluster->SetLoss(1, 0));
  const ProbeResult clean = Probe(*cluster, 0, server.endpoint, kDatagrams, pacing);
  ASSERT_EQ(clean.exit_code, 0) << clean.stderr_text;
  EXPECT_EQ(clean.received, kDatagrams);
  EXPECT_FALSE(cluster->LossDropCount(1).ok()) << "SetLoss(.., 0) removed the table";
}

TEST_F(NetnsClusterTest, FullLossReplacesEarlierSettingAndSparesLoopback) {
  auto cluster = MustCreate();
  ASSERT_NE(cluster, nullptr);
  EchoServer server = StartEchoServer(*cluster, 1, 0);
  ASSERT_FALSE(server.endpoint.empty());
  const Status thirty = cluster->SetLoss(1, 30);
  ASSERT_TRUE(thirty.ok()) << thirty;
  const Status hundred = cluster->SetLoss(1, 100);
  ASSERT_TRUE(hundred.ok()) << hundred;
  const std::string ruleset = MustRunIn(*cluster, 1, {"nft", "list", "ruleset"});
  EXPECT_NE(ruleset.find("drop"), std::string::npos) << ruleset;
  EXPECT_EQ(ruleset.find("< 30"), std::string::npos) << "replaced, not added: " << ruleset;

  const std::vector<std::string> fast = {"--timeout-ms", "200"};
  const ProbeResult remote = Probe(*cluster, 0, server.endpoint, 20, fast);
  ASSERT_EQ(remote.exit_code, 0) << remote.stderr_text;
  EXPECT_EQ(remote.received, 0);
  // A host talking to itself goes over loopback, which the rule leaves alone.
  const ProbeResult local = Probe(*cluster, 1, server.endpoint, 20, fast);
  ASSERT_EQ(local.exit_code, 0) << local.stderr_text;
  EXPECT_EQ(local.received, 20);
  // The other host has no rule at all.
  EXPECT_EQ(MustRunIn(*cluster, 0, {"nft", "list", "ruleset"}), "");
  // A failing test's clue: the rule with its counter, and the link's own
  // packet counts.
  const std::string described = cluster->DescribeFiltering(1);
  EXPECT_NE(described.find("counter packets"), std::string::npos) << described;
  EXPECT_NE(described.find(std::string(NetnsCluster::kHostInterface) + "@"), std::string::npos)
      << described;
  EXPECT_NE(described.find("RX:"), std::string::npos) << described;
}

// A cut cable loses everything both ways without a word (the prober sees
// timeouts, not errors), and restoring it brings the same server back. The
// first probe resolves the hosts' ARP entries while the cable is in: probing
// first through a cut cable would leave resolution to ARP's 1 s retry timer.
TEST_F(NetnsClusterTest, CutLinkLosesEverythingSilentlyUntilRestored) {
  auto cluster = MustCreate();
  ASSERT_NE(cluster, nullptr);
  EchoServer server = StartEchoServer(*cluster, 1, 0);
  ASSERT_FALSE(server.endpoint.empty());
  const std::vector<std::string> fast = {"--timeout-ms", "200"};
  const ProbeResult before = Probe(*cluster, 0, server.endpoint, 10, fast);
  ASSERT_EQ(before.exit_code, 0) << before.stderr_text;
  ASSERT_EQ(before.received, 10);
  ASSERT_OK(cluster->SetLinkUp(1, false));
  const ProbeResult cut = Probe(*cluster, 0, server.endpoint, 10, fast);
  ASSERT_EQ(cut.exit_code, 0) << cut.stderr_text;
  EXPECT_EQ(cut.received, 0);
  ASSERT_OK(cluster->SetLinkUp(1, true));
  const ProbeResult restored = Probe(*cluster, 0, server.endpoint, 10, fast);
  ASSERT_EQ(restored.exit_code, 0) << restored.stderr_text;
  EXPECT_EQ(restored.received, 10);
  EXPECT_EQ(cluster->SetLinkUp(2, false).code(), StatusCode::kInvalidArgument);
}

TEST_F(NetnsClusterTest, RejectsBadArgumentsWithClearErrors) {
  EXPECT_EQ(NetnsCluster::Create({.hosts = 0}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(NetnsCluster::Create({.hosts = 1, .mtu = 20}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(NetnsCluster::Create({.hosts = 1, .mtu = 1500, .prefix = "Bad-Prefix"}).status().code(),
            StatusCode::kInvalidArgument);
  auto cluster = MustCreate();
  ASSERT_NE(cluster, nullptr);
  EXPECT_EQ(cluster->SetLoss(2, 10).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cluster->SetLoss(0, 101).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cluster->SetEgressRate(-1, "1mbit").code(), StatusCode::kInvalidArgument);
  // tc's own complaint reaches the caller.
  const Status bad_rate = cluster->SetEgressRate(0, "fast");
  EXPECT_EQ(bad_rate.code(), StatusCode::kInternal);
  EXPECT_NE(bad_rate.message().find("tc -n " + cluster->namespace_name(0)), std::string::npos)
      << bad_rate;
  EXPECT_NE(bad_rate.message().find("\"fast\""), std::string::npos) << bad_rate;
  EXPECT_EQ(NetnsProcess::Spawn(*cluster, 2, {"true"}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(RunIn(*cluster, 0, {"wharf-netns-no-such-binary"}, kWaitNs).status().code(),
            StatusCode::kNotFound);
}

TEST_F(NetnsClusterTest, RateLimitsApplyToBothDirectionsAndClear) {
  auto cluster = MustCreate();
  ASSERT_NE(cluster, nullptr);
  ASSERT_OK(cluster->SetEgressRate(0, "100mbit"));
  ASSERT_OK(cluster->SetIngressRate(1, "50mbit", {.burst = "32kb", .latency = "5ms"}));
  auto qdisc = [&](const std::string& netns, const std::string& dev) {
    Result<CommandOutput> out =
        RunCommand({"tc", "-n", netns, "qdisc", "show", "dev", dev, "root"}, {}, kWaitNs);
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? out->stdout_text : "";
  };
  EXPECT_NE(qdisc(cluster->namespace_name(0), "eth0").find("tbf"), std::string::npos);
  EXPECT_NE(qdisc(cluster->namespace_name(0), "eth0").find("100Mbit"), std::string::npos);
  EXPECT_NE(qdisc(cluster->switch_namespace(), "p1").find("50Mbit"), std::string::npos);
  EXPECT_EQ(qdisc(cluster->namespace_name(1), "eth0").find("tbf"), std::string::npos);

  // Traffic still flows through both limits.
  EchoServer server = StartEchoServer(*cluster, 1, 0);
  ASSERT_FALSE(server.endpoint.empty());
  const ProbeResult probe = Probe(*cluster, 0, server.endpoint, 50);
  ASSERT_EQ(probe.exit_code, 0) << probe.stderr_text;
  EXPECT_EQ(probe.received, 50);

  ASSERT_OK(cluster->ClearRates(0));
  ASSERT_OK(cluster->ClearRates(1));
  ASSERT_OK(cluster->ClearRates(1)) << "clearing nothing is fine";
  EXPECT_EQ(qdisc(cluster->namespace_name(0), "eth0").find("tbf"), std::string::npos);
  EXPECT_EQ(qdisc(cluster->switch_namespace(), "p1").find("tbf"), std::string::npos);
}

TEST_F(NetnsClusterTest, MtuOptionAppliesToEveryLink) {
  auto jumbo = MustCreate({.hosts = 2, .mtu = 9000});
  ASSERT_NE(jumbo, nullptr);
  EXPECT_NE(MustRunIn(*jumbo, 1, {"ip", "-o", "link", "show", "eth0"}).find("mtu 9000"),
            std::string::npos);
  EchoServer server = StartEchoServer(*jumbo, 1, 0);
  ASSERT_FALSE(server.endpoint.empty());
  // Unfragmented 8000-byte datagrams cross both veths and the bridge.
  const std::vector<std::string> big = {"--size", "8000", "--dont-fragment"};
  const ProbeResult probe = Probe(*jumbo, 0, server.endpoint, 10, big);
  ASSERT_EQ(probe.exit_code, 0) << probe.stderr_text;
  EXPECT_EQ(probe.received, 10);

  // At the default 1500 the same datagram cannot leave unfragmented.
  auto standard = MustCreate();
  ASSERT_NE(standard, nullptr);
  const ProbeResult too_big = Probe(*standard, 0, standard->address(1) + ":9", 1, big);
  EXPECT_EQ(too_big.exit_code, 1);
  EXPECT_NE(too_big.stderr_text.find("Message too long"), std::string::npos) << too_big.stderr_text;
}

TEST_F(NetnsClusterTest, TwoClustersCoexistIsolated) {
  auto a = MustCreate();
  auto b = MustCreate();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a->tag(), b->tag());
  EXPECT_NE(a->subnet(), b->subnet());
  for (int i = 0; i < 2; ++i) {
    EXPECT_NE(a->namespace_name(i), b->namespace_name(i));
    EXPECT_NE(a->address(i), b->address(i));
  }
  EchoServer server_a = StartEchoServer(*a, 1, 0);
  EchoServer server_b = StartEchoServer(*b, 1, 0);
  ASSERT_FALSE(server_a.endpoint.empty());
  ASSERT_FALSE(server_b.endpoint.empty());
  EXPECT_EQ(Probe(*a, 0, server_a.endpoint, 20).received, 20);
  EXPECT_EQ(Probe(*b, 0, server_b.endpoint, 20).received, 20);
  // No route between clusters: the send itself fails.
  const ProbeResult across = Probe(*a, 0, server_b.endpoint, 1, {"--timeout-ms", "100"});
  EXPECT_EQ(across.exit_code, 1);
  EXPECT_NE(across.stderr_text.find("unreachable"), std::string::npos) << across.stderr_text;
}

TEST_F(NetnsClusterTest, DestroyRemovesEverythingAndKillsProcessesInside) {
  auto cluster = MustCreate();
  ASSERT_NE(cluster, nullptr);
  const std::string tag = cluster->tag();
  ASSERT_OK(cluster->SetLoss(1, 10));
  ASSERT_OK(cluster->SetEgressRate(0, "10mbit"));
  // Left running on purpose: Destroy must not leave it holding the namespace.
  EchoServer server = StartEchoServer(*cluster, 1, 0);
  ASSERT_FALSE(server.endpoint.empty());
  ASSERT_EQ(NamespacesStartingWith(tag + "-").size(), 3u);

  ASSERT_OK(cluster->Destroy());
  EXPECT_TRUE(cluster->Destroy().ok()) << "idempotent";
  EXPECT_TRUE(NamespacesStartingWith(tag + "-").empty());
  Result<CommandOutput> listed = RunCommand({"ip", "netns", "list"}, {}, kWaitNs);
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(listed->stdout_text.find(tag), std::string::npos) << listed->stdout_text;
  Result<CommandOutput> links = RunCommand({"ip", "-o", "link"}, {}, kWaitNs);
  ASSERT_TRUE(links.ok()) << links.status();
  EXPECT_EQ(links->stdout_text.find(tag), std::string::npos) << links->stdout_text;
  EXPECT_EQ(server.process->WaitFor(kWaitNs).value_or(-1), 128 + SIGKILL);
}

// direct_pair: two hosts, one veth pair between their eth0 (its peer is the
// other host's eth0, no bridge), the MTU applied, UDP both ways, and
// Destroy removes both namespaces with the processes inside.
TEST_F(NetnsClusterTest, DirectPairIsOneVethBetweenTwoHosts) {
  auto cluster = MustCreate({.hosts = 2, .mtu = 4000, .direct_pair = true});
  ASSERT_NE(cluster, nullptr);
  const std::string tag = cluster->tag();
  EXPECT_TRUE(cluster->direct_pair());
  EXPECT_EQ(cluster->switch_namespace(), "");
  EXPECT_EQ(NamespacesStartingWith(tag + "-").size(), 2u) << "no switch namespace";
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE("host " + std::to_string(i));
    const std::string link = MustRunIn(*cluster, i, {"ip", "-d", "-o", "link", "show", "eth0"});
    EXPECT_NE(link.find("mtu 4000"), std::string::npos) << link;
    EXPECT_NE(link.find("veth"), std::string::npos) << link;
    EXPECT_EQ(link.find("bridge_slave"), std::string::npos) << link;
    // Only eth0 and lo: nothing else stands between the two hosts.
    const std::string links = MustRunIn(*cluster, i, {"ip", "-o", "link", "show"});
    EXPECT_EQ(std::count(links.begin(), links.end(), '\n'), 2) << links;
  }
  // 3000-byte datagrams leave unfragmented at MTU 4000, both ways.
  const std::vector<std::string> big = {"--size", "3000", "--dont-fragment"};
  for (int to : {1, 0}) {
    SCOPED_TRACE("to host " + std::to_string(to));
    EchoServer server = StartEchoServer(*cluster, to, 10);
    ASSERT_FALSE(server.endpoint.empty());
    const ProbeResult probe = Probe(*cluster, 1 - to, server.endpoint, 10, big);
    ASSERT_EQ(probe.exit_code, 0) << probe.stderr_text;
    EXPECT_EQ(probe.received, 10);
  }
  // The switch's operations have no switch to act on; egress limits work.
  EXPECT_EQ(cluster->SetIngressRate(1, "10mbit").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(cluster->SetLinkUp(1, false).code(), StatusCode::kFailedPrecondition);
  ASSERT_OK(cluster->SetEgressRate(0, "10mbit"));
  ASSERT_OK(cluster->ClearRates(0));

  EchoServer left = StartEchoServer(*cluster, 1, 0);
  ASSERT_FALSE(left.endpoint.empty());
  ASSERT_OK(cluster->Destroy());
  EXPECT_TRUE(NamespacesStartingWith(tag + "-").empty());
  EXPECT_EQ(left.process->WaitFor(kWaitNs).value_or(-1), 128 + SIGKILL);

  EXPECT_EQ(NetnsCluster::Create({.hosts = 3, .direct_pair = true}).status().code(),
            StatusCode::kInvalidArgument);
}

// A namespace for `pid` under `prefix` in CleanupStale's naming scheme.
std::string StaleName(const std::string& prefix, long pid, int counter, const std::string& role) {
  return prefix + "-" + std::to_string(pid) + "-" + std::to_string(counter) + "-" + role;
}

// A pid no process can have: pids stay below pid_max. (A pid merely unused
// now may be handed out before CleanupStale looks, pids wrap quickly.)
long ImpossiblePid() {
  long pid_max = 4194304;  // the kernel's limit, if pid_max cannot be read
  std::ifstream("/proc/sys/kernel/pid_max") >> pid_max;
  return pid_max;
}

TEST_F(NetnsClusterTest, CleanupStaleRemovesOnlyLeftoversOfDeadProcesses) {
  // A prefix of this test's own keeps other tests' cleanups away.
  const std::string prefix = "stale" + std::to_string(::getpid());
  const long dead = ImpossiblePid();
  ASSERT_FALSE(std::filesystem::exists("/proc/" + std::to_string(dead)));
  NamespaceGuard guard;
  const std::vector<std::string> stale = {
      StaleName(prefix, dead, 0, "h0"), StaleName(prefix, dead, 0, "sw"),
      // This pid, but no live cluster of this process: a recycled pid.
      StaleName(prefix, ::getpid(), 999, "h1")};
  const std::vector<std::string> kept = {StaleName(prefix, 1, 0, "h0"),  // its pid is alive
                                         prefix + "-junk",               // not in the naming scheme
                                         StaleName(prefix + "x", dead, 0, "h0"),  // another prefix
                                         StaleName(prefix, dead, 0, "eth0")};  // not a cluster role
  for (const std::string& name : stale) ASSERT_OK(AddNamespace(guard, name)) << name;
  for (const std::string& name : kept) ASSERT_OK(AddNamespace(guard, name)) << name;
  // A process still inside a leftover is killed, so the namespace really goes.
  SubprocessOptions inside;
  inside.netns = stale[0];
  Result<std::unique_ptr<Subprocess>> squatter =
      Subprocess::Start({"tail", "-f", "/dev/null"}, inside);
  ASSERT_TRUE(squatter.ok()) << squatter.status();

  ASSERT_OK(NetnsCluster::CleanupStale(prefix));
  for (const std::string& name : stale) {
    EXPECT_FALSE(std::filesystem::exists("/var/run/netns/" + name)) << name;
  }
  for (const std::string& name : kept) {
    EXPECT_TRUE(std::filesystem::exists("/var/run/netns/" + name)) << name;
  }
  EXPECT_EQ((*squatter)->WaitFor(kWaitNs).value_or(-1), 128 + SIGKILL);
}

TEST_F(NetnsClusterTest, CleanupStaleRemovesTheClusterOfACrashedProcess) {
  const std::string prefix = "crash" + std::to_string(::getpid());
  NamespaceGuard guard;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Builds a cluster and dies without destroying it, as a crash would.
    Result<std::unique_ptr<NetnsCluster>> cluster = NetnsCluster::Create({.prefix = prefix});
    ::_exit(cluster.ok() ? (cluster->release(), 0) : 1);
  }
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, child, 0));
  ASSERT_GE(pidfd, 0);
  pollfd p{.fd = pidfd, .events = POLLIN, .revents = 0};
  const bool exited = ::poll(&p, 1, static_cast<int>(kWaitNs / kNsPerMs)) == 1;
  ::close(pidfd);
  if (!exited) ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  const std::string leaked_start = prefix + "-" + std::to_string(child) + "-";
  for (const std::string& name : NamespacesStartingWith(leaked_start)) guard.Add(name);
  ASSERT_TRUE(exited);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_EQ(NamespacesStartingWith(leaked_start).size(), 3u) << "the crash leaked its cluster";

  // The next Create under the prefix cleans up first; call it directly here.
  ASSERT_OK(NetnsCluster::CleanupStale(prefix));
  EXPECT_TRUE(NamespacesStartingWith(leaked_start).empty());
}

}  // namespace
}  // namespace wharf::netns
