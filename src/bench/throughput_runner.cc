// `wharf bench throughput`: the paths, the series' daemons and nodes, the
// iperf3 stream; the rows come from the throughput phase.
#include "bench/throughput_runner.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string_view>
#include <thread>

#include "netns/netns_cluster.h"
#include "bench/bench_daemon.h"
#include "bench/bench_hosts.h"
#include "bench/cluster_check.h"
#include "bench/cluster_runner.h"
#include "bench/cross_cpu_probe.h"
#include "bench/sockets.h"
#include "bench/switch_probe.h"
#include "bench/throughput_rounds.h"

namespace wharf::bench {
namespace {

constexpr int kClient = 0;
constexpr int kServer = 1;
constexpr const char* kClientLoopback = "127.0.0.1";
constexpr const char* kServerLoopback = "127.0.0.2";
constexpr uint16_t kIperf3VethPort = 5201;  // the namespaces are fresh
constexpr DurationNs kDaemonStartNs = 10 * kNsPerSec;
// A wharfd keeps a departed application's endpoints for AppSession::kLinger
// (200 ms); the next server node opening the same named endpoint waits this
// long (as cluster_runner.cc).
constexpr DurationNs kDaemonReleaseNs = 500 * kNsPerMs;

constexpr std::string_view kWorkPrefix = "wharf-bench-tput-";

// Removes the work directories of earlier runs whose process is gone (a
// signal ends a run without its destructors): "wharf-bench-tput-<pid>-...".
void SweepStaleWorkDirs() {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/tmp", ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(kWorkPrefix)) continue;
    const long pid = std::strtol(name.c_str() + kWorkPrefix.size(), nullptr, 10);
    if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      std::filesystem::remove_all(entry.path(), ec);
    }
  }
}

// A temporary directory removed on every path out (daemon sockets).
class TempDir {
 public:
  static Result<TempDir> Make() {
    SweepStaleWorkDirs();
    std::string pattern =
        "/tmp/" + std::string(kWorkPrefix) + std::to_string(::getpid()) + "-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) return ErrnoToStatus(errno, "mkdtemp");
    return TempDir(pattern);
  }
  TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  TempDir& operator=(TempDir&&) = delete;
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

class PathRunner {
 public:
  PathRunner(const ThroughputRunConfig& c, const Clock& clock, BenchHosts hosts,
             ThroughputPathResult& out, std::string work_dir)
      : c_(c), clock_(clock), hosts_(std::move(hosts)), out_(out), work_(std::move(work_dir)) {}

  // Every series, then iperf3, once per round; with several rounds the
  // path's rows are then their medians.
  void Run() {
    const int rounds = std::max(1, c_.plan.rounds);
    if (rounds == 1) {
      ProbeCrossCpu();
      ProbeSwitch();
      RunRound(&out_);
      ProbeCrossCpu();
      return;
    }
    for (int i = 1; i <= rounds; ++i) {
      round_prefix_ = "round " + std::to_string(i) + "/" + std::to_string(rounds) + ": ";
      ThroughputPathResult round{.path = out_.path, .description = out_.description};
      ProbeCrossCpu();
      ProbeSwitch();
      RunRound(&round);
      ProbeCrossCpu();
      out_.rounds.push_back(std::move(round));
    }
    MergeRounds(out_);
  }

 private:
  // Results go to *round (out_ itself with one round).
  void RunRound(ThroughputPathResult* round) {
    round_ = round;
    for (const ThroughputSeriesSpec& s : c_.plan.series) {
      if (RunsOnProtoNode(s.proto) && c_.grpc_node.empty()) {
        round_->notes.push_back(s.proto + ": " + c_.grpc_missing + "; skipped");
        continue;
      }
      if (!c_.plan.rpc && !HasGoodputRows(s)) continue;
      if (Status status = RunSeries(s); !status.ok()) {
        round_->errors.push_back(s.label + ": " + status.ToString());
        Progress(out_.path + ": " + s.label + " FAILED: " + status.ToString());
      }
    }
    if (c_.plan.goodput) RunIperf3();
  }

  // The machine's regime (cross_cpu_probe.h): client CPU to server CPU.
  void ProbeCrossCpu() {
    if (!c_.plan.pin.pin || probe_failed_) return;
    Result<double> rate = MeasureCrossCpuCopy(
        {.from_cpu = c_.plan.pin.client_cpu, .to_cpu = c_.plan.pin.server_cpu});
    if (rate.ok()) {
      out_.cross_cpu_gbps.push_back(*rate);
    } else {
      probe_failed_ = true;
      out_.notes.push_back(rate.status().ToString());
    }
  }

  // The other half of the regime (switch_probe.h), on the client's CPU.
  void ProbeSwitch() {
    if (!c_.plan.pin.pin || switch_probe_failed_) return;
    Result<double> us = MeasureProcessSwitch({.cpu = c_.plan.pin.client_cpu});
    if (us.ok()) {
      out_.process_switch_us.push_back(*us);
    } else {
      switch_probe_failed_ = true;
      out_.notes.push_back(us.status().ToString());
    }
  }

  void Progress(const std::string& line) const {
    if (c_.progress) c_.progress(round_prefix_ + line);
  }

  // The server port of a series: the convention's on a fresh veth pair; on
  // loopback, which other programs share, a free one.
  Result<int> PortFor(const ThroughputSeriesSpec& s) const {
    if (out_.path == "veth") {
      return ClusterNodePort(IsGrpc(s.proto) ? "grpc" : s.proto == "homa-typed" ? "homa" : s.proto);
    }
    WHARF_ASSIGN_OR_RETURN(uint16_t port, PickFreeTcpPort(hosts_.address(kServer)));
    return static_cast<int>(port);
  }

  std::vector<std::string> NodeArgv(const ThroughputSeriesSpec& s, int port, int host,
                                    const std::string& socket, int64_t start_at,
                                    uint64_t response_size) const {
    std::vector<std::string> argv = RunsOnProtoNode(s.proto)
                                        ? std::vector<std::string>{c_.grpc_node}
                                        : std::vector<std::string>{c_.self, "bench", "cluster-node"};
    if (s.proto == "grpc-sync") argv.insert(argv.end(), {"--server-api", "sync"});
    argv.insert(argv.end(),
                {"--proto", IsGrpc(s.proto) ? "grpc" : s.proto, "--mode",
                 s.managed ? "managed" : "embedded", "--host",
                 std::to_string(host), "--addresses", hosts_.JoinedAddresses(), "--port",
                 std::to_string(port), "--workload", "1", "--link-rate", "default",
                 "--endpoint-defaults", "--response-size", std::to_string(response_size),
                 "--start-at", std::to_string(start_at)});
    if (!socket.empty()) argv.insert(argv.end(), {"--daemon-socket", socket});
    if (s.wharf) {
      for (const std::string& kv : c_.settings) argv.insert(argv.end(), {"--set", kv});
    }
    return argv;
  }

  Status RunSeries(const ThroughputSeriesSpec& s) {
    WHARF_ASSIGN_OR_RETURN(int port, PortFor(s));
    std::vector<std::unique_ptr<netns::Subprocess>> daemons;  // outlive the nodes
    std::vector<std::string> sockets(2);
    std::vector<pid_t> daemon_pids;
    if (s.managed) {
      for (int h : {kClient, kServer}) {
        sockets[h] = work_ + "/" + out_.path + "-" + s.proto + "-h" + std::to_string(h) + ".sock";
        std::vector<std::string> argv = {
            c_.self, "daemon", "--socket", sockets[h], "--log-level", "warn", "--set",
            "listen.homa=" + hosts_.address(h) + ":" + std::to_string(port), "--set",
            "listen.tcp=", "--set", "http.listen="};
        for (const std::string& kv : c_.settings) argv.insert(argv.end(), {"--set", kv});
        WHARF_ASSIGN_OR_RETURN(auto d, hosts_.Spawn(h, argv));
        daemon_pids.push_back(d->pid());
        daemons.push_back(std::move(d));
      }
      for (const std::string& socket : sockets) {
        WHARF_RETURN_IF_ERROR(WaitForDaemonSocket(socket, clock_, kDaemonStartNs));
      }
    }
    const std::string what = out_.path + ": " + s.label;
    auto series = [&](uint64_t response_size) {
      return ThroughputSeries{
          .label = s.label,
          .proto = s.proto,
          .mode = s.wharf ? s.mode : "baseline",
          .node_argv =
              [this, &s, port, &sockets, response_size](int host, int64_t at) {
                return NodeArgv(s, port, host, sockets[static_cast<size_t>(host)], at,
                                response_size);
              },
          .daemon_pids = daemon_pids,
          .progress = [this, what](const std::string& line) { Progress(out_.path + ": " + line); }};
    };
    if (c_.plan.rpc) {
      WHARF_ASSIGN_OR_RETURN(
          std::vector<ThroughputRow> rows,
          RunThroughputPhase(hosts_, series(0),
                             {.duration_ns = c_.plan.duration_ns,
                              .in_flight = c_.plan.in_flight,
                              .bytes = c_.plan.size,
                              .warmup_ns = c_.plan.warmup_ns},
                             clock_));
      round_->rpc.insert(round_->rpc.end(), rows.begin(), rows.end());
    }
    if (c_.plan.goodput && HasGoodputRows(s)) {
      if (s.managed && c_.plan.rpc) std::this_thread::sleep_for(std::chrono::nanoseconds(kDaemonReleaseNs));
      WHARF_ASSIGN_OR_RETURN(
          std::vector<ThroughputRow> rows,
          RunThroughputPhase(hosts_, series(1),
                             {.duration_ns = c_.plan.goodput_seconds * kNsPerSec,
                              .in_flight = c_.plan.goodput_in_flight,
                              .bytes = c_.plan.goodput_bytes,
                              .warmup_ns = c_.plan.warmup_ns},
                             clock_));
      round_->goodput.insert(round_->goodput.end(), rows.begin(), rows.end());
    }
    return OkStatus();
  }

  void RunIperf3() {
    Progress(out_.path + ": iperf3, one TCP stream " + hosts_.address(kClient) + " -> " +
             hosts_.address(kServer) + " for " + std::to_string(c_.plan.goodput_seconds) +
             " s ...");
    if (!ChildProcess::FindExecutable(c_.iperf3_binary).ok()) {
      round_->iperf3_error = c_.iperf3_binary + " not installed (scripts/setup installs it)";
      return;
    }
    uint16_t port = kIperf3VethPort;
    if (out_.path != "veth") {
      Result<uint16_t> free_port = PickFreeTcpPort(hosts_.address(kServer));
      if (!free_port.ok()) {
        round_->iperf3_error = free_port.status().ToString();
        return;
      }
      port = *free_port;
    }
    Result<Iperf3Result> r = RunIperf3OnHosts(hosts_, kClient, kServer, c_.plan.goodput_seconds,
                                              c_.iperf3_binary, port);
    if (r.ok()) {
      round_->iperf3 = *r;
    } else {
      round_->iperf3_error = r.status().ToString();
    }
  }

  const ThroughputRunConfig& c_;
  const Clock& clock_;
  BenchHosts hosts_;
  ThroughputPathResult& out_;
  std::string work_;
  ThroughputPathResult* round_ = nullptr;  // where this round's results go (out_ with one round)
  std::string round_prefix_;               // "round 2/3: " in progress lines, "" with one round
  bool probe_failed_ = false;              // one note, then no more probes
  bool switch_probe_failed_ = false;       // the same for the switch probe
};

std::vector<int> SideCpus(const ThroughputPlan& plan) {
  return {plan.pin.client_cpu, plan.pin.server_cpu};
}

Status RunVeth(const ThroughputRunConfig& c, const Clock& clock, ThroughputPathResult& out,
               const std::string& work) {
  if (c.progress) {
    c.progress("veth: bringing up two namespaces on one veth pair, MTU " +
               std::to_string(c.plan.mtu) + " ...");
  }
  WHARF_ASSIGN_OR_RETURN(std::unique_ptr<netns::NetnsCluster> cluster,
                         netns::NetnsCluster::Create({.hosts = 2,
                                                      .mtu = c.plan.mtu,
                                                      .prefix = std::string(kBenchClusterPrefix),
                                                      .direct_pair = true}));
  if (c.on_cluster) c.on_cluster(cluster->tag(), true);
  out.description = cluster->address(kClient) + " (" + cluster->namespace_name(kClient) +
                    ") -> " + cluster->address(kServer) + " (" +
                    cluster->namespace_name(kServer) + "), one veth pair, MTU " +
                    std::to_string(cluster->mtu());
  {
    PathRunner runner(c, clock, BenchHosts::OnCluster(*cluster, SideCpus(c.plan)), out, work);
    runner.Run();
  }
  if (c.progress) c.progress("veth: taking the namespaces down ...");
  const Status destroyed = cluster->Destroy();
  if (c.on_cluster) c.on_cluster(cluster->tag(), false);
  return destroyed;
}

}  // namespace

Result<ThroughputReport> RunThroughput(const ThroughputRunConfig& c, const Clock& clock) {
  ThroughputReport report{.plan = c.plan, .settings = c.settings, .paths = {}};
  WHARF_ASSIGN_OR_RETURN(TempDir work, TempDir::Make());
  for (const std::string& path : c.plan.paths) {
    ThroughputPathResult out{.path = path};
    if (path == "loopback") {
      out.description = std::string(kClientLoopback) + " -> " + kServerLoopback +
                        " in this namespace (lo)";
      PathRunner runner(c, clock,
                        BenchHosts::InThisNamespace({kClientLoopback, kServerLoopback},
                                                    SideCpus(c.plan)),
                        out, work.path());
      runner.Run();
    } else if (Status status = RunVeth(c, clock, out, work.path()); !status.ok()) {
      out.errors.push_back("veth pair: " + status.ToString());
    }
    report.paths.push_back(std::move(out));
  }
  return report;
}

}  // namespace wharf::bench
