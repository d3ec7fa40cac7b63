// MeshService inside real daemons: two wharfds on loopback probe each other
// over homa:// and tcp:// through their own endpoints, the snapshots show
// it, and the pinglist is reloaded on request, kept when the new file is
// bad.
#include "mesh/mesh_service.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <stdlib.h>
#include <sys/socket.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "daemon/wharfd.h"
#include "base/unique_fd.h"
#include "mesh/api_json.h"
#include "mesh/http_client.h"
#include "mesh/mesh_http.h"
#include "mesh/metrics_exporter.h"
#include "mesh/testing/promtool.h"
#include "wharf/endpoint.h"

namespace wharf::mesh {
namespace {

// A wharfd on a thread, with a mesh service, on 127.0.0.1 (any ports).
class MeshDaemon {
 public:
  MeshDaemon(const std::string& dir, const std::string& name) : name_(name) {
    std::vector<std::pair<std::string, std::string>> settings = {
        {"daemon.socket", dir + "/" + name + ".sock"},
        {"listen.homa", "127.0.0.1:0"},
        {"listen.tcp", "127.0.0.1:0"},
        // As a wharfd given mesh.pinglist has it (daemon_config.cc).
        {"udp.rx_timestamps", "true"},
        {"udp.tx_timestamps", "true"}};
    Result<daemon::DaemonConfig> config = daemon::LoadDaemonConfig("", settings);
    EXPECT_TRUE(config.ok()) << config.status();
    Result<std::unique_ptr<daemon::Daemon>> d = daemon::Daemon::Start(std::move(*config));
    EXPECT_TRUE(d.ok()) << d.status();
    daemon_ = std::move(*d);
  }
  ~MeshDaemon() { Stop(); }

  // Adds the mesh service reading `pinglist` and runs the loop.
  Status Run(const std::string& pinglist) {
    daemon::MeshSettings settings;
    settings.pinglist = pinglist;
    settings.name = name_;
    settings.http_listen = "";
    settings.reload_check_ns = 100 * kNsPerMs;
    WHARF_ASSIGN_OR_RETURN(std::unique_ptr<MeshService> service,
                           MeshService::Create(settings, SystemClock::Get(), 1000 + name_[0]));
    service_ = service.get();
    WHARF_RETURN_IF_ERROR(daemon_->AddService(std::move(service)));
    thread_ = std::thread([this] { (void)daemon_->Run(); });
    return OkStatus();
  }
  void Stop() {
    if (daemon_ == nullptr) return;
    daemon_->Stop();
    if (thread_.joinable()) thread_.join();
    daemon_.reset();
  }
  MeshService& service() { return *service_; }
  uint16_t homa_port() { return daemon_->OwnAddress("homa").port(); }
  uint16_t tcp_port() { return daemon_->OwnAddress("tcp").port(); }
  daemon::Daemon& daemon() { return *daemon_; }
  // An application attached to this wharfd (managed mode).
  Result<std::unique_ptr<Endpoint>> Attach(const std::string& address) {
    return Endpoint::Open({.address = address,
                           .hosting = Hosting::kManaged,
                           .daemon_socket = daemon_->socket_path()});
  }
  std::shared_ptr<const MeshSnapshot> Snapshot() {
    return service_->board().Get(SystemClock::Get().NowNs(), 0, std::chrono::seconds(5));
  }
  // Polls snapshots until `done` holds or 10 s pass.
  template <typename Done>
  std::shared_ptr<const MeshSnapshot> WaitFor(Done done) {
    const TimeNs end = SystemClock::Get().NowNs() + 10 * kNsPerSec;
    std::shared_ptr<const MeshSnapshot> s;
    while (SystemClock::Get().NowNs() < end) {
      s = Snapshot();
      if (s != nullptr && done(*s)) return s;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return s;
  }

 private:
  std::string name_;
  std::unique_ptr<daemon::Daemon> daemon_;
  MeshService* service_ = nullptr;
  std::thread thread_;
};

class MeshServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/wharf-mesh-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
    a_ = std::make_unique<MeshDaemon>(dir_, "a");
    b_ = std::make_unique<MeshDaemon>(dir_, "b");
  }
  void TearDown() override {
    a_.reset();
    b_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string Host(const std::string& name, MeshDaemon& d) {
    return "{name: " + name + ", address: 127.0.0.1, homa_port: " + std::to_string(d.homa_port()) +
           ", tcp_port: " + std::to_string(d.tcp_port()) + "}";
  }
  void WritePinglist(const std::string& body) {
    const std::string tmp = pinglist_ + ".new";
    std::ofstream(tmp) << body;
    std::filesystem::rename(tmp, pinglist_);
  }
  std::string List(const std::string& version, const std::string& transports) {
    return "version: \"" + version + "\"\ndefaults: {interval: 20ms, timeout: 500ms, transports: " +
           transports + "}\ngroups:\n  g: [" + Host("a", *a_) + ", " + Host("b", *b_) +
           "]\nmesh:\n  - group: g\n";
  }

  std::string dir_;
  std::string pinglist_ = "";
  std::unique_ptr<MeshDaemon> a_;
  std::unique_ptr<MeshDaemon> b_;
};

size_t Answered(const MeshSnapshot& s, std::string_view transport) {
  for (const TargetSnapshot& t : s.targets) {
    if (t.transport == transport) return t.counters.answered;
  }
  return 0;
}

TEST_F(MeshServiceTest, TwoDaemonsProbeEachOtherOverHomaAndTcp) {
  pinglist_ = dir_ + "/pinglist.yaml";
  WritePinglist(List("one", "[homa, tcp]"));
  ASSERT_TRUE(a_->Run(pinglist_).ok());
  ASSERT_TRUE(b_->Run(pinglist_).ok());
  std::shared_ptr<const MeshSnapshot> s = a_->WaitFor([](const MeshSnapshot& s) {
    return Answered(s, "homa") >= 20 && Answered(s, "tcp") >= 20;
  });
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->pinglist.self, "a");
  EXPECT_EQ(s->pinglist.version, "one");
  ASSERT_EQ(s->targets.size(), 2u);
  for (const TargetSnapshot& t : s->targets) {
    SCOPED_TRACE(t.transport);
    EXPECT_EQ(t.host, "b");
    EXPECT_GE(t.counters.answered, 20u);
    EXPECT_EQ(t.counters.lost + t.counters.failed, 0u);
    const WindowSummary& rtt = t.rtt[static_cast<size_t>(Window::k10s)];
    const WindowSummary& net = t.network[static_cast<size_t>(Window::k10s)];
    EXPECT_EQ(t.state[static_cast<size_t>(Window::k10s)], SeriesState::kOk);
    EXPECT_GT(rtt.p50_ns, 0u);
    EXPECT_LT(rtt.p50_ns, 100 * kNsPerMs);
    EXPECT_LE(net.p50_ns, rtt.p50_ns);
    EXPECT_GT(t.rtt_buckets.count, 0u);
    // homa:// answers are timed by the kernel's receive stamp; tcp:// has none.
    if (t.transport == "homa") {
      EXPECT_EQ(t.counters.kernel_stamped, t.counters.answered);
      EXPECT_EQ(t.counters.kernel_send_stamped, t.counters.answered);
    } else {
      EXPECT_EQ(t.counters.kernel_stamped, 0u);
      EXPECT_EQ(t.counters.kernel_send_stamped, 0u);
    }
  }
  nlohmann::json targets = nlohmann::json::parse(RenderTargetsJson(*s));
  for (const auto& t : targets["targets"]) {
    EXPECT_EQ(t["timestamps"]["receive"], t["transport"] == "homa" ? "kernel" : "monotonic") << t;
    EXPECT_EQ(t["timestamps"]["send"], t["transport"] == "homa" ? "kernel" : "monotonic") << t;
    // The class's priority 7 is CS7: on homa:// packets, and on the tcp:// connection.
    EXPECT_EQ(t["priority"], 7) << t;
    EXPECT_EQ(t["dscp"], 56) << t;  // CS7 over homa:// (per message) and tcp:// (per connection)
  }
  // b answered a's probes (and a b's).
  EXPECT_GT(s->probes_answered, 0u);
  Result<std::string> metrics = RenderMetrics(*s);
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_NE(metrics->find("wharf_mesh_probe_rtt_seconds_bucket{source=\"a\",target=\"b\",transport=\"homa\""),
            std::string::npos);
  nlohmann::json matrix = nlohmann::json::parse(RenderMatrixJson(*s, Window::k10s));
  ASSERT_EQ(matrix["cells"].size(), 2u);
  EXPECT_EQ(matrix["cells"][0]["state"], "ok");
  EXPECT_EQ(matrix["hosts"], nlohmann::json::array({"a", "b"}));
}

// Passive measurement: an application on a calls one on b through the
// daemons; a's mesh shows those round trips beside its probes to b, as
// the target's "passive" figures, on /api/v1/peers and on /metrics.
TEST_F(MeshServiceTest, TheApplicationsOwnCallsShowBesideTheProbes) {
  pinglist_ = dir_ + "/pinglist.yaml";
  WritePinglist(List("one", "[homa]"));
  ASSERT_TRUE(a_->Run(pinglist_).ok());
  ASSERT_TRUE(b_->Run(pinglist_).ok());
  Result<std::unique_ptr<Endpoint>> server = b_->Attach("homa://127.0.0.1:0/echo");
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE((*server)->Serve(7, [](const RpcContext&, Buffer req) -> Result<Buffer> {
                        return req;
                      }).ok());
  std::atomic<bool> stop{false};
  std::thread serving([&] {
    while (!stop) (void)(*server)->Run(std::chrono::milliseconds(20));
  });
  // More applications on a than one pass takes from
  // (MeshService::kPassiveSessionsPerPass): the take goes round in passes.
  std::vector<std::unique_ptr<Endpoint>> idle;
  for (size_t i = 0; i <= MeshService::kPassiveSessionsPerPass; ++i) {
    Result<std::unique_ptr<Endpoint>> e = a_->Attach("homa://127.0.0.1:0");
    ASSERT_TRUE(e.ok()) << e.status();
    idle.push_back(std::move(*e));
  }
  Result<std::unique_ptr<Endpoint>> client = a_->Attach("homa://127.0.0.1:0");
  ASSERT_TRUE(client.ok()) << client.status();
  // 45 calls from the client, which leaves before the take, and 5 from the
  // last idle application, which stays: the take reaches it only in its
  // round's second pass.
  constexpr int kCalls = 50;
  constexpr int kStayingCalls = 5;
  for (int i = 0; i < kStayingCalls; ++i) {
    Result<Buffer> answer = idle.back()->Call((*server)->address(), 7, Buffer::Copy("q"),
                                              {.deadline = std::chrono::seconds(5)});
    ASSERT_TRUE(answer.ok()) << answer.status();
  }
  for (int i = 0; i < kCalls - kStayingCalls; ++i) {
    Result<Buffer> answer = (*client)->Call((*server)->address(), 7, Buffer::Copy("q"),
                                            {.deadline = std::chrono::seconds(5)});
    ASSERT_TRUE(answer.ok()) << answer.status();
  }
  // One call to a peer that is not in the pinglist and never answers.
  Result<Buffer> lost = (*client)->Call("homa://127.0.0.1:9/none", 7, Buffer::Copy("q"),
                                        {.deadline = std::chrono::milliseconds(50)});
  EXPECT_FALSE(lost.ok());
  // The client leaves at once, as `wharf ping` does, before a's mesh took
  // its last second: wharfd keeps it for the next take.
  client->reset();
  std::shared_ptr<const MeshSnapshot> s = a_->WaitFor([](const MeshSnapshot& s) {
    return s.targets.size() == 1 && s.targets[0].passive >= 0 &&
           s.peers[static_cast<size_t>(s.targets[0].passive)].round_trips >= kCalls &&
           s.peers.size() == 2;
  });
  stop = true;
  serving.join();
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->targets.size(), 1u);
  ASSERT_GE(s->targets[0].passive, 0) << "no passive figures for b";
  const PassiveSnapshot& b = s->peers[static_cast<size_t>(s->targets[0].passive)];
  EXPECT_EQ(b.host, "b");
  EXPECT_EQ(b.transport, "homa");
  EXPECT_EQ(b.peer, "127.0.0.1:" + std::to_string(b_->homa_port()));
  EXPECT_EQ(b.round_trips, uint64_t{kCalls});  // the probes are not in it
  EXPECT_EQ(b.failures, 0u);
  const WindowSummary& w = b.rtt[static_cast<size_t>(Window::k1m)];
  EXPECT_EQ(b.state[static_cast<size_t>(Window::k1m)], SeriesState::kOk);
  EXPECT_EQ(w.answered, uint64_t{kCalls});
  EXPECT_GT(w.p50_ns, 0u);
  EXPECT_LT(w.p50_ns, 100 * kNsPerMs);

  nlohmann::json targets = nlohmann::json::parse(RenderTargetsJson(*s));
  EXPECT_EQ(targets["targets"][0]["passive"]["round_trips"], kCalls);
  EXPECT_EQ(targets["targets"][0]["passive"]["windows"]["1m"]["state"], "ok");
  nlohmann::json peers = nlohmann::json::parse(RenderPeersJson(*s));
  ASSERT_EQ(peers["peers"].size(), 2u);
  bool saw_unknown = false;
  for (const auto& p : peers["peers"]) {
    if (p["peer"] != "127.0.0.1:9") continue;
    saw_unknown = true;
    EXPECT_TRUE(p["host"].is_null());
    EXPECT_EQ(p["failures"], 1);
    EXPECT_EQ(p["windows"]["10s"]["state"], "all_failed");
  }
  EXPECT_TRUE(saw_unknown) << peers.dump();
  nlohmann::json matrix = nlohmann::json::parse(RenderMatrixJson(*s, Window::k1m));
  EXPECT_EQ(matrix["cells"][0]["app_answered"], kCalls);
  EXPECT_TRUE(matrix["cells"][0]["app_p99_us"].is_number());
  Result<std::string> metrics = RenderMetrics(*s);
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  const std::string count = "wharf_mesh_app_rtt_seconds_count{source=\"a\",peer=\"" + b.peer +
                            "\",target=\"b\",transport=\"homa\"} " + std::to_string(kCalls);
  EXPECT_NE(metrics->find(count), std::string::npos) << *metrics;
  // What wharfd serves on /metrics, probes, peers and daemon together.
  testing::ExpectPromtoolSilent(*metrics);
}

TEST_F(MeshServiceTest, AChangedPinglistIsReloadedAndABadOneKeepsTheListInUse) {
  pinglist_ = dir_ + "/pinglist.yaml";
  WritePinglist(List("one", "[homa, tcp]"));
  ASSERT_TRUE(a_->Run(pinglist_).ok());
  ASSERT_TRUE(b_->Run(pinglist_).ok());
  ASSERT_NE(a_->WaitFor([](const MeshSnapshot& s) { return Answered(s, "homa") > 0; }), nullptr);
  // Version two probes over homa only: picked up by the file check.
  WritePinglist(List("two", "[homa]"));
  std::shared_ptr<const MeshSnapshot> s =
      a_->WaitFor([](const MeshSnapshot& s) { return s.pinglist.version == "two"; });
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->pinglist.version, "two");
  ASSERT_EQ(s->targets.size(), 1u);
  EXPECT_EQ(s->targets[0].transport, "homa");
  // The homa target kept its series across the reload.
  EXPECT_GT(s->targets[0].counters.sent, 0u);
  // A broken file: the error is shown, version two stays in use.
  WritePinglist("groups: {g: [not-an-address]}\nmesh: [{group: g}]\n");
  s = a_->WaitFor([](const MeshSnapshot& s) { return !s.pinglist.error.empty(); });
  ASSERT_NE(s, nullptr);
  EXPECT_NE(s->pinglist.error.find("pinglist.yaml"), std::string::npos) << s->pinglist.error;
  EXPECT_EQ(s->pinglist.version, "two");
  EXPECT_EQ(s->targets.size(), 1u);
  EXPECT_GE(s->pinglist.load_failures, 1u);
  // SIGHUP's path: a reload on request, even of an unchanged file.
  const uint64_t loads = s->pinglist.loads;
  a_->daemon().RequestReload();
  s = a_->WaitFor([loads](const MeshSnapshot& s) { return s.pinglist.loads > loads; });
  ASSERT_NE(s, nullptr);
  EXPECT_GT(s->pinglist.loads, loads);
}

TEST_F(MeshServiceTest, APinglistWithoutThisHostStopsTheStart) {
  pinglist_ = dir_ + "/pinglist.yaml";
  WritePinglist("groups: {g: [{name: x, address: 127.0.0.1, homa_port: 1}]}\nmesh: [{group: g}]\n");
  Status s = a_->Run(pinglist_);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("mesh.pinglist"), std::string::npos) << s;
}

TEST_F(MeshServiceTest, AnUnreachablePeerShowsAsFailedNotAsNoData) {
  pinglist_ = dir_ + "/pinglist.yaml";
  WritePinglist(List("one", "[homa]"));
  ASSERT_TRUE(a_->Run(pinglist_).ok());
  // b never runs its loop: its socket exists but nobody answers.
  b_->Stop();
  std::shared_ptr<const MeshSnapshot> s = a_->WaitFor([](const MeshSnapshot& s) {
    return !s.targets.empty() &&
           s.targets[0].state[static_cast<size_t>(Window::k10s)] == SeriesState::kAllFailed;
  });
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->targets.size(), 1u);
  EXPECT_EQ(s->targets[0].state[static_cast<size_t>(Window::k10s)], SeriesState::kAllFailed);
  EXPECT_EQ(s->targets[0].counters.answered, 0u);
  EXPECT_GT(s->targets[0].counters.lost + s->targets[0].counters.failed, 0u);
}

// A thousand HTTP connections that never send a request: the pages stay
// bounded (the server closes the idlest to make room) and the probing on
// the daemon's loop goes on as before.
TEST_F(MeshServiceTest, AThousandIdleHttpConnectionsLeaveProbingAndPagesAlone) {
  pinglist_ = dir_ + "/pinglist.yaml";
  WritePinglist(List("one", "[homa]"));
  ASSERT_TRUE(a_->Run(pinglist_).ok());
  ASSERT_TRUE(b_->Run(pinglist_).ok());
  Result<std::unique_ptr<MeshHttp>> http =
      MeshHttp::Start("127.0.0.1:0", &a_->service().board(), SystemClock::Get());
  ASSERT_TRUE(http.ok()) << http.status();
  const std::string url = "http://" + (*http)->address().ToString();
  ASSERT_NE(a_->WaitFor([](const MeshSnapshot& s) { return Answered(s, "homa") > 0; }), nullptr);

  std::vector<UniqueFd> idle;
  sockaddr_storage to{};
  const auto len = static_cast<socklen_t>((*http)->address().ToSockaddr(&to));
  for (int i = 0; i < 1000; ++i) {
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    ASSERT_TRUE(fd.valid());
    // The backlog may refuse some; those that connect just sit there.
    (void)::connect(fd.get(), reinterpret_cast<const sockaddr*>(&to), len);
    idle.push_back(std::move(fd));
  }
  const uint64_t before = a_->Snapshot()->targets[0].counters.answered;
  std::shared_ptr<const MeshSnapshot> s = a_->WaitFor([before](const MeshSnapshot& s) {
    return s.targets[0].counters.answered >= before + 25;  // half a second of probes
  });
  ASSERT_NE(s, nullptr);
  EXPECT_GE(s->targets[0].counters.answered, before + 25) << "probing stalled";
  EXPECT_EQ(s->targets[0].counters.lost + s->targets[0].counters.failed, 0u);
  Result<std::string> metrics = HttpGet(url, "/metrics", 5 * kNsPerSec);
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_NE(metrics->find("wharf_mesh_probes_answered_total"), std::string::npos);
  const HttpServerCounters c = (*http)->counters();
  EXPECT_LE(c.open_connections, 64u);
  EXPECT_GT(c.rejected_connections, 0u);
}

}  // namespace
}  // namespace wharf::mesh
