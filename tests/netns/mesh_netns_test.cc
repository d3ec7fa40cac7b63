// The mesh prober across four hosts (network namespaces on a bridge), each
// a real wharfd process probing the other three over homa://: one host's
// link made lossy (nftables drops 30% of the UDP it receives), another's
// slowed: tc tbf at 2 Mbit/s both ways with a 15 ms queue, which background
// UDP floods (iperf3, 3 Mbit/s each way) keep full, so that whatever
// crosses it waits tens of milliseconds (this kernel has no netem to add a
// fixed delay; a congested link is what a slow pair is in practice). The
// API and /metrics of every daemon must show the loss and the delay on
// exactly the pairs that cross those links, and on no other. And a probe
// class's priority decides the queue its packets take at a strict-priority
// port.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "mesh/http_client.h"
#include "netns/netns_cluster.h"
#include "netns/netns_process.h"
#include "netns/status_testing.h"
#include "netns/thread_netns.h"

namespace wharf::netns {
namespace {

constexpr int kHosts = 4;  // running wharfd; one more host ends the floods
constexpr int kLossy = 3;  // receives with 30% UDP loss
constexpr int kSlow = 2;   // its link congested both ways
constexpr int kFloodPeer = kHosts;  // the other end of the floods, not probed

std::string HostName(int i) { return "h" + std::to_string(i); }

// GET http://<address>:4002<path> from inside host `host`'s namespace.
Result<std::string> Fetch(const NetnsCluster& cluster, int host, const std::string& path) {
  Result<std::string> out = InternalError("not run");
  std::thread t([&] {
    Result<std::unique_ptr<ThreadNetns>> inside = ThreadNetns::Enter(cluster.namespace_name(host));
    if (!inside.ok()) {
      out = inside.status();
      return;
    }
    out = mesh::HttpGet("http://" + cluster.address(host) + ":4002", path, 5 * kNsPerSec);
  });
  t.join();
  return out;
}

class MeshNetnsTest : public testing::Test {
 protected:
  void SetUp() override {
    if (Status supported = NetnsCluster::CheckSupported(); !supported.ok()) {
      GTEST_SKIP() << "needs root and network namespaces: " << supported;
    }
    ClusterOptions options;
    options.hosts = kHosts + 1;
    options.prefix = "wharfmesh";
    Result<std::unique_ptr<NetnsCluster>> cluster = NetnsCluster::Create(options);
    ASSERT_OK(cluster.status());
    cluster_ = std::move(*cluster);
    char dir[] = "/tmp/wharf-mesh-netns-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override {
    daemons_.clear();
    floods_.clear();
    cluster_.reset();
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }

  // Writes the pinglist (atomically: the daemons may be reading it): the
  // four hosts, and a full mesh among them unless `probing` is false.
  std::string WritePinglist(bool probing) {
    std::string hosts;
    for (int i = 0; i < kHosts; ++i) {
      hosts += std::string(i == 0 ? "" : ", ") + "{name: " + HostName(i) +
               ", address: " + cluster_->address(i) + "}";
    }
    // Probes every 50 ms, lost after 300 ms: below homa's first resend
    // (400 ms: resend_ticks below), so a dropped packet is a lost probe
    // rather than a late one, and well above the slow link's full queues
    // (twice 15 ms) and the stalls of a 2-CPU machine running four daemons
    // and the floods (tens of milliseconds seen).
    const std::string path = dir_ + "/pinglist.yaml";
    std::ofstream(path + ".new") << "version: " << (probing ? "mesh" : "hosts-only") << "\n"
                                 << "defaults: {interval: 50ms, timeout: 300ms, size: 200, "
                                    "transports: [homa]}\n"
                                 << "groups:\n  all: [" << hosts << "]\n"
                                 << (probing ? "mesh:\n  - group: all\n" : "");
    std::filesystem::rename(path + ".new", path);
    return path;
  }

  // Starts wharfd on host `i` with `pinglist` (homa:// on :4000, HTTP on
  // :4002, no tcp://, homa's first resend after 400 ms: below).
  Status StartDaemon(int i, const std::string& pinglist) {
    Result<std::unique_ptr<NetnsProcess>> d = NetnsProcess::Spawn(
        *cluster_, i,
        {WHARF_WHARFD, "--socket", dir_ + "/" + HostName(i) + ".sock", "--log-level", "warn",
         "--set", "listen.homa=" + cluster_->address(i) + ":4000", "--set", "listen.tcp=",
         "--set", "http.listen=" + cluster_->address(i) + ":4002", "--set",
         "mesh.pinglist=" + pinglist, "--set", "homa.resend_ticks=400"});
    if (!d.ok()) return d.status();
    daemons_.push_back(std::move(*d));
    return OkStatus();
  }
  // Waits up to 10 s for host `i`'s wharfd to serve HTTP.
  Status WaitForHttp(int i) {
    const TimeNs up_by = SystemClock::Get().NowNs() + 10 * kNsPerSec;
    while (!Fetch(*cluster_, i, "/api/v1/pinglist").ok()) {
      if (SystemClock::Get().NowNs() >= up_by) {
        return DeadlineExceededError(HostName(i) + " does not serve HTTP");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return OkStatus();
  }

  std::unique_ptr<NetnsCluster> cluster_;
  std::string dir_;
  std::vector<std::unique_ptr<NetnsProcess>> daemons_;
  std::vector<std::unique_ptr<NetnsProcess>> floods_;
};

TEST_F(MeshNetnsTest, LossAndDelayShowOnExactlyThePairsThatCrossTheBadLinks) {
  // The daemons start with the hosts but no probing, so that none probes
  // one that has not started yet (a refused probe is a failure).
  const std::string pinglist = WritePinglist(false);
  ASSERT_OK(cluster_->SetLoss(kLossy, 30));
  const TbfOptions slow{.burst = "4kb", .latency = "15ms"};
  ASSERT_OK(cluster_->SetEgressRate(kSlow, "2mbit", slow));
  ASSERT_OK(cluster_->SetIngressRate(kSlow, "2mbit", slow));
  // The floods: iperf3 servers on both ends, a UDP client each way.
  for (int h : {kSlow, kFloodPeer}) {
    Result<std::unique_ptr<NetnsProcess>> server =
        NetnsProcess::Spawn(*cluster_, h, {"iperf3", "-s", "-p", "5201"});
    ASSERT_OK(server.status());
    floods_.push_back(std::move(*server));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the servers listen
  for (auto [from, to] : {std::pair{kSlow, kFloodPeer}, std::pair{kFloodPeer, kSlow}}) {
    Result<std::unique_ptr<NetnsProcess>> client = NetnsProcess::Spawn(
        *cluster_, from,
        {"iperf3", "-c", cluster_->address(to), "-p", "5201", "-u", "-b", "3M", "-l", "1000",
         "-t", "60"});
    ASSERT_OK(client.status());
    floods_.push_back(std::move(*client));
  }
  for (int i = 0; i < kHosts; ++i) ASSERT_OK(StartDaemon(i, pinglist));
  for (int i = 0; i < kHosts; ++i) ASSERT_OK(WaitForHttp(i));
  // Now the mesh: each daemon sees the file change within a second.
  WritePinglist(true);
  // Each daemon's 10 s window, once every pair has 80 probes behind it.
  std::map<std::pair<std::string, std::string>, nlohmann::json> cells;
  const TimeNs deadline = SystemClock::Get().NowNs() + 30 * kNsPerSec;
  for (bool enough = false; !enough && SystemClock::Get().NowNs() < deadline;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    cells.clear();
    enough = true;
    for (int i = 0; i < kHosts; ++i) {
      Result<std::string> body = Fetch(*cluster_, i, "/api/v1/matrix?window=10s");
      if (!body.ok()) {
        enough = false;
        continue;
      }
      nlohmann::json m = nlohmann::json::parse(*body);
      for (const auto& c : m["cells"]) {
        cells[{c["from"], c["to"]}] = c;
        if (c["answered"].get<int>() + c["unanswered"].get<int>() < 80) enough = false;
      }
    }
    if (cells.size() < size_t{kHosts * (kHosts - 1)}) enough = false;
  }
  ASSERT_EQ(cells.size(), size_t{kHosts * (kHosts - 1)}) << "not every daemon answered";
  // p50 of the slowest pair that crosses no slow link, and of the fastest
  // that crosses it.
  std::pair<double, double> slowest_fast_or_fastest_slow{0, 1e18};
  for (int from = 0; from < kHosts; ++from) {
    for (int to = 0; to < kHosts; ++to) {
      if (from == to) continue;
      const nlohmann::json& c = cells[{HostName(from), HostName(to)}];
      SCOPED_TRACE(HostName(from) + " -> " + HostName(to) + ": " + c.dump());
      const bool lossy = from == kLossy || to == kLossy;
      const bool slow = from == kSlow || to == kSlow;
      ASSERT_EQ(c["state"], "ok");
      if (lossy) {
        // Each probe crosses the lossy link once (the request to it or the
        // answer back to it): about 30% unanswered, more where the slow
        // link's full queue drops too.
        EXPECT_GT(c["loss_ratio"].get<double>(), 0.1);
        if (!slow) {
          EXPECT_LT(c["loss_ratio"].get<double>(), 0.6);
        }
      } else if (!slow) {
        // A full queue also drops now and then: only the pairs that cross
        // neither link must lose nothing.
        EXPECT_EQ(c["unanswered"].get<int>(), 0);
      }
      if (slow) {
        // Each probe waits in the congested queue once or twice.
        EXPECT_GT(c["p50_us"].get<double>(), 10000);
        slowest_fast_or_fastest_slow.second =
            std::min(slowest_fast_or_fastest_slow.second, c["p50_us"].get<double>());
      } else {
        slowest_fast_or_fastest_slow.first =
            std::max(slowest_fast_or_fastest_slow.first, c["p50_us"].get<double>());
      }
    }
  }
  // Relative, so that a loaded machine (every wake-up late) still tells
  // them apart: every pair across the slow link is slower than any other.
  EXPECT_LT(slowest_fast_or_fastest_slow.first * 1.5, slowest_fast_or_fastest_slow.second)
      << "the slowest pair off the slow link against the fastest across it, p50 us";
  // /metrics says the same: host 0 lost probes to the lossy host, none to
  // host 1.
  Result<std::string> metrics = Fetch(*cluster_, 0, "/metrics");
  ASSERT_OK(metrics.status());
  auto counter = [&](const std::string& target) {
    const std::string key = "wharf_mesh_probes_lost_total{source=\"h0\",target=\"" + target +
                            "\",transport=\"homa\"} ";
    const size_t at = metrics->find(key);
    EXPECT_NE(at, std::string::npos) << key;
    return at == std::string::npos ? -1 : std::stoll(metrics->substr(at + key.size()));
  };
  EXPECT_GT(counter(HostName(kLossy)), 0);
  EXPECT_EQ(counter(HostName(1)), 0);
}

// A probe class's priority is the queue its packets take: h0 probes h1 at
// priority 7 and h2 at priority 0, and the switch port into h0 is a
// strict-priority bottleneck (queues by DSCP class selector) that an
// unmarked UDP flood from h3 keeps full. The answers come back at their
// probe's priority (the responder answers in the probe's class), so h2's
// wait behind the flood in the lowest queue while h1's pass it.
TEST_F(MeshNetnsTest, AProbeClassesPriorityIsTheQueueItsPacketsTake) {
  constexpr int kProber = 0, kHigh = 1, kLow = 2, kFlooder = 3;
  auto group = [&](int host) {
    return "[{name: " + HostName(host) + ", address: " + cluster_->address(host) + "}]";
  };
  const std::string pinglist = dir_ + "/pinglist.yaml";
  // Probes every 20 ms, lost after 300 ms, homa's first resend later (as
  // above): the low class's answers wait about the queue's 20 ms.
  std::ofstream(pinglist) << "version: classes\n"
                          << "defaults: {interval: 20ms, timeout: 300ms, size: 200, "
                             "transports: [homa]}\n"
                          << "groups:\n  prober: " << group(kProber) << "\n  high: "
                          << group(kHigh) << "\n  low: " << group(kLow) << "\n"
                          << "arrows:\n"
                          << "  - {from: prober, to: high, priority: 7}\n"
                          << "  - {from: prober, to: low, priority: 0}\n";
  const TbfOptions queues{.burst = "16kb", .latency = "20ms", .priority_levels = 8};
  ASSERT_OK(cluster_->SetIngressRate(kProber, "10mbit", queues));
  Result<std::unique_ptr<NetnsProcess>> server =
      NetnsProcess::Spawn(*cluster_, kProber, {"iperf3", "-s", "-p", "5201"});
  ASSERT_OK(server.status());
  floods_.push_back(std::move(*server));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the server listens
  Result<std::unique_ptr<NetnsProcess>> flood = NetnsProcess::Spawn(
      *cluster_, kFlooder,
      {"iperf3", "-c", cluster_->address(kProber), "-p", "5201", "-u", "-b", "15M", "-l",
       "1000", "-t", "60"});
  ASSERT_OK(flood.status());
  floods_.push_back(std::move(*flood));
  // The responders first, so that no probe finds a host not started yet.
  for (int i : {kHigh, kLow, kProber}) {
    ASSERT_OK(StartDaemon(i, pinglist));
    ASSERT_OK(WaitForHttp(i));
  }
  // The 10 s window of both targets, once each has 100 probes behind it.
  std::map<std::string, nlohmann::json> targets;
  std::string last;  // the last answer, for the failure message
  const TimeNs deadline = SystemClock::Get().NowNs() + 30 * kNsPerSec;
  for (bool enough = false; !enough && SystemClock::Get().NowNs() < deadline;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    Result<std::string> body = Fetch(*cluster_, kProber, "/api/v1/targets");
    last = body.ok() ? *body : body.status().ToString();
    if (!body.ok()) continue;
    targets.clear();
    const nlohmann::json doc = nlohmann::json::parse(*body);
    for (const auto& t : doc["targets"]) targets[t["host"].get<std::string>()] = t;
    enough = targets.size() == 2;
    for (const auto& [host, t] : targets) {
      const nlohmann::json& w = t["windows"]["10s"];
      if (w["answered"].get<int>() + w["unanswered"].get<int>() < 100) enough = false;
    }
  }
  ASSERT_EQ(targets.size(), 2u) << last;
  const nlohmann::json& high = targets[HostName(kHigh)];
  const nlohmann::json& low = targets[HostName(kLow)];
  SCOPED_TRACE("high: " + high.dump() + "\nlow: " + low.dump() + "\n" +
               cluster_->DescribeFiltering(kProber));
  EXPECT_EQ(high["priority"], 7);
  EXPECT_EQ(high["dscp"], 56);  // CS7
  EXPECT_EQ(low["priority"], 0);
  EXPECT_EQ(low["dscp"], 0);
  const double high_p50 = high["windows"]["10s"]["rtt"]["p50_us"].get<double>();
  const double low_p50 = low["windows"]["10s"]["rtt"]["p50_us"].get<double>();
  // The low class waits in the full queue (about its 20 ms); the high one
  // at most behind the frame on the wire, and the machine's own stalls.
  EXPECT_GT(low_p50, 10'000);
  EXPECT_LT(high_p50 * 3, low_p50);
  EXPECT_EQ(high["windows"]["10s"]["unanswered"].get<int>(), 0);
}

}  // namespace
}  // namespace wharf::netns
