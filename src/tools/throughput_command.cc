// `wharf bench throughput`: flags, checks, signal guard, progress, output.
#include "tools/throughput_command.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>

#include "base/clock.h"
#include "netns/netns_cluster.h"
#include "bench/bench_daemon.h"
#include "bench/cluster_check.h"
#include "bench/cluster_guard.h"
#include "bench/cluster_runner.h"
#include "bench/throughput_report.h"
#include "bench/throughput_runner.h"

namespace wharf::tools {
namespace {

constexpr int kExitSkip = 77;

void Progress(const bench::ThroughputOptions& o, const std::string& text) {
  if (o.no_progress) return;
  std::fprintf(stderr, "[bench throughput] %s\n", text.c_str());
  std::fflush(stderr);
}

int Fail(const Status& status, int code = 1) {
  std::fprintf(stderr, "wharf bench throughput: %s\n", status.ToString().c_str());
  return code;
}

bool Wants(const bench::ThroughputPlan& plan, const std::string& what) {
  for (const std::string& p : plan.paths) {
    if (p == what) return true;
  }
  for (const bench::ThroughputSeriesSpec& s : plan.series) {
    if (s.proto == what) return true;
  }
  return false;
}

}  // namespace

CLI::App* AddBenchThroughputCommand(CLI::App& bench, bench::ThroughputOptions& o) {
  CLI::App* t = bench.add_subcommand(
      "throughput",
      "Throughput between two processes, as ratios against baselines measured in the same run "
      "(issue 12): RPCs of --size bytes with each --in-flight count kept in flight over "
      "homa:// and tcp:// (embedded, and managed through one wharfd per side), RPC/s, P50/P99 "
      "and CPU per RPC beside gRPC's RPC/s; and --goodput-size requests one way (1-byte "
      "responses), Gbit/s of payload and CPU per MiB beside one iperf3 TCP stream on the same "
      "path. Paths: loopback (127.0.0.1 -> 127.0.0.2 in this namespace) and veth (two network "
      "namespaces on one veth pair of --mtu; needs root). The client side runs on "
      "--client-cpu, the server side on --server-cpu. wharf keeps its default settings "
      "(--set changes them). Every series and iperf3 run once per round, --rounds times in "
      "turn; rows are medians, ratios the median of the rounds' ratios. Everything started is "
      "stopped at the end, on a failure and on Ctrl-C. Tables on stdout, everything in --json "
      "FILE. Example (the issue-12 run, about 12 minutes):\n"
      "  wharf bench throughput --path loopback,veth --proto homa,tcp,grpc,grpc-sync "
      "--mode embedded,managed --in-flight 1,32,256 --duration 2s --goodput-seconds 3 "
      "--rounds 3 --json throughput.json");
  t->add_option("--path", o.paths,
                "Where the two sides run, comma-separated: loopback (this namespace, 127.0.0.1 "
                "and 127.0.0.2) and/or veth (a network namespace each, joined by one veth pair)")
      ->capture_default_str()
      ->delimiter(',')
      ->check(CLI::IsMember({"loopback", "veth"}));
  t->add_option("--mtu", o.mtu, "MTU of the veth pair")->capture_default_str()->check(
      CLI::Range(576, 65535));
  t->add_option("--proto", o.protos,
                "Series, comma-separated: homa (wharf homa://), homa-typed (wharf homa:// through "
                "the code protoc-gen-wharf generates from the gRPC series' echo.proto: typed "
                "calls beside raw ones and beside gRPC; run by wharf-grpc-node), tcp (wharf "
                "tcp://), grpc (gRPC "
                "C++, wharf-grpc-node beside wharf, completion-queue server: the RPC baseline; "
                "skipped when absent), grpc-sync (the same client against gRPC's synchronous "
                "server API with its defaults, as a new user writes it), kernel-udp and "
                "kernel-tcp (plain kernel sockets, extra baselines)")
      ->capture_default_str()
      ->delimiter(',')
      ->transform(CLI::Transformer(std::map<std::string, std::string>{{"udp", "kernel-udp"}}))
      ->check(CLI::IsMember(
          {"homa", "homa-typed", "tcp", "grpc", "grpc-sync", "kernel-udp", "kernel-tcp"}));
  t->add_option("--mode", o.modes,
                "How wharf runs, comma-separated: embedded (in the process) or managed (through "
                "a wharfd per side, on that side's CPU and address); homa and tcp only")
      ->capture_default_str()
      ->delimiter(',')
      ->check(CLI::IsMember({"embedded", "managed"}));
  t->add_option("--size", o.size, "RPC rows: request and response bytes")->capture_default_str();
  t->add_option("--in-flight", o.in_flight, "RPC rows: RPCs kept in flight, comma-separated")
      ->capture_default_str()
      ->delimiter(',')
      ->check(CLI::Range(1, 65536));
  t->add_option("--duration", o.duration, "RPC rows: measured window of each row (e.g. 5s)")
      ->capture_default_str();
  t->add_option("--warmup", o.warmup, "Unmeasured time before each row's window")
      ->capture_default_str();
  t->add_option("--goodput-size", o.goodput_size,
                "Goodput rows: request bytes (e.g. 1MiB); each answered with 1 byte")
      ->capture_default_str();
  t->add_option("--goodput-in-flight", o.goodput_in_flight,
                "Goodput rows: requests kept in flight, comma-separated")
      ->capture_default_str()
      ->delimiter(',')
      ->check(CLI::Range(1, 65536));
  t->add_option("--goodput-seconds", o.goodput_seconds,
                "Goodput rows and the iperf3 stream: seconds measured")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  t->add_option("--rounds", o.rounds,
                "Measure every series (and iperf3) once per round, this many rounds in turn; "
                "each row is its median round, each ratio the median of the rounds' ratios, so a "
                "machine whose speed drifts over minutes moves a row and its baseline alike")
      ->capture_default_str()
      ->check(CLI::Range(1, 20));
  t->add_flag("--no-rpc", o.no_rpc, "Skip the RPC rows");
  t->add_flag("--no-goodput", o.no_goodput, "Skip the goodput rows and iperf3");
  t->add_option("--client-cpu", o.client_cpu,
                "CPU of the client side (client node, its wharfd, iperf3 -c)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1023));
  t->add_option("--server-cpu", o.server_cpu,
                "CPU of the server side (server node, its wharfd, iperf3 -s)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1023));
  t->add_flag("--no-pin", o.no_pin, "Leave every process to the scheduler");
  t->add_option("--set", o.settings,
                "KEY=VALUE: a wharf setting for every wharf endpoint and wharfd "
                "(docs/configuration.md); repeatable. Default: none, wharf as a user runs it")
      ->allow_extra_args(false);
  t->add_option("--iperf3", o.iperf3_binary, "The iperf3 program")->capture_default_str();
  t->add_option("--json", o.json_path, "Also write everything as JSON to this file");
  t->add_flag("--no-progress", o.no_progress, "No progress lines on stderr");
  return t;
}

int RunBenchThroughput(const bench::ThroughputOptions& o) {
  Result<bench::ThroughputPlan> plan = bench::PlanThroughput(o);
  if (!plan.ok()) return Fail(plan.status(), 2);
  const bool veth = Wants(*plan, "veth");
  if (veth) {
    if (Status supported = netns::NetnsCluster::CheckSupported(); !supported.ok()) {
      std::fprintf(stderr,
                   "wharf bench throughput: --path veth needs root and network namespaces (%s); "
                   "run as root, or with --path loopback\n",
                   supported.ToString().c_str());
      return kExitSkip;
    }
  }
  bench::ThroughputRunConfig run{.plan = *plan,
                                 .settings = o.settings,
                                 .iperf3_binary = o.iperf3_binary,
                                 .progress = [&o](const std::string& line) { Progress(o, line); }};
  Result<std::string> self = bench::SelfExecutable();
  if (!self.ok()) return Fail(self.status());
  run.self = *self;
  if (Wants(*plan, "grpc") || Wants(*plan, "grpc-sync") || Wants(*plan, "homa-typed")) {
    Result<std::string> grpc = bench::FindGrpcNode(*self);
    if (grpc.ok()) {
      run.grpc_node = *grpc;
    } else {
      run.grpc_missing = std::string(grpc.status().message());
      std::printf("grpc, homa-typed: %s, skipped\n", run.grpc_missing.c_str());
    }
  }
  if (!plan->pin.note.empty()) std::printf("%s\n", plan->pin.note.c_str());

  // From here Ctrl-C removes the veth pair's namespaces (the children die
  // with this process).
  Result<std::unique_ptr<bench::ClusterGuard>> guard = bench::ClusterGuard::Install();
  if (!guard.ok()) return Fail(guard.status());
  if (veth) {
    std::vector<std::string> swept;
    if (Status status = bench::SweepStaleBenchClusters(&swept); !status.ok()) {
      std::fprintf(stderr, "wharf bench throughput: warning: %s\n", status.ToString().c_str());
    }
    if (!swept.empty()) {
      std::printf("removed %zu namespace(s) left by an earlier run that did not finish\n",
                  swept.size());
    }
  }
  run.on_cluster = [&guard](const std::string& tag, bool up) {
    if (up) {
      (*guard)->Protect(tag);
    } else {
      (*guard)->Unprotect(tag);
    }
  };

  Result<bench::ThroughputReport> report = bench::RunThroughput(run, SystemClock::Get());
  if (!report.ok()) return Fail(report.status());
  std::fputs(bench::FormatThroughputReport(*report).c_str(), stdout);
  std::fflush(stdout);
  int exit_code = 0;
  for (const bench::ThroughputPathResult& p : report->paths) {
    if (!p.errors.empty()) exit_code = 1;
  }
  if (!o.json_path.empty()) {
    std::ofstream file(o.json_path);
    file << bench::ThroughputReportJson(*report) << "\n";
    file.close();
    if (!file) {
      exit_code = Fail(InternalError("writing " + o.json_path + " failed"));
    } else {
      std::printf("wrote %s\n", o.json_path.c_str());
    }
  }
  return exit_code;
}

}  // namespace wharf::tools
