// The throughput phase of a `wharf bench cluster` series: the serve-only
// node on host 1, one closed-loop node per in-flight count on host 0, the
// CPU meters around each measured window, the rows, their JSON and table.
#include "bench/cluster_throughput.h"

#include <unistd.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "bench/cpu_usage.h"
#include "bench/node_summary.h"

namespace wharf::bench {
namespace {

constexpr int kClientHost = 0;
constexpr int kServerHost = 1;
// Between spawning a client and its start: it opens its endpoint meanwhile.
constexpr DurationNs kStartLeadNs = 1 * kNsPerSec;
// How long past its expected end a node may take before it is killed.
constexpr DurationNs kFinishGraceNs = 60 * kNsPerSec;

void SleepUntil(const Clock& clock, TimeNs until) {
  while (clock.NowNs() < until) {
    std::this_thread::sleep_for(
        std::chrono::nanoseconds(std::min<DurationNs>(until - clock.NowNs(), 50 * kNsPerMs)));
  }
}

// One in-flight count: the client node, the meters around its window.
// CPUs the /proc/stat "cpu" line sums over.
double MachineCpus() {
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<double>(n) : -1;
}

Result<ThroughputRow> RunOne(const BenchHosts& hosts, const ThroughputSeries& s,
                             const ThroughputConfig& c, const Clock& clock, int in_flight,
                             pid_t server_pid) {
  const int64_t start_at = clock.WallNs() + kStartLeadNs;
  std::vector<std::string> argv = s.node_argv(kClientHost, start_at);
  argv.insert(argv.end(), {"--closed-loop", std::to_string(in_flight), "--size",
                           std::to_string(c.bytes), "--peer", std::to_string(kServerHost),
                           "--duration", std::to_string(c.duration_ns) + "ns", "--warmup",
                           std::to_string(c.warmup_ns) + "ns", "--out", "/dev/null"});
  WHARF_ASSIGN_OR_RETURN(auto client, hosts.Spawn(kClientHost, argv));

  // The client's window on this process's monotonic clock (start_at is
  // wall-clock time, the one clock every namespace shares).
  const TimeNs window_start = clock.NowNs() + (start_at - clock.WallNs()) + c.warmup_ns;
  const TimeNs window_end = window_start + c.duration_ns;
  CpuMeter server_cpu({server_pid});
  CpuMeter daemon_cpu(s.daemon_pids);
  SleepUntil(clock, window_start);
  server_cpu.Start();
  if (!s.daemon_pids.empty()) daemon_cpu.Start();
  const Result<MachineCpu> machine_start = ReadMachineCpu();
  SleepUntil(clock, window_end);
  const double busy = BusyFraction(machine_start, ReadMachineCpu());
  ThroughputRow row{
      .label = s.label, .proto = s.proto, .mode = s.mode, .in_flight = in_flight, .bytes = c.bytes};
  row.server_cpu_ns = server_cpu.Stop();
  if (!s.daemon_pids.empty()) row.daemon_cpu_ns = daemon_cpu.Stop();
  if (busy >= 0 && MachineCpus() > 0) row.cpus_busy = busy * MachineCpus();

  WHARF_ASSIGN_OR_RETURN(nlohmann::json summary,
                         WaitForNodeSummary(*client, "client node on host 0", kFinishGraceNs));
  row.client_summary = summary.dump();
  row.rpcs = summary.value("rpcs", uint64_t{0});
  row.failed = summary.value("failed", uint64_t{0});
  row.elapsed_ns = summary.value("elapsed_ns", DurationNs{0});
  row.rpc_per_sec = summary.value("rpc_per_sec", 0.0);
  row.p50_us = static_cast<double>(summary.value("p50_ns", DurationNs{0})) / 1e3;
  row.p99_us = static_cast<double>(summary.value("p99_ns", DurationNs{0})) / 1e3;
  row.client_cpu_ns = summary.value("cpu_ns", DurationNs{-1});

  row.cpu_includes = {"client node h0", "server node h1"};
  DurationNs cpu =
      row.client_cpu_ns < 0 || row.server_cpu_ns < 0 ? -1 : row.client_cpu_ns + row.server_cpu_ns;
  if (!s.daemon_pids.empty()) {
    row.cpu_includes.insert(row.cpu_includes.end(), {"wharfd h0", "wharfd h1"});
    cpu = cpu < 0 || row.daemon_cpu_ns < 0 ? -1 : cpu + row.daemon_cpu_ns;
  }
  row.total_cpu_ns = cpu;
  if (cpu >= 0 && row.rpcs > 0) {
    row.cpu_ns_per_rpc = static_cast<double>(cpu) / static_cast<double>(row.rpcs);
  }
  if (row.rpcs == 0 && s.progress) {
    s.progress(s.label + ": " + std::to_string(in_flight) +
               " in flight: no RPC answered: " + summary.value("first_error", std::string()));
  }
  return row;
}

}  // namespace

Result<std::vector<ThroughputRow>> RunThroughputPhase(const BenchHosts& hosts,
                                                      const ThroughputSeries& s,
                                                      const ThroughputConfig& c,
                                                      const Clock& clock) {
  std::vector<ThroughputRow> rows;
  if (c.duration_ns <= 0 || c.in_flight.empty()) return rows;
  // The server serves until killed (its --duration only has to outlast the
  // clients); it starts now, and the first client a lead later.
  std::vector<std::string> server_argv = s.node_argv(kServerHost, clock.WallNs());
  server_argv.insert(server_argv.end(),
                     {"--threads", "0", "--duration", "3600s", "--out", "/dev/null"});
  WHARF_ASSIGN_OR_RETURN(auto server, hosts.Spawn(kServerHost, server_argv));
  for (int n : c.in_flight) {
    if (s.progress) {
      s.progress(s.label + ": throughput, " + std::to_string(c.bytes) + " B RPCs h0 -> h1, " +
                 std::to_string(n) + " in flight, " + std::to_string(c.duration_ns / kNsPerMs) +
                 " ms ...");
    }
    Result<ThroughputRow> row = RunOne(hosts, s, c, clock, n, server->pid());
    if (!row.ok()) {
      server->Kill();
      return row.status().WithContext(std::to_string(n) + " in flight");
    }
    rows.push_back(std::move(row).value());
  }
  server->Kill();
  return rows;
}

std::string ThroughputRowsJson(const std::vector<ThroughputRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const ThroughputRow& r : rows) {
    nlohmann::json client = nlohmann::json::parse(r.client_summary, nullptr, false);
    out.push_back({{"label", r.label},
                   {"proto", r.proto},
                   {"mode", r.mode},
                   {"in_flight", r.in_flight},
                   {"bytes", r.bytes},
                   {"rpcs", r.rpcs},
                   {"elapsed_ns", r.elapsed_ns},
                   {"rpc_per_sec", r.rpc_per_sec},
                   {"p50_us", r.p50_us},
                   {"p99_us", r.p99_us},
                   {"cpu_ns_per_rpc", r.cpu_ns_per_rpc},
                   {"total_cpu_ns", r.total_cpu_ns},
                   {"cpus_busy", r.cpus_busy},
                   {"cpu_includes", r.cpu_includes},
                   {"client_cpu_ns", r.client_cpu_ns},
                   {"server_cpu_ns", r.server_cpu_ns},
                   {"daemon_cpu_ns", r.daemon_cpu_ns},
                   {"failed", r.failed},
                   {"client", client.is_discarded() ? nlohmann::json() : client}});
  }
  return out.dump();
}

void PrintThroughputTable(const std::vector<ThroughputRow>& rows, const std::string& link_rate) {
  if (rows.empty()) return;
  std::printf(
      "\nRPC throughput, %llu B, host 0 -> host 1 (closed loop, the %s bottleneck lifted "
      "from their links; CPU: both nodes + wharfds when managed):\n",
      static_cast<unsigned long long>(rows.front().bytes), link_rate.c_str());
  std::printf("%-22s %9s %12s %10s %10s %12s %8s\n", "series", "in flight", "RPC/s", "P50 us",
              "P99 us", "CPU ns/RPC", "failed");
  for (const ThroughputRow& r : rows) {
    std::printf("%-22s %9d %12.0f %10.1f %10.1f %12.0f %8llu\n", r.label.c_str(), r.in_flight,
                r.rpc_per_sec, r.p50_us, r.p99_us, r.cpu_ns_per_rpc,
                static_cast<unsigned long long>(r.failed));
  }
  std::fflush(stdout);
}

}  // namespace wharf::bench
