// `wharf bench cluster-node`: one host's echo server and client threads.
#include "bench/cluster_node.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/config_value.h"
#include "netns/bottleneck.h"
#include "bench/arrivals.h"
#include "bench/cluster_load.h"
#include "bench/cluster_samples.h"
#include "bench/cluster_transports.h"
#include "bench/cpu_usage.h"
#include "bench/latency_stats.h"
#include "bench/workload.h"

namespace wharf::bench {
namespace {

std::vector<std::string> SplitCommas(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

struct NodePlan {
  NodeTransportConfig transport;
  Workload workload = Workload::Fixed(1);
  ArrivalConfig arrivals;
  DurationNs duration_ns = 0;
  DurationNs drain_ns = 0;
};

}  // namespace

Result<NodeTransportConfig> NodeTransportFromOptions(const ClusterNodeOptions& o) {
  NodeTransportConfig t{.proto = o.proto,
                        .managed = o.mode == "managed",
                        .daemon_socket = o.daemon_socket,
                        .addresses = SplitCommas(o.addresses),
                        .port = o.port,
                        .host = o.host,
                        .response_bytes = o.response_size,
                        .endpoint_defaults = o.endpoint_defaults};
  for (const std::string& setting : o.settings) {
    const size_t eq = setting.find('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidArgumentError("--set " + setting + ": expected KEY=VALUE");
    }
    t.settings.emplace_back(setting.substr(0, eq), setting.substr(eq + 1));
  }
  if (o.link_rate != "default") {
    Result<int64_t> bps = netns::ParseRateBitsPerSecond(o.link_rate);
    if (!bps.ok()) return bps.status().WithContext("--link-rate");
    if (*bps < 0) return InvalidArgumentError("--link-rate " + o.link_rate + " is negative");
    t.link_bps = static_cast<uint64_t>(*bps);
  }
  return t;
}

namespace {

Result<NodePlan> Plan(const ClusterNodeOptions& o) {
  NodePlan plan;
  WHARF_ASSIGN_OR_RETURN(plan.transport, NodeTransportFromOptions(o));
  const int hosts = static_cast<int>(plan.transport.addresses.size());
  if (hosts < 2) return InvalidArgumentError("--addresses: expected at least 2 hosts");
  if (o.host < 0 || o.host >= hosts) return InvalidArgumentError("--host is not in --addresses");
  if (o.unloaded && (o.peer < 0 || o.peer >= hosts || o.peer == o.host)) {
    return InvalidArgumentError("--peer must be another host");
  }
  if (plan.transport.managed && o.daemon_socket.empty()) {
    return InvalidArgumentError("--mode managed needs --daemon-socket");
  }
  WHARF_ASSIGN_OR_RETURN(
      Workload w, Workload::FromSpec(o.workload, o.workload_dir.empty() ? DefaultWorkloadDir()
                                                                       : o.workload_dir));
  plan.workload = w.Truncated(o.max_message);
  // An open-loop run needs the rate (ArrivalGenerator refuses 0); closed
  // loops and servers do not.
  plan.arrivals = {.load = o.load,
                   .link_bps = plan.transport.link_bps,
                   .hosts = hosts,
                   .client_threads = std::max(1, o.threads)};
  if (o.response_size > 0) {
    // The offered load counts the fixed responses, not echoes.
    plan.arrivals.response = ResponseSize::kFixed;
    plan.arrivals.fixed_response_bytes = o.response_size;
  }
  WHARF_ASSIGN_OR_RETURN(plan.duration_ns, ParseDuration(o.duration));
  WHARF_ASSIGN_OR_RETURN(plan.drain_ns, ParseDuration(o.drain));
  return plan;
}

int Fail(const Status& s) {
  std::fprintf(stderr, "wharf bench cluster-node: %s\n", s.ToString().c_str());
  return 1;
}

// Sleeps until `start_ns` on `clock`.
void SleepUntil(const Clock& clock, TimeNs start_ns) {
  while (clock.NowNs() < start_ns) {
    const DurationNs left = start_ns - clock.NowNs();
    std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<DurationNs>(left, 50 * kNsPerMs)));
  }
}

// --closed-loop N: one client thread, N RPCs in flight to --peer; the
// summary line holds the RPC rate, its latency and this process's CPU over
// the measured window. The peer runs a `--threads 0` node.
int RunClosedLoopNode(const ClusterNodeOptions& o, const ClusterNodeTransports& factories) {
  Result<NodePlan> planned = Plan(o);
  if (!planned.ok()) return Fail(planned.status());
  const NodePlan& plan = *planned;
  const int hosts = static_cast<int>(plan.transport.addresses.size());
  if (o.peer < 0 || o.peer >= hosts || o.peer == o.host) {
    return Fail(InvalidArgumentError("--peer must be another host"));
  }
  Result<DurationNs> warmup_ns = ParseDuration(o.warmup);
  if (!warmup_ns.ok()) return Fail(warmup_ns.status().WithContext("--warmup"));
  const Clock& clock = SystemClock::Get();
  Result<std::unique_ptr<LoadTransport>> transport = factories.open_load_transport(
      plan.transport, clock, std::max(o.max_outstanding, o.closed_loop));
  if (!transport.ok()) return Fail(transport.status().WithContext("client endpoint"));
  Result<DurationNs> cpu_start = UnavailableError("window never opened");
  Result<DurationNs> cpu_end = UnavailableError("window never closed");
  const ClosedLoopOptions loop{.server = o.peer,
                               .bytes = o.size,
                               .in_flight = o.closed_loop,
                               .warmup_ns = *warmup_ns,
                               .duration_ns = plan.duration_ns,
                               .window_opened = [&] { cpu_start = ProcessCpuNs(0); },
                               .window_closed = [&] { cpu_end = ProcessCpuNs(0); }};
  // Before the start: the window begins at start + warmup for the runner too.
  ClosedLoopResult prepared = PrepareClosedLoop(loop);
  SleepUntil(clock, clock.NowNs() + (o.start_at_ns - clock.WallNs()));
  ClosedLoopResult r = RunClosedLoop(**transport, clock, loop, std::move(prepared));
  std::sort(r.rtt_ns.begin(), r.rtt_ns.end());
  const double seconds = static_cast<double>(r.elapsed_ns) / kNsPerSec;
  nlohmann::json summary = {
      {"host", o.host},
      {"proto", o.proto},
      {"mode", o.mode},
      {"closed_loop", o.closed_loop},
      {"peer", o.peer},
      {"bytes", o.size},
      {"response_bytes", o.response_size > 0 ? o.response_size : o.size},
      {"rpcs", r.rpcs},
      {"elapsed_ns", r.elapsed_ns},
      {"rpc_per_sec", seconds > 0 ? static_cast<double>(r.rpcs) / seconds : 0.0},
      {"p50_ns", LatencyStats::Percentile(r.rtt_ns, 50)},
      {"p99_ns", LatencyStats::Percentile(r.rtt_ns, 99)},
      {"cpu_ns", cpu_start.ok() && cpu_end.ok() ? *cpu_end - *cpu_start : -1},
      {"failed", r.failed},
      {"timed_out", r.timed_out},
      {"issued", r.issued},
      {"unfinished", r.unfinished},
      {"max_in_flight", r.max_in_flight},
      {"first_error", (*transport)->first_error()}};
  // The transport's counters at the end (wharf: homa.*, udp.*, tcp.*), for
  // telling what a row's sockets did (GSO sends, retransmissions...).
  nlohmann::json counters = nlohmann::json::object();
  for (const auto& [name, value] : (*transport)->Counters()) counters[name] = value;
  if (!counters.empty()) summary["counters"] = counters;
  std::printf("summary %s\n", summary.dump().c_str());
  std::fflush(stdout);
  return 0;
}

}  // namespace

ClusterNodeTransports BuiltinClusterNodeTransports() {
  return {.start_echo_server = StartEchoServer, .open_load_transport = OpenLoadTransport};
}

void AddClusterNodeFlags(CLI::App& node, ClusterNodeOptions& o,
                         const std::vector<std::string>& protos) {
  node.add_option("--proto", o.proto, "Protocol")->capture_default_str()->check(
      CLI::IsMember(protos));
  node.add_option("--mode", o.mode, "wharf: embedded, or managed (through --daemon-socket)")
      ->capture_default_str()
      ->check(CLI::IsMember({"embedded", "managed"}));
  node.add_option("--daemon-socket", o.daemon_socket, "The host's wharfd (managed)");
  node.add_option("--host", o.host, "This node's index in --addresses")->required();
  node.add_option("--addresses", o.addresses, "Every host's IPv4 address, comma-separated")
      ->required();
  node.add_option("--port", o.port, "Every host's server port")->capture_default_str();
  node.add_option("--workload", o.workload, "w1..w5 or a message size")->capture_default_str();
  node.add_option("--workload-dir", o.workload_dir, "Directory of w1.csv..w5.csv");
  node.add_option("--max-message", o.max_message, "Cut longer messages to this (0: no limit)")
      ->capture_default_str();
  node.add_option("--response-size", o.response_size,
                  "Bytes of every response (0: echo the request's size)")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{0}, uint64_t{16} << 20));
  node.add_option("--load", o.load, "Offered load, a fraction of --link-rate")
      ->capture_default_str();
  node.add_option("--link-rate", o.link_rate,
                  "Host link rate (tc units or bits/s); 'default' or 0 leaves homa's link rate "
                  "to wharf (closed loop and serving only: the open loop needs a rate)")
      ->capture_default_str();
  node.add_flag("--endpoint-defaults", o.endpoint_defaults,
                "wharf endpoints keep wharf's default settings (else they sleep when idle: "
                "endpoint.spin=0)");
  node.add_option("--threads", o.threads, "Client threads (0: serve only)")
      ->capture_default_str()
      ->check(CLI::Range(0, 64));
  node.add_option("--max-outstanding", o.max_outstanding, "RPCs in flight per client thread")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  node.add_option("--start-at", o.start_at_ns, "Start time, CLOCK_REALTIME ns (default: now)");
  node.add_option("--duration", o.duration, "Issuing window")->capture_default_str();
  node.add_option("--drain", o.drain, "Wait this long for answers after the window")
      ->capture_default_str();
  node.add_option("--seed", o.seed, "Seed of the arrival schedule")->capture_default_str();
  node.add_flag("--unloaded", o.unloaded, "One RPC at a time to --peer over a size ladder");
  node.add_option("--peer", o.peer, "--unloaded: the server's host index")->capture_default_str();
  node.add_option("--per-size", o.per_size, "--unloaded: RPCs per size")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  node.add_option("--out", o.out, "Sample file (WBCSMP01; not written with --closed-loop)")
      ->required();
  node.add_option("--set", o.settings, "KEY=VALUE: a wharf setting of the node's endpoints")
      ->allow_extra_args(false);
  node.add_option("--closed-loop", o.closed_loop,
                  "Instead of the workload: N RPCs of --size always in flight to --peer")
      ->check(CLI::Range(0, 1 << 16));
  node.add_option("--size", o.size, "--closed-loop: request and echo bytes")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, uint64_t{16} << 20));
  node.add_option("--warmup", o.warmup, "--closed-loop: unmeasured time before the window")
      ->capture_default_str();
}

CLI::App* AddBenchClusterNodeCommand(CLI::App& bench, ClusterNodeOptions& o) {
  CLI::App* node = bench.add_subcommand(
      "cluster-node", "One host of `wharf bench cluster` (internal; docs/benchmarks.md)");
  node->group("");  // hidden
  AddClusterNodeFlags(*node, o, {"homa", "tcp", "kernel-udp", "kernel-tcp"});
  return node;
}

int RunBenchClusterNode(const ClusterNodeOptions& o, const ClusterNodeTransports& factories) {
  if (o.closed_loop > 0) return RunClosedLoopNode(o, factories);
  Result<NodePlan> planned = Plan(o);
  if (!planned.ok()) return Fail(planned.status());
  const NodePlan& plan = *planned;
  const Clock& clock = SystemClock::Get();

  Result<std::unique_ptr<EchoServer>> server = factories.start_echo_server(plan.transport);
  if (!server.ok()) return Fail(server.status().WithContext("echo server"));

  // The run's start on the monotonic clock (--start-at is wall-clock time,
  // the one clock every namespace shares; absent: now).
  const int64_t wall_ns = clock.WallNs();
  const TimeNs start_ns = clock.NowNs() + (o.start_at_ns > 0 ? o.start_at_ns - wall_ns : 0);
  const int threads = o.unloaded ? std::min(o.threads, 1) : o.threads;
  std::vector<std::unique_ptr<LoadTransport>> transports;
  std::vector<ArrivalGenerator> generators;
  for (int t = 0; t < threads; ++t) {
    Result<std::unique_ptr<LoadTransport>> tr =
        factories.open_load_transport(plan.transport, clock, o.max_outstanding);
    if (!tr.ok()) return Fail(tr.status().WithContext("client endpoint"));
    transports.push_back(std::move(tr).value());
    if (!o.unloaded) {
      Result<ArrivalGenerator> g =
          ArrivalGenerator::Create(plan.arrivals, plan.workload, o.host, t, o.seed);
      if (!g.ok()) return Fail(g.status());
      generators.push_back(std::move(g).value());
    }
  }

  const OpenLoopOptions open_loop{.start_ns = start_ns,
                                  .duration_ns = plan.duration_ns,
                                  .drain_ns = plan.drain_ns,
                                  .max_outstanding = o.max_outstanding,
                                  .response_bytes = o.response_size};
  // The samples' room is made (and its pages touched) before the start.
  std::vector<LoadResult> results(static_cast<size_t>(threads));
  for (size_t t = 0; t < generators.size(); ++t) {
    results[t] = PrepareOpenLoop(generators[t], open_loop);
  }

  // Everything is open: wait for the common start.
  SleepUntil(clock, start_ns);
  const Result<DurationNs> cpu_start = ProcessCpuNs(0);

  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      if (o.unloaded) {
        results[t] = RunUnloaded(*transports[t], clock,
                                 {.server = o.peer,
                                  .sizes = UnloadedSizes(plan.workload),
                                  .per_size = o.per_size,
                                  .response_bytes = o.response_size});
      } else {
        results[t] = RunOpenLoop(generators[t], *transports[t], clock, open_loop,
                                 std::move(results[t]));
      }
    });
  }
  for (std::thread& w : workers) w.join();
  const TimeNs measured_end = clock.NowNs();
  // Serve the other hosts' stragglers until their drain is over too.
  if (!o.unloaded) {
    const TimeNs serve_until = start_ns + plan.duration_ns + 2 * plan.drain_ns;
    SleepUntil(clock, serve_until);
  }
  const Result<DurationNs> cpu_end = ProcessCpuNs(0);
  (*server)->Stop();

  std::vector<RpcSample> samples;
  std::vector<DurationNs> lateness;
  LoadCounters total;
  for (LoadResult& r : results) {
    samples.insert(samples.end(), r.samples.begin(), r.samples.end());
    lateness.insert(lateness.end(), r.lateness_ns.begin(), r.lateness_ns.end());
    total.issued += r.counters.issued;
    total.issued_bytes += r.counters.issued_bytes;
    total.completed += r.counters.completed;
    total.failed += r.counters.failed;
    total.dropped += r.counters.dropped;
    total.unfinished += r.counters.unfinished;
  }
  if (Status s = WriteSampleFile(o.out, samples); !s.ok()) return Fail(s);
  const Lateness late = SummarizeLateness(lateness);
  std::string first_error;
  for (const auto& t : transports) {
    if (first_error.empty()) first_error = t->first_error();
  }
  nlohmann::json summary = {
      {"host", o.host},
      {"proto", o.proto},
      {"mode", o.mode},
      {"unloaded", o.unloaded},
      {"issued", total.issued},
      {"issued_bytes", total.issued_bytes},
      {"completed", total.completed},
      {"failed", total.failed},
      {"dropped", total.dropped},
      {"unfinished", total.unfinished},
      {"late_ns_p99", late.p99_ns},
      {"late_ns_max", late.max_ns},
      {"cpu_ns", cpu_start.ok() && cpu_end.ok() ? *cpu_end - *cpu_start : -1},
      {"first_error", first_error},
      {"server_counters", (*server)->counters()},
      {"measured_ns", o.unloaded ? measured_end - start_ns : plan.duration_ns}};
  std::printf("summary %s\n", summary.dump().c_str());
  std::fflush(stdout);
  return 0;
}

}  // namespace wharf::bench
