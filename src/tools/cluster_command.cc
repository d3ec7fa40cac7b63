// `wharf bench cluster`: flags, the bring-up / check / teardown sequence,
// the progress lines and DIR/cluster.json.
#include "tools/cluster_command.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/config_value.h"
#include "netns/bottleneck.h"
#include "netns/netns_cluster.h"
#include "bench/bench_daemon.h"
#include "bench/cluster_check.h"
#include "bench/cluster_guard.h"
#include "bench/cluster_runner.h"

namespace wharf::tools {
namespace {

using netns::NetnsCluster;

constexpr int kExitSkip = 77;
// The rate check: one iperf3 stream this long, judged within this fraction.
constexpr int kRateCheckSeconds = 2;
constexpr double kRateTolerance = 0.10;
constexpr int kPingProbes = 5;
constexpr DurationNs kPingTimeoutNs = 1 * kNsPerSec;

// Validated flags.
struct Plan {
  int64_t link_rate_bps = 0;
  DurationNs duration_ns = 0;
  DurationNs throughput_duration_ns = 0;
};

Result<Plan> Validate(const BenchClusterOptions& o) {
  Plan plan;
  WHARF_ASSIGN_OR_RETURN(plan.link_rate_bps, netns::ParseRateBitsPerSecond(o.link_rate));
  if (plan.link_rate_bps < netns::kMinBottleneckBitsPerSecond ||
      plan.link_rate_bps > netns::kMaxBottleneckBitsPerSecond) {
    return InvalidArgumentError("--link-rate " + o.link_rate + " is outside 1mbit to 100gbit");
  }
  Result<DurationNs> duration = ParseDuration(o.duration);
  if (!duration.ok()) return duration.status().WithContext("--duration");
  plan.duration_ns = *duration;
  if (plan.duration_ns < kNsPerSec) {
    return InvalidArgumentError("--duration " + o.duration + " is shorter than 1s");
  }
  if (o.throughput_duration != "0") {
    Result<DurationNs> t = ParseDuration(o.throughput_duration);
    if (!t.ok()) return t.status().WithContext("--throughput-duration");
    plan.throughput_duration_ns = *t;
  }
  if (plan.throughput_duration_ns > 0 && o.throughput_in_flight.empty()) {
    return InvalidArgumentError("--throughput-in-flight: expected at least one count");
  }
  const bool named = o.workload.size() == 2 && o.workload[0] == 'w' && o.workload[1] >= '1' &&
                     o.workload[1] <= '5';
  if (!named) {
    Result<uint64_t> size = ParseBytes(o.workload);
    if (!size.ok()) {
      return InvalidArgumentError("--workload '" + o.workload +
                                  "': expected w1..w5 or a message size such as 1000 or 64KiB");
    }
  }
  return plan;
}

// One line on stderr saying what runs now (skipped with --no-progress).
void Progress(const BenchClusterOptions& o, const std::string& text) {
  if (o.no_progress) return;
  std::fprintf(stderr, "[bench cluster] %s\n", text.c_str());
  std::fflush(stderr);
}

double Mbit(double bits_per_second) { return bits_per_second / 1e6; }

nlohmann::json QueuesJson(const std::vector<netns::QueueStats>& queues) {
  nlohmann::json out = nlohmann::json::array();
  for (const netns::QueueStats& q : queues) {
    out.push_back({{"host", q.host},
                   {"direction", q.ingress ? "ingress" : "egress"},
                   {"netns", q.netns},
                   {"device", q.device},
                   {"sent_bytes", q.sent_bytes},
                   {"sent_packets", q.sent_packets},
                   {"dropped_packets", q.dropped_packets},
                   {"overlimits", q.overlimits},
                   {"backlog_bytes", q.backlog_bytes},
                   {"backlog_packets", q.backlog_packets}});
  }
  return out;
}

Status WriteJson(const std::string& dir, const nlohmann::json& doc) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return InternalError("--out " + dir + ": " + ec.message());
  const std::string path = dir + "/cluster.json";
  std::ofstream file(path);
  file << doc.dump(2) << "\n";
  file.close();
  if (!file) return InternalError("writing " + path + " failed");
  return OkStatus();
}

// Everything between bring-up and teardown; fills `doc`. Returns false
// when a host did not answer (the run failed).
Result<bool> CheckCluster(const BenchClusterOptions& o, const Plan& plan, NetnsCluster& cluster,
                          nlohmann::json& doc) {
  const Clock& clock = SystemClock::Get();
  bool ok = true;
  nlohmann::json pings = nlohmann::json::array();
  for (int to = 1; to < cluster.host_count(); ++to) {
    WHARF_ASSIGN_OR_RETURN(bench::UdpPingResult ping,
                           bench::UdpPing(cluster, 0, to, kPingProbes, kPingTimeoutNs, clock));
    std::printf("ping h0 -> h%d (%s): %d/%d answered, rtt min/avg/max %.1f/%.1f/%.1f us\n", to,
                cluster.address(to).c_str(), ping.received, ping.sent,
                static_cast<double>(ping.min_rtt_ns) / 1e3,
                static_cast<double>(ping.avg_rtt_ns) / 1e3,
                static_cast<double>(ping.max_rtt_ns) / 1e3);
    ok = ok && ping.received > 0;
    pings.push_back({{"from", 0},
                     {"to", to},
                     {"sent", ping.sent},
                     {"received", ping.received},
                     {"min_rtt_ns", ping.min_rtt_ns},
                     {"avg_rtt_ns", ping.avg_rtt_ns},
                     {"max_rtt_ns", ping.max_rtt_ns}});
  }
  doc["ping"] = pings;

  Progress(o, "rate check: one iperf3 TCP stream h0 -> h1 for " +
                  std::to_string(kRateCheckSeconds) + " s through the " + o.link_rate +
                  " bottleneck ...");
  Result<bench::Iperf3Result> iperf =
      bench::RunIperf3Between(cluster, 0, 1, kRateCheckSeconds, o.iperf3_binary);
  if (iperf.ok()) {
    // Compared with what the link can carry as TCP payload (the tbf counts
    // headers too); see TcpGoodputPerWireBit.
    const double expected =
        static_cast<double>(plan.link_rate_bps) * bench::TcpGoodputPerWireBit(cluster.mtu());
    const double ratio = iperf->received_bits_per_second / expected;
    const bool within = std::fabs(ratio - 1) <= kRateTolerance;
    std::printf("rate check: %.1f Mbit/s TCP goodput, %.1f%% of the %.1f Mbit/s a %s link "
                "carries as TCP payload: %s\n",
                Mbit(iperf->received_bits_per_second), 100 * ratio, Mbit(expected),
                o.link_rate.c_str(), within ? "within 10%" : "OUTSIDE 10%");
    doc["rate_check"] = {{"seconds", iperf->seconds},
                         {"received_bits_per_second", iperf->received_bits_per_second},
                         {"expected_goodput_bits_per_second", expected},
                         {"ratio", ratio},
                         {"within_tolerance", within},
                         {"retransmits", iperf->retransmits},
                         {"iperf3_version", iperf->version}};
  } else {
    std::printf("rate check: not measured: %s\n", iperf.status().ToString().c_str());
    doc["rate_check"] = {{"error", iperf.status().ToString()}};
  }
  WHARF_ASSIGN_OR_RETURN(std::vector<netns::QueueStats> queues,
                         netns::ReadBottleneckQueues(cluster));
  doc["queues"] = QueuesJson(queues);
  return ok;
}

int Fail(const Status& status) {
  std::fprintf(stderr, "wharf bench cluster: %s\n", status.ToString().c_str());
  return 1;
}

}  // namespace

CLI::App* AddBenchClusterCommand(CLI::App& bench, BenchClusterOptions& o) {
  CLI::App* cluster = bench.add_subcommand(
      "cluster",
      "Multi-host benchmark: --hosts network namespaces on a Linux bridge (addresses in "
      "198.18.0.0/15), a bottleneck of --link-rate with --priorities strict-priority queues on "
      "every host's links (tc htb; one FIFO tbf with --priorities 1), each --proto "
      "and --mode in turn, results in --out DIR. Needs root. Everything is taken down at the "
      "end, on Ctrl-C, SIGTERM or a failed step; a cluster left by a killed run is removed at "
      "the next start. Each series gets an unloaded pass, a loaded run and RPC throughput rows "
      "(64 B, 1/32/256 in flight, h0 -> h1); results in DIR/results.json and "
      "DIR/slowdown.png/.svg, tables on stdout. Example:\n"
      "  wharf bench cluster --hosts 4 --workload w4 --load 0.8 --link-rate 100mbit "
      "--duration 30s --proto homa,tcp,kernel-udp,kernel-tcp,grpc --mode embedded,managed --out "
      "results");
  cluster->add_option("--hosts", o.hosts, "Hosts (network namespaces), 2 to 16")
      ->capture_default_str()
      ->check(CLI::Range(2, 16));
  cluster
      ->add_option("--workload", o.workload,
                   "Message sizes: w1..w5 (the Homa paper workloads) or one fixed size (SIZE "
                   "in bytes, e.g. 1000 or 64KiB)")
      ->capture_default_str();
  cluster
      ->add_option("--max-message", o.max_message,
                   "Cut longer messages of the workload to this many bytes, as Homa's papers "
                   "do (the default, 1000000, is their 1 MB); 0 runs the full distribution "
                   "(w2..w5 then reach 3.5 to 29.4 MB; every protocol carries up to 64 MiB)")
      ->capture_default_str();
  cluster
      ->add_option("--response-size", o.response_size,
                   "Bytes of every response: 0 (the default) answers each RPC with as many "
                   "bytes as its request (an echo, cp_node's default); N > 0 answers every RPC "
                   "with N bytes (e.g. 100, cp_node's --one-way), in the loaded run, the "
                   "unloaded pass and the throughput rows alike")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{0}, uint64_t{16} << 20));
  cluster->add_option("--load", o.load, "Offered load as a fraction of the link rate")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 1.0));
  cluster
      ->add_option("--link-rate", o.link_rate,
                   "Bottleneck rate of every host's links, in tc units (e.g. 100mbit, 1gbit). "
                   "The default keeps this 2-CPU machine's CPUs below the network's limit with 4 "
                   "hosts at 0.8 load (each packet crossing the namespaces costs kernel CPU); "
                   "the table's 'CPUs busy' row says whether a run was CPU-bound")
      ->capture_default_str();
  cluster
      ->add_option("--priorities", o.priorities,
                   "Strict-priority queues behind each bottleneck, chosen by DSCP: 8 like a "
                   "datacenter switch port (Homa's SRPT relies on them), 1 for one FIFO as in "
                   "networks without priorities")
      ->capture_default_str()
      ->check(CLI::Range(1, 8));
  cluster->add_option("--duration", o.duration, "Run time of each protocol and mode (e.g. 30s)")
      ->capture_default_str();
  cluster
      ->add_option("--proto", o.protos,
                   "Protocols to run, comma-separated: homa (wharf homa://), tcp (wharf tcp://), "
                   "kernel-udp (kernel UDP, messages cut into MTU datagrams; `udp` is an alias), "
                   "kernel-tcp (kernel TCP, a connection per client and server), grpc (gRPC C++: "
                   "wharf-grpc-node beside wharf, built when gRPC is installed; skipped without it)")
      ->capture_default_str()
      ->delimiter(',')
      ->transform(CLI::Transformer(std::map<std::string, std::string>{{"udp", "kernel-udp"}}))
      ->check(CLI::IsMember({"homa", "tcp", "kernel-udp", "kernel-tcp", "grpc"}));
  cluster
      ->add_option("--mode", o.modes,
                   "How wharf runs on each host, comma-separated: embedded (in the benchmark "
                   "process) or managed (through a wharfd per host)")
      ->capture_default_str()
      ->delimiter(',')
      ->check(CLI::IsMember({"embedded", "managed"}));
  cluster->add_option("--out", o.out_dir, "Directory for the results (cluster.json, ...)")
      ->capture_default_str();
  cluster->add_flag("--keep", o.keep,
                    "Leave the cluster up at the end, for debugging (the next run removes it)");
  cluster->add_option("--iperf3", o.iperf3_binary, "The iperf3 binary for the rate check")
      ->capture_default_str();
  cluster->add_flag("--no-progress", o.no_progress, "No progress lines on stderr");
  cluster->add_option("--threads", o.threads, "Client threads per host")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  cluster
      ->add_option("--max-outstanding", o.max_outstanding,
                   "RPCs in flight per client thread; more are dropped (and counted)")
      ->capture_default_str()
      ->check(CLI::Range(1, 65536));
  cluster->add_option("--seed", o.seed, "Seed of the arrival schedules")->capture_default_str();
  cluster
      ->add_option("--unloaded-per-size", o.unloaded_per_size,
                   "RPCs per size in the unloaded pass")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  cluster
      ->add_option("--throughput-duration", o.throughput_duration,
                   "Throughput rows: per series and in-flight count, 64 B RPCs h0 -> h1 in a "
                   "closed loop measured this long (through the bottleneck); 0 skips them")
      ->capture_default_str();
  cluster
      ->add_option("--throughput-in-flight", o.throughput_in_flight,
                   "Throughput rows: RPCs kept in flight, comma-separated")
      ->capture_default_str()
      ->delimiter(',')
      ->check(CLI::Range(1, 65536));
  cluster
      ->add_option("--set", o.settings,
                   "KEY=VALUE: a wharf setting for every node's endpoints and every wharfd "
                   "(docs/configuration.md), e.g. --set homa.max_nic_backlog=200us; repeatable")
      ->allow_extra_args(false);
  cluster->add_option("--workload-dir", o.workload_dir,
                      "Directory of w1.csv..w5.csv (default: the source tree's data/workloads)");
  o.node_command = bench::AddBenchClusterNodeCommand(bench, o.node);
  return cluster;
}

int RunBenchCluster(const BenchClusterOptions& o) {
  Result<Plan> plan = Validate(o);
  if (!plan.ok()) return Fail(plan.status());
  if (Status supported = NetnsCluster::CheckSupported(); !supported.ok()) {
    std::fprintf(stderr, "wharf bench cluster: cannot build network namespaces here: %s\n",
                 supported.ToString().c_str());
    return kExitSkip;
  }
  // The tool owns the signals: from here on Ctrl-C tears the cluster down.
  Result<std::unique_ptr<bench::ClusterGuard>> guard = bench::ClusterGuard::Install();
  if (!guard.ok()) return Fail(guard.status());

  std::vector<std::string> swept;
  if (Status status = bench::SweepStaleBenchClusters(&swept); !status.ok()) {
    std::fprintf(stderr, "wharf bench cluster: warning: %s\n", status.ToString().c_str());
  }
  if (!swept.empty()) {
    std::printf("removed %zu namespace(s) left by an earlier run that did not finish\n",
                swept.size());
  }

  Progress(o, "bringing up " + std::to_string(o.hosts) + " hosts ...");
  Result<std::unique_ptr<NetnsCluster>> created = NetnsCluster::Create(
      {.hosts = o.hosts, .prefix = std::string(bench::kBenchClusterPrefix)});
  if (!created.ok()) return Fail(created.status());
  std::unique_ptr<NetnsCluster> cluster = std::move(created).value();
  (*guard)->Protect(cluster->tag());

  nlohmann::json doc;
  doc["tag"] = cluster->tag();
  doc["subnet"] = cluster->subnet();
  doc["mtu"] = cluster->mtu();
  doc["switch_netns"] = cluster->switch_namespace();
  nlohmann::json hosts = nlohmann::json::array();
  for (int i = 0; i < cluster->host_count(); ++i) {
    hosts.push_back({{"host", i},
                     {"netns", cluster->namespace_name(i)},
                     {"address", cluster->address(i)},
                     {"interface", NetnsCluster::kHostInterface}});
  }
  doc["hosts"] = hosts;
  doc["options"] = {{"workload", o.workload},
                    {"max_message", o.max_message},
                    {"response_size", o.response_size},
                    {"load", o.load},
                    {"link_rate", o.link_rate},
                    {"duration", o.duration},
                    {"proto", o.protos},
                    {"mode", o.modes}};
  std::printf("cluster %s: %d hosts in %s, switch %s\n", cluster->tag().c_str(),
              cluster->host_count(), cluster->subnet().c_str(),
              cluster->switch_namespace().c_str());

  int exit_code = 0;
  Result<netns::BottleneckReport> bottleneck =
      netns::ApplyBottleneck(*cluster, plan->link_rate_bps, /*ingress=*/true, o.priorities);
  if (!bottleneck.ok()) {
    exit_code = Fail(bottleneck.status());
  } else {
    const bool prio = o.priorities > 1;
    std::printf("bottleneck: %s rate %s burst %lld B buffer %s of the rate on %zu links (each "
                "host's egress and ingress)%s\n",
                prio ? "htb" : "tbf", netns::FormatRate(bottleneck->rate_bits_per_second).c_str(),
                static_cast<long long>(bottleneck->burst_bytes),
                bottleneck->tbf.latency.c_str(), bottleneck->queues.size(),
                prio ? (", " + std::to_string(o.priorities) + " strict-priority queues by DSCP")
                           .c_str()
                     : ", one FIFO");
    doc["bottleneck"] = {{"qdisc", prio ? "htb" : "tbf"},
                         {"priority_levels", o.priorities},
                         {"rate_bits_per_second", bottleneck->rate_bits_per_second},
                         {"burst_bytes", bottleneck->burst_bytes},
                         {"latency", bottleneck->tbf.latency},
                         {"ingress", true}};
    Result<bool> checked = CheckCluster(o, *plan, *cluster, doc);
    if (!checked.ok()) {
      exit_code = Fail(checked.status());
    } else if (!*checked) {
      exit_code = Fail(UnavailableError("a host did not answer the ping"));
    }
  }
  if (exit_code == 0) {
    bench::ClusterRunConfig run{.workload = o.workload,
                                .workload_dir = o.workload_dir,
                                .max_message = o.max_message,
                                .response_size = o.response_size,
                                .load = o.load,
                                .link_rate = o.link_rate,
                                .link_bps = static_cast<uint64_t>(plan->link_rate_bps),
                                .priority_levels = o.priorities,
                                .settings = o.settings,
                                .duration_ns = plan->duration_ns,
                                .duration = o.duration,
                                .threads = o.threads,
                                .max_outstanding = o.max_outstanding,
                                .seed = o.seed,
                                .unloaded_per_size = o.unloaded_per_size,
                                .modes = o.modes,
                                .throughput_duration_ns = plan->throughput_duration_ns,
                                .throughput_duration = o.throughput_duration,
                                .throughput_in_flight = o.throughput_in_flight,
                                .out_dir = o.out_dir,
                                .progress = [&o](const std::string& line) { Progress(o, line); }};
    for (const std::string& p : o.protos) {
      if (std::find(run.protos.begin(), run.protos.end(), p) != run.protos.end()) {
        continue;  // once, also for "udp,kernel-udp" (the alias)
      }
      if (p != "grpc") {
        run.protos.push_back(p);
        continue;
      }
      // The gRPC node is a separate executable, built only with gRPC: a
      // run without it skips that series instead of failing.
      Result<std::string> self = bench::SelfExecutable();
      Result<std::string> grpc_node =
          self.ok() ? bench::FindGrpcNode(*self) : Result<std::string>(self.status());
      if (grpc_node.ok()) {
        run.protos.push_back(p);
        run.grpc_node = *grpc_node;
      } else {
        std::printf("grpc: %s, skipped\n", grpc_node.status().message().c_str());
      }
    }
    if (run.protos.empty()) {
      std::printf("no series to run\n");
    } else if (Status ran = bench::RunClusterWorkloads(*cluster, run); !ran.ok()) {
      exit_code = Fail(ran);
    }
  }
  if (Status written = WriteJson(o.out_dir, doc); !written.ok()) {
    exit_code = Fail(written);
  } else {
    std::printf("wrote %s/cluster.json\n", o.out_dir.c_str());
  }

  if (o.keep) {
    std::printf("--keep: cluster %s stays up (namespaces %s-*); the next `wharf bench cluster` "
                "removes it\n",
                cluster->tag().c_str(), cluster->tag().c_str());
    (*guard)->Unprotect(cluster->tag());
    (void)cluster.release();  // deliberately not destroyed
    return exit_code;
  }
  Progress(o, "taking the cluster down ...");
  const Status destroyed = cluster->Destroy();
  (*guard)->Unprotect(cluster->tag());
  if (!destroyed.ok()) return Fail(destroyed);
  std::printf("cluster %s removed\n", cluster->tag().c_str());
  return exit_code;
}

}  // namespace wharf::tools
