// The workload runs of `wharf bench cluster`: daemons, nodes, collection,
// statistics, results.json, the plot and the tables (the throughput phase
// itself is in cluster_throughput.cc).
#include "bench/cluster_runner.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "netns/bottleneck.h"
#include "netns/netns_process.h"
#include "bench/bench_daemon.h"
#include "bench/cluster_samples.h"
#include "bench/cluster_tuning.h"
#include "bench/node_summary.h"
#include "bench/cluster_throughput.h"
#include "bench/cpu_usage.h"
#include "bench/slowdown.h"
#include "bench/slowdown_plot.h"
#include "bench/sockets.h"
#include "bench/workload.h"

namespace wharf::bench {
namespace {

using netns::NetnsProcess;

constexpr int kBuckets = 10;
constexpr DurationNs kStartLeadNs = 2 * kNsPerSec;  // processes open their sockets meanwhile
constexpr DurationNs kDrainNs = 1 * kNsPerSec;
constexpr DurationNs kDaemonStartNs = 10 * kNsPerSec;
// A wharfd keeps a departed application's endpoints open for
// AppSession::kLinger (200 ms); a node opening the same named endpoint
// sooner is refused (ALREADY_EXISTS), so managed runs wait this long
// between one node's exit and the next one's start on the same host.
constexpr DurationNs kDaemonReleaseNs = 500 * kNsPerMs;

bool IsWharf(const std::string& proto) { return proto == "homa" || proto == "tcp"; }

std::string Label(const std::string& proto, const std::string& mode) {
  return IsWharf(proto) ? proto + " " + mode : proto;
}

std::string JoinAddresses(const netns::NetnsCluster& cluster) {
  std::string out;
  for (int h = 0; h < cluster.host_count(); ++h) out += (h ? "," : "") + cluster.address(h);
  return out;
}

void Sleep(DurationNs ns) { std::this_thread::sleep_for(std::chrono::nanoseconds(ns)); }

// What one series measured.
struct SeriesRun {
  std::string proto, mode, label;
  std::vector<RpcSample> unloaded;
  SeriesInput input;
  nlohmann::json nodes = nlohmann::json::array();
  DurationNs node_cpu_ns = 0;
  DurationNs daemon_cpu_ns = -1;  // -1: no daemons
  double machine_busy = -1;       // the CPUs' busy share over the sending window
  uint64_t completed = 0, dropped = 0, failed = 0, unfinished = 0;
  std::vector<ThroughputRow> throughput;
};

class SeriesRunner {
 public:
  SeriesRunner(netns::NetnsCluster& cluster, const ClusterRunConfig& c, std::string self,
               std::string grpc_node, std::string work_dir)
      : cluster_(cluster), c_(c), self_(std::move(self)), grpc_node_(std::move(grpc_node)),
        work_(std::move(work_dir)), settings_(WharfSettings(c, cluster.mtu())) {}

  Result<SeriesRun> Run(const std::string& proto, const std::string& mode) {
    SeriesRun run{.proto = proto, .mode = mode, .label = Label(proto, mode)};
    std::vector<std::unique_ptr<NetnsProcess>> daemons;  // outlive the nodes
    std::vector<std::string> sockets(static_cast<size_t>(cluster_.host_count()));
    const bool managed = IsWharf(proto) && mode == "managed";
    if (managed) {
      for (int h = 0; h < cluster_.host_count(); ++h) {
        sockets[h] = work_ + "/h" + std::to_string(h) + ".sock";
        std::error_code ec;
        std::filesystem::remove(sockets[h], ec);
        std::vector<std::string> argv = {
            self_, "daemon", "--socket", sockets[h], "--log-level", "warn", "--set",
            "listen.homa=" + cluster_.address(h) + ":" + std::to_string(ClusterNodePort(proto)), "--set",
            "listen.tcp=", "--set", "http.listen=", "--set", "homa.link_rate=" + std::to_string(c_.link_bps) + "bps"};
        for (const std::string& s : settings_) argv.insert(argv.end(), {"--set", s});
        WHARF_ASSIGN_OR_RETURN(auto d, NetnsProcess::Spawn(cluster_, h, argv));
        daemons.push_back(std::move(d));
      }
      for (const std::string& s : sockets) {
        WHARF_RETURN_IF_ERROR(WaitForDaemonSocket(s, clock_, kDaemonStartNs));
      }
    }

    Progress(run.label + ": unloaded pass h0 -> h1 ...");
    WHARF_RETURN_IF_ERROR(Unloaded(proto, mode, sockets, run));

    if (managed) Sleep(kDaemonReleaseNs);
    Progress(run.label + ": loaded run on " + std::to_string(cluster_.host_count()) +
             " hosts for " + c_.duration + " ...");
    CpuMeter daemon_cpu([&] {
      std::vector<pid_t> pids;
      for (const auto& d : daemons) pids.push_back(d->pid());
      return pids;
    }());
    if (managed) daemon_cpu.Start();
    const int64_t start_at = clock_.WallNs() + kStartLeadNs;
    std::vector<std::unique_ptr<NetnsProcess>> nodes;
    for (int h = 0; h < cluster_.host_count(); ++h) {
      std::vector<std::string> argv = NodeArgv(proto, mode, h, sockets[h], start_at);
      argv.insert(argv.end(), {"--threads", std::to_string(c_.threads), "--duration", c_.duration,
                               "--out", SampleFile(run.label, h, false)});
      WHARF_ASSIGN_OR_RETURN(auto n, NetnsProcess::Spawn(cluster_, h, argv));
      nodes.push_back(std::move(n));
    }
    // Progress while the run goes (the nodes are only waited for at the end,
    // since WaitFor kills on its timeout), and the machine's CPU over the
    // sending window.
    const TimeNs start = clock_.NowNs() + (start_at - clock_.WallNs());
    const TimeNs window_end = start + c_.duration_ns;
    const TimeNs end = window_end + 2 * kDrainNs;
    Sleep(std::max<DurationNs>(0, start - clock_.NowNs()));
    const Result<MachineCpu> machine_start = ReadMachineCpu();
    for (TimeNs next = start + 5 * kNsPerSec; next < window_end; next += 5 * kNsPerSec) {
      Sleep(next - clock_.NowNs());
      Progress(run.label + ": " + std::to_string((next - start) / kNsPerSec) + " s of " +
               c_.duration + " ...");
    }
    Sleep(std::max<DurationNs>(0, window_end - clock_.NowNs()));
    run.machine_busy = BusyFraction(machine_start, ReadMachineCpu());
    for (size_t h = 0; h < nodes.size(); ++h) {
      WHARF_ASSIGN_OR_RETURN(nlohmann::json summary, Finish(*nodes[h], end));
      run.nodes.push_back(summary);
      run.input.issued_rpcs += summary.value("issued", uint64_t{0});
      run.input.issued_bytes += summary.value("issued_bytes", uint64_t{0});
      run.completed += summary.value("completed", uint64_t{0});
      run.dropped += summary.value("dropped", uint64_t{0});
      run.failed += summary.value("failed", uint64_t{0});
      run.unfinished += summary.value("unfinished", uint64_t{0});
      run.node_cpu_ns += summary.value("cpu_ns", int64_t{0});
      WHARF_RETURN_IF_ERROR(
          ReadSampleFile(SampleFile(run.label, static_cast<int>(h), false), &run.input.samples));
    }
    if (managed) run.daemon_cpu_ns = daemon_cpu.Stop();
    run.input.label = run.label;
    run.input.duration_ns = c_.duration_ns;

    // Before the daemons go.
    if (managed) Sleep(kDaemonReleaseNs);
    ThroughputSeries series{
        .label = run.label,
        .proto = proto,
        .mode = IsWharf(proto) ? mode : "kernel",
        .node_argv = [&](int host, int64_t at) { return NodeArgv(proto, mode, host, sockets[host], at); },
        .daemon_pids = {},
        .progress = c_.progress};
    if (managed) series.daemon_pids = {daemons[0]->pid(), daemons[1]->pid()};
    if (c_.throughput_duration_ns > 0 && !c_.throughput_in_flight.empty()) {
      // Without the bottleneck: 64 B RPCs at 32 in flight fill a 100 Mbit/s
      // link with headers (66,000 RPC/s of homa's ~170 wire bytes each way),
      // and the rows are to measure the protocols, not the link.
      WHARF_RETURN_IF_ERROR(LiftBottleneck(true));
      Result<std::vector<ThroughputRow>> rows =
          RunThroughputPhase(BenchHosts::OnCluster(cluster_), series,
                             {.duration_ns = c_.throughput_duration_ns,
                              .in_flight = c_.throughput_in_flight},
                             clock_);
      WHARF_RETURN_IF_ERROR(LiftBottleneck(false));
      WHARF_ASSIGN_OR_RETURN(run.throughput, std::move(rows));
    }
    return run;
  }

 private:
  void Progress(const std::string& line) {
    if (c_.progress) c_.progress(line);
  }

  // Takes the rate limits off host 0's and host 1's links (`lift`), or puts
  // every host's back as the run started.
  Status LiftBottleneck(bool lift) {
    if (lift) {
      for (int h : {0, 1}) WHARF_RETURN_IF_ERROR(cluster_.ClearRates(h));
      return OkStatus();
    }
    return netns::ApplyBottleneck(cluster_, static_cast<int64_t>(c_.link_bps), /*ingress=*/true,
                                  c_.priority_levels)
        .status();
  }

  std::string SampleFile(const std::string& label, int host, bool unloaded) const {
    std::string name = label;
    for (char& ch : name) ch = ch == ' ' ? '-' : ch;
    return c_.out_dir + "/samples-" + name + (unloaded ? "-unloaded" : "") + "-h" +
           std::to_string(host) + ".bin";
  }

  std::vector<std::string> NodeArgv(const std::string& proto, const std::string& mode, int host,
                                    const std::string& socket, int64_t start_at) const {
    // The gRPC node takes the same flags as wharf's (cluster_node.h).
    std::vector<std::string> argv =
        proto == "grpc" ? std::vector<std::string>{grpc_node_}
                        : std::vector<std::string>{self_, "bench", "cluster-node"};
    argv.insert(argv.end(), {
        "--proto", proto, "--mode",
        IsWharf(proto) ? mode : "embedded", "--host", std::to_string(host), "--addresses",
        JoinAddresses(cluster_), "--port", std::to_string(ClusterNodePort(proto)), "--workload",
        c_.workload, "--max-message", std::to_string(c_.max_message), "--response-size",
        std::to_string(c_.response_size), "--load",
        std::to_string(c_.load), "--link-rate", std::to_string(c_.link_bps), "--max-outstanding",
        std::to_string(c_.max_outstanding), "--seed", std::to_string(c_.seed), "--start-at",
        std::to_string(start_at), "--drain", std::to_string(kDrainNs / kNsPerMs) + "ms"});
    if (!c_.workload_dir.empty()) argv.insert(argv.end(), {"--workload-dir", c_.workload_dir});
    if (!socket.empty()) argv.insert(argv.end(), {"--daemon-socket", socket});
    if (IsWharf(proto)) {
      for (const std::string& s : settings_) argv.insert(argv.end(), {"--set", s});
    }
    return argv;
  }

  // Waits for a node (bounded: a minute past `expected_end`) and parses
  // its summary line.
  Result<nlohmann::json> Finish(NetnsProcess& node, TimeNs expected_end) {
    return WaitForNodeSummary(
        node, std::max<DurationNs>(0, expected_end - clock_.NowNs()) + 60 * kNsPerSec);
  }


  Status Unloaded(const std::string& proto, const std::string& mode,
                  const std::vector<std::string>& sockets, SeriesRun& run) {
    const int64_t start_at = clock_.WallNs() + kStartLeadNs;
    std::vector<std::string> server = NodeArgv(proto, mode, 1, sockets[1], start_at);
    server.insert(server.end(), {"--threads", "0", "--duration", "3600s", "--out",
                                 SampleFile(run.label, 1, true)});
    WHARF_ASSIGN_OR_RETURN(auto server_node, NetnsProcess::Spawn(cluster_, 1, server));
    std::vector<std::string> client = NodeArgv(proto, mode, 0, sockets[0], start_at);
    client.insert(client.end(), {"--unloaded", "--peer", "1", "--threads", "1", "--per-size",
                                 std::to_string(c_.unloaded_per_size), "--out",
                                 SampleFile(run.label, 0, true)});
    WHARF_ASSIGN_OR_RETURN(auto client_node, NetnsProcess::Spawn(cluster_, 0, client));
    WHARF_ASSIGN_OR_RETURN(nlohmann::json summary,
                           Finish(*client_node, clock_.NowNs() + 5 * 60 * kNsPerSec));
    server_node->Kill();
    WHARF_RETURN_IF_ERROR(ReadSampleFile(SampleFile(run.label, 0, true), &run.unloaded));
    if (run.unloaded.empty()) {
      return UnavailableError(run.label + ": the unloaded pass completed no RPC: " + summary.dump());
    }
    return OkStatus();
  }

  netns::NetnsCluster& cluster_;
  const ClusterRunConfig& c_;
  std::string self_;
  std::string grpc_node_;
  std::string work_;
  std::vector<std::string> settings_;  // for wharf nodes and wharfds
  const Clock& clock_ = SystemClock::Get();
};

}  // namespace

int ClusterNodePort(const std::string& proto) {
  if (proto == "homa") return 4000;
  if (proto == "tcp") return 4001;
  if (proto == "kernel-udp") return 4002;
  return proto == "kernel-tcp" ? 4003 : 4004;  // grpc
}

std::vector<std::string> WharfSettings(const ClusterRunConfig& c, int mtu) {
  std::vector<std::string> out = HomaSettingsForLink(c.link_bps, mtu);
  out.insert(out.end(), c.settings.begin(), c.settings.end());  // later ones win
  return out;
}

namespace {

std::string FormatLoad(double load) {
  char text[16];
  std::snprintf(text, sizeof(text), "%.2g", load);
  return text;
}

double PerMessage(DurationNs cpu_ns, uint64_t messages) {
  return cpu_ns < 0 || messages == 0 ? -1 : static_cast<double>(cpu_ns) / static_cast<double>(messages);
}

// `machine_busy`: each series' CPU busy share (-1 unknown), in series order.
void PrintTable(const SlowdownReport& report, const std::vector<double>& machine_busy) {
  std::printf("\nslowdown (P50 / P99) by message size, %s, load %.2f:\n", report.workload.c_str(),
              report.load.target_load);
  std::printf("%-22s", "bucket (bytes)");
  for (const SeriesStats& s : report.series) std::printf(" %20s", s.label.c_str());
  std::printf("\n");
  for (size_t b = 0; b < report.buckets.size(); ++b) {
    const SizeBucket& k = report.buckets[b];
    std::printf("%-22s", (std::to_string(k.min_bytes) + "-" + std::to_string(k.max_bytes)).c_str());
    for (const SeriesStats& s : report.series) {
      const BucketStats& st = s.buckets[b];
      if (st.count == 0) {
        std::printf(" %20s", "-");
      } else {
        char cell[64];
        std::snprintf(cell, sizeof(cell), "%.1f / %.1f", st.slowdown_p50, st.slowdown_p99);
        std::printf(" %20s", cell);
      }
    }
    std::printf("\n");
  }
  std::printf("%-22s", "shortest 10% P99");
  for (const SeriesStats& s : report.series) std::printf(" %20.1f", s.short_slowdown_p99);
  std::printf("\n%-22s", "achieved load");
  for (const SeriesStats& s : report.series) std::printf(" %20.2f", s.achieved_load);
  std::printf("\n%-22s", "CPUs busy");
  for (const double busy : machine_busy) {
    if (busy < 0) {
      std::printf(" %20s", "?");
    } else {
      std::printf(" %19.0f%%", 100 * busy);
    }
  }
  std::printf("\n");
}

}  // namespace

std::vector<std::pair<std::string, std::string>> ClusterSeries(const ClusterRunConfig& c) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& p : c.protos) {
    if (IsWharf(p)) {
      for (const std::string& m : c.modes) out.emplace_back(p, m);
    } else {
      out.emplace_back(p, "embedded");
    }
  }
  return out;
}

Result<std::string> FindGrpcNode(const std::string& wharf_binary) {
  const std::filesystem::path dir = std::filesystem::path(wharf_binary).parent_path();
  for (const std::filesystem::path& candidate :
       {dir / "wharf-grpc-node", dir / "grpc" / "wharf-grpc-node"}) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(candidate, ec) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate.string();
    }
  }
  return NotFoundError("wharf-grpc-node not found next to " + wharf_binary +
                       " (configure with gRPC: apt-get install libgrpc++-dev "
                       "protobuf-compiler-grpc, then rebuild)");
}

Status RunClusterWorkloads(netns::NetnsCluster& cluster, const ClusterRunConfig& c) {
  WHARF_ASSIGN_OR_RETURN(
      Workload full,
      Workload::FromSpec(c.workload, c.workload_dir.empty() ? DefaultWorkloadDir() : c.workload_dir));
  const Workload workload = full.Truncated(c.max_message);
  WHARF_ASSIGN_OR_RETURN(std::string self, SelfExecutable());
  std::string grpc_node = c.grpc_node;
  if (grpc_node.empty() && std::find(c.protos.begin(), c.protos.end(), "grpc") != c.protos.end()) {
    WHARF_ASSIGN_OR_RETURN(grpc_node, FindGrpcNode(self));
  }
  std::error_code ec;
  std::filesystem::create_directories(c.out_dir, ec);
  if (ec) return InternalError("--out " + c.out_dir + ": " + ec.message());
  // Daemon sockets in a short path (sun_path holds 108 bytes).
  char work_template[] = "/tmp/wharf-bench-cluster-XXXXXX";
  if (::mkdtemp(work_template) == nullptr) return ErrnoToStatus(errno, "mkdtemp");
  const std::string work = work_template;

  SlowdownReport report;
  report.workload = workload.Describe();
  report.baseline = "measured per series: P50 at each size of an unloaded pass (h0 -> h1)";
  report.load = {.target_load = c.load, .link_bps = c.link_bps, .hosts = cluster.host_count()};
  report.buckets = MakeSizeBuckets(workload, kBuckets);
  nlohmann::json series_meta = nlohmann::json::array();
  std::vector<ThroughputRow> throughput;
  Status status = OkStatus();
  SeriesRunner runner(cluster, c, self, grpc_node, work);
  for (const auto& [proto, mode] : ClusterSeries(c)) {
    Result<SeriesRun> run = runner.Run(proto, mode);
    if (!run.ok()) {
      status = run.status().WithContext(Label(proto, mode));
      break;
    }
    Result<UnloadedBaseline> baseline = UnloadedBaseline::FromSamples(run->unloaded);
    if (!baseline.ok()) {
      status = baseline.status();
      break;
    }
    Result<SeriesStats> stats =
        ComputeSeriesStats(run->input, report.buckets, *baseline, report.load);
    if (!stats.ok()) {
      status = stats.status();
      break;
    }
    report.series.push_back(*stats);
    throughput.insert(throughput.end(), run->throughput.begin(), run->throughput.end());
    const uint64_t messages = 2 * run->completed;  // a request and a response each
    series_meta.push_back({{"label", run->label},
                           {"proto", run->proto},
                           {"mode", IsWharf(run->proto) ? run->mode : "kernel"},
                           {"baseline", baseline->Describe()},
                           {"completed", run->completed},
                           {"issued", run->input.issued_rpcs},
                           {"dropped", run->dropped},
                           {"failed", run->failed},
                           {"unfinished", run->unfinished},
                           {"node_cpu_ns", run->node_cpu_ns},
                           {"daemon_cpu_ns", run->daemon_cpu_ns},
                           {"node_cpu_ns_per_message", PerMessage(run->node_cpu_ns, messages)},
                           {"daemon_cpu_ns_per_message", PerMessage(run->daemon_cpu_ns, messages)},
                           {"cpus_busy", run->machine_busy},
                           {"nodes", run->nodes}});
    std::printf("%s: %llu RPCs completed, %llu dropped, %llu unfinished; CPUs %.0f%% busy; node "
                "CPU %.0f ns per message%s\n",
                run->label.c_str(), static_cast<unsigned long long>(run->completed),
                static_cast<unsigned long long>(run->dropped),
                static_cast<unsigned long long>(run->unfinished), 100 * run->machine_busy,
                PerMessage(run->node_cpu_ns, messages),
                run->daemon_cpu_ns >= 0
                    ? (", daemons " + std::to_string(static_cast<long long>(
                                          PerMessage(run->daemon_cpu_ns, messages))) +
                       " ns")
                          .c_str()
                    : "");
    std::fflush(stdout);
  }
  std::filesystem::remove_all(work, ec);
  if (!status.ok()) return status;

  nlohmann::json doc = nlohmann::json::parse(SlowdownReportJson(report));
  doc["run"] = {{"hosts", cluster.host_count()},
                {"workload", c.workload},
                {"max_message", c.max_message},
                {"response_size", c.response_size},
                {"load", c.load},
                {"link_rate", c.link_rate},
                {"link_bps", c.link_bps},
                {"priority_levels", c.priority_levels},
                {"duration", c.duration},
                {"client_threads_per_host", c.threads},
                {"max_outstanding_per_thread", c.max_outstanding},
                {"seed", c.seed},
                {"wharf_settings", WharfSettings(c, cluster.mtu())},
                {"throughput_duration", c.throughput_duration},
                {"throughput_in_flight", c.throughput_in_flight}};
  doc["series_meta"] = series_meta;
  doc["throughput"] = nlohmann::json::parse(ThroughputRowsJson(throughput));
  const std::string path = c.out_dir + "/results.json";
  {
    std::ofstream file(path);
    file << doc.dump(2) << "\n";
    if (!file) return InternalError("writing " + path + " failed");
  }
  std::printf("wrote %s\n", path.c_str());
  std::vector<double> machine_busy;
  for (const nlohmann::json& meta : series_meta) machine_busy.push_back(meta.value("cpus_busy", -1.0));
  PrintTable(report, machine_busy);
  PrintThroughputTable(throughput, c.link_rate);
  Result<PlotFiles> plot =
      PlotSlowdown(report, DecileSizeTicks(workload),
                   {.output_dir = c.out_dir,
                    .title = "Slowdown, " + report.workload + ", load " + FormatLoad(c.load) +
                             ", " + std::to_string(cluster.host_count()) + " hosts, " +
                             c.link_rate + " links"});
  if (plot.ok()) {
    std::printf("wrote %s and %s\n", plot->png.c_str(), plot->svg.c_str());
  } else {
    std::printf("plot not drawn: %s\n", plot.status().ToString().c_str());
  }
  return OkStatus();
}

}  // namespace wharf::bench
