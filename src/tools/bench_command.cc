// `wharf bench baseline`: flags, progress line and output of the kernel
// baselines; the measuring is in bench/.
#include "tools/bench_command.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "base/clock.h"
#include "bench/iperf3_runner.h"
#include "bench/ucx_perftest_runner.h"
#include "bench/managed_pingpong.h"
#include "bench/probe_floor.h"
#include "bench/report.h"
#include "bench/shm_pingpong.h"
#include "bench/wharf_pingpong.h"
#include "bench/tcp_pingpong.h"
#include "bench/udp_pingpong.h"
#include "tools/progress_line.h"

namespace wharf::tools {
namespace {

using bench::PingPongProgress;

// "udp block 64 B: 1,000 / 10,000 round trips, 1.2 s"
std::string ProgressText(const std::string& name, const PingPongProgress& p) {
  char elapsed[32];
  std::snprintf(elapsed, sizeof elapsed, "%.1f s", static_cast<double>(p.elapsed_ns) / kNsPerSec);
  return name + ": " + bench::WithThousands(p.done) + " / " + bench::WithThousands(p.total) +
         " round trips, " + elapsed;
}

DurationNs SecondsToNs(double seconds) { return static_cast<DurationNs>(seconds * kNsPerSec); }

bool IsWharf(const std::string& proto) { return proto.rfind("wharf", 0) == 0; }
bool IsManaged(const std::string& proto) { return proto.find("-managed") != std::string::npos; }
bool IsRemote(const std::string& proto) {
  return proto.size() > 7 && proto.compare(proto.size() - 7, 7, "-remote") == 0;
}

// The transport a wharf row uses: "wharf*" is homa://, "wharf-tcp*" tcp://,
// "wharf-ucx*" ucx://.
std::string WharfScheme(const std::string& proto) {
  if (proto.rfind("wharf-tcp", 0) == 0) return "tcp";
  if (proto.rfind("wharf-ucx", 0) == 0) return "ucx";
  return "homa";
}

// The embedded proto a managed one is compared with.
std::string EmbeddedOf(const std::string& proto) {
  const std::string scheme = WharfScheme(proto);
  return scheme == "homa" ? "wharf" : "wharf-" + scheme;
}

// One-sided writes in flight in the wharf-ucx put goodput row.
constexpr int kPutWindow = 16;

// One wharf goodput run: which proto it was for, and its result.
using WharfGoodputs = std::vector<std::pair<std::string, bench::GoodputResult>>;

// UCX's transport and devices for every UCX user of this run (the wharf-ucx
// rows, their wharfd, ucx_perftest): UCX_TLS and UCX_NET_DEVICES from the
// environment, or tcp on loopback when unset, set here so that children
// inherit them. Returns "UCX_TLS=... UCX_NET_DEVICES=...".
std::string PinUcxTransport() {
  if (std::getenv("UCX_TLS") == nullptr) ::setenv("UCX_TLS", "tcp", 1);
  if (std::getenv("UCX_NET_DEVICES") == nullptr) ::setenv("UCX_NET_DEVICES", "lo", 1);
  return std::string("UCX_TLS=") + std::getenv("UCX_TLS") +
         " UCX_NET_DEVICES=" + std::getenv("UCX_NET_DEVICES");
}

// ucx_perftest's rows (--ucx-perftest) and the wharf-ucx rows' ratios to
// them: round trip (2 x ucx_perftest's one-way p50) and 1 MiB bandwidth.
int RunUcxPerftestRows(const BenchBaselineOptions& o, const bench::BaselineReport& report,
                       const WharfGoodputs& goodputs, const WharfGoodputs& put_goodputs,
                       const std::string& ucx_env, const Clock& clock) {
  int failures = 0;
  auto run = [&](const std::string& test, uint64_t size, uint64_t iterations)
      -> std::optional<bench::UcxPerftestResult> {
    if (!o.no_progress) {
      std::fprintf(stderr, "ucx_perftest %s %llu B...\n", test.c_str(),
                   static_cast<unsigned long long>(size));
    }
    auto r = bench::RunUcxPerftest({.address = o.address,
                                    .test = test,
                                    .size_bytes = size,
                                    .iterations = iterations,
                                    .tls = std::getenv("UCX_TLS"),
                                    .devices = std::getenv("UCX_NET_DEVICES"),
                                    .pin = !o.no_pin,
                                    .client_cpu = o.client_cpu,
                                    .server_cpu = o.server_cpu},
                                   clock);
    if (!r.ok()) {
      std::fprintf(stderr, "wharf bench: %s\n", r.status().ToString().c_str());
      ++failures;
      return std::nullopt;
    }
    return *r;
  };
  std::printf("ucx_perftest (%s):\n", ucx_env.c_str());
  if (auto lat = run("ucp_am_lat", o.size_bytes, std::min<uint64_t>(o.iterations, 100'000))) {
    const double rtt_us = 2 * lat->p50_latency_us;
    std::printf("%-24s p50 round trip %.2f us (2 x one-way %.3f us), %llu B\n", "ucx_perftest am_lat",
                rtt_us, lat->p50_latency_us, static_cast<unsigned long long>(o.size_bytes));
    for (const auto& w : report.pingpong) {
      if (WharfScheme(w.proto) != "ucx" || w.size_bytes != o.size_bytes || rtt_us <= 0) continue;
      std::printf("ratio %s (%s) / ucx_perftest am_lat p50 round trip: %.2fx (target <= 1.3x)\n",
                  w.proto.c_str(), std::string(bench::WaitModeName(w.mode)).c_str(),
                  static_cast<double>(w.result.latency.p50_ns) / kNsPerUs / rtt_us);
    }
  }
  if (!o.goodput) return failures;
  for (const char* test : {"ucp_am_bw", "ucp_put_bw"}) {
    auto bw = run(test, 1 << 20, 2000);
    if (!bw) continue;
    const double gbits = bw->overall_bandwidth_mbs * 1e6 * 8 / 1e9;
    std::printf("%-24s %.2f Gbit/s (1 MiB messages, %llu of them)\n",
                (std::string("ucx_perftest ") + (test + 4)).c_str(), gbits,
                static_cast<unsigned long long>(bw->iterations));
    for (const auto& [proto, goodput] : goodputs) {
      if (WharfScheme(proto) != "ucx" || gbits <= 0) continue;
      std::printf("ratio %s goodput / ucx_perftest %s: %.2fx\n", proto.c_str(), test + 4,
                  goodput.bits_per_second / 1e9 / gbits);
    }
    for (const auto& [proto, put] : put_goodputs) {
      if (gbits <= 0 || std::string(test) != "ucp_put_bw") continue;
      std::printf("ratio %s put / ucx_perftest put_bw: %.2fx (target >= 0.9x)\n", proto.c_str(),
                  put.bits_per_second / 1e9 / gbits);
    }
  }
  return failures;
}

// "server", "client", "free" or a CPU number -> the CPU (-1: unpinned).
Result<int> DaemonCpu(const std::string& spec, const BenchBaselineOptions& o) {
  if (spec == "server") return o.server_cpu;
  if (spec == "client") return o.client_cpu;
  if (spec == "free") return -1;
  char* end = nullptr;
  const long cpu = std::strtol(spec.c_str(), &end, 10);
  if (spec.empty() || *end != '\0' || cpu < 0 || cpu > 1023) {
    return InvalidArgumentError("'" + spec + "': expected server, client, free or a CPU number");
  }
  return static_cast<int>(cpu);
}


// "ratio a / b poll 64 B: p50 1.08x, p99 1.21x", and when the claim has a
// target, whether this run met it.
std::string RatioLine(const bench::PingPongRow& w, const bench::PingPongRow& b,
                      double target_p50 = 0, const char* target_op = "") {
  const auto& wl = w.result.latency;
  const auto& bl = b.result.latency;
  if (bl.p50_ns == 0 || bl.p99_ns == 0) return "";
  const double p50 = static_cast<double>(wl.p50_ns) / bl.p50_ns;
  char line[256];
  std::snprintf(line, sizeof(line), "ratio %s / %s: p50 %.2fx, p99 %.2fx", w.proto.c_str(),
                b.Name().c_str(), p50, static_cast<double>(wl.p99_ns) / bl.p99_ns);
  std::string out = line;
  if (target_p50 > 0) {
    const bool strict = std::string(target_op) == "<";
    const bool met = strict ? p50 < target_p50 : p50 <= target_p50;
    std::snprintf(line, sizeof(line), "; target p50 %s %.2fx: %s", target_op, target_p50,
                  met ? "met" : "missed");
    out += line;
  }
  return out + "\n";
}

// For every wharf row: ratios against each kernel/shm row of the same mode
// and size; managed rows also against the embedded row of their transport
// (the claims: same-host managed below UDP, remote managed within 1.5x of
// embedded). Then each wharf goodput over iperf3's and managed over
// embedded: the claims, as ratios from this one run.
std::string RatioLines(const bench::BaselineReport& report, const WharfGoodputs& goodputs) {
  std::string out;
  for (const auto& w : report.pingpong) {
    if (!IsWharf(w.proto)) continue;
    const bool same_host_managed = IsManaged(w.proto) && !IsRemote(w.proto);
    // Remote rows compare with embedded wharf only (their claim).
    for (const auto& b : report.pingpong) {
      if (IsRemote(w.proto)) break;
      if (IsWharf(b.proto) || b.mode != w.mode || b.size_bytes != w.size_bytes) continue;
      out += same_host_managed && b.proto == "udp" ? RatioLine(w, b, 1.0, "<") : RatioLine(w, b);
    }
    if (!IsManaged(w.proto)) continue;
    for (const auto& e : report.pingpong) {
      if (e.proto != EmbeddedOf(w.proto) || e.mode != w.mode || e.size_bytes != w.size_bytes) {
        continue;
      }
      out += IsRemote(w.proto) ? RatioLine(w, e, 1.5, "<=") : RatioLine(w, e);
    }
  }
  char line[256];
  for (const auto& [proto, goodput] : goodputs) {
    if (report.goodput && report.goodput->received_bits_per_second > 0) {
      std::snprintf(line, sizeof(line), "ratio %s / iperf3 goodput: %.2fx\n", proto.c_str(),
                    goodput.bits_per_second / report.goodput->received_bits_per_second);
      out += line;
    }
    if (!IsManaged(proto)) continue;
    for (const auto& [other, embedded] : goodputs) {
      if (other != EmbeddedOf(proto) || embedded.bits_per_second <= 0) continue;
      std::snprintf(line, sizeof(line), "ratio %s / %s goodput: %.2fx\n", proto.c_str(),
                    other.c_str(), goodput.bits_per_second / embedded.bits_per_second);
      out += line;
    }
  }
  return out;
}

// The rows to run: each --proto, and after each managed one its remote
// variant when --managed-remote.
std::vector<std::string> RowProtos(const BenchBaselineOptions& o) {
  std::vector<std::string> protos;
  for (const std::string& proto : o.protos) {
    protos.push_back(proto);
    if (o.managed_remote && IsManaged(proto)) protos.push_back(proto + "-remote");
  }
  return protos;
}

int RunBaseline(const BenchBaselineOptions& o, bool iperf3_port_explicit) {
  const Clock& clock = SystemClock::Get();
  bench::BaselineReport report;
  report.iterations = o.iterations;
  report.warmup = o.warmup;
  // On a terminal rewritten in place; in a log one line every 5 s.
  ProgressLine progress_line(!o.no_progress, 5 * kNsPerSec);
  int failures = 0;

  const auto daemon_cpu = DaemonCpu(o.daemon_cpu, o);
  const auto client_daemon_cpu = DaemonCpu(o.client_daemon_cpu, o);
  if (!daemon_cpu.ok() || !client_daemon_cpu.ok()) {
    std::fprintf(stderr, "wharf bench: --daemon-cpu/--client-daemon-cpu %s\n",
                 (daemon_cpu.ok() ? client_daemon_cpu.status() : daemon_cpu.status())
                     .ToString()
                     .c_str());
    return 2;
  }
  if (o.managed_remote &&
      std::none_of(o.protos.begin(), o.protos.end(), [](const auto& p) { return IsManaged(p); })) {
    std::fprintf(stderr,
                 "wharf bench: --managed-remote needs --proto wharf-managed, wharf-tcp-managed or wharf-ucx-managed\n");
    return 2;
  }
  auto managed_plan = [&](const std::string& proto) {
    return bench::ManagedPlan{.remote = IsRemote(proto),
                              .daemon_cpu = *daemon_cpu,
                              .client_daemon_cpu = *client_daemon_cpu,
                              .daemon_command = {}};
  };
  const std::vector<std::string> row_protos = RowProtos(o);
  // One UCX transport for every UCX user of the run, said in the output.
  std::string ucx_env;
  const bool any_ucx = o.ucx_perftest || std::any_of(row_protos.begin(), row_protos.end(),
                                                     [](const std::string& proto) {
                                                       return WharfScheme(proto) == "ucx";
                                                     });
  if (any_ucx) {
    ucx_env = PinUcxTransport();
    std::printf("UCX for every UCX row: %s\n", ucx_env.c_str());
  }

  for (const std::string& proto : row_protos) {
    for (const std::string& mode : o.modes) {
      bench::PingPongOptions p;
      p.address = o.address;
      p.port = o.port;
      p.size_bytes = o.size_bytes;
      p.iterations = o.iterations;
      p.warmup = o.warmup;
      p.mode = mode == "block" ? bench::WaitMode::kBlocking : bench::WaitMode::kBusyPoll;
      p.pin = !o.no_pin;
      p.client_cpu = o.client_cpu;
      p.server_cpu = o.server_cpu;
      p.time_limit_ns = SecondsToNs(o.time_limit_s);
      p.reply_timeout_ns = SecondsToNs(o.reply_timeout_s);
      bench::PingPongRow row{proto, p.mode, p.size_bytes, p.address, {}};
      const std::string name = row.Name();
      auto on_progress = [&](const PingPongProgress& pr) {
        progress_line.Show(ProgressText(name, pr), pr.elapsed_ns);
      };
      auto result =
          proto == "tcp"   ? bench::RunTcpPingPong(p, clock, on_progress)
          : proto == "shm" ? bench::RunShmPingPong(p, clock, on_progress)
          : IsManaged(proto)
              ? bench::RunManagedPingPong(p, WharfScheme(proto), managed_plan(proto), clock,
                                          on_progress)
          : IsWharf(proto) ? bench::RunWharfPingPong(p, WharfScheme(proto), clock, on_progress)
                           : bench::RunUdpPingPong(p, clock, on_progress);
      progress_line.Clear();
      if (!result.ok()) {
        std::fprintf(stderr, "wharf bench: %s: %s\n", name.c_str(),
                     result.status().ToString().c_str());
        ++failures;
        continue;
      }
      row.result = std::move(result).value();
      report.pingpong.push_back(std::move(row));
    }
  }

  if (o.goodput) {
    bench::Iperf3Options g;
    g.binary = o.iperf3_binary;
    g.address = o.address;
    g.port = o.iperf3_port;
    g.fallback_if_busy = !iperf3_port_explicit;
    g.seconds = o.goodput_seconds;
    g.pin = !o.no_pin;
    g.client_cpu = o.client_cpu;
    g.server_cpu = o.server_cpu;
    if (!o.no_progress) {
      std::fprintf(stderr, "iperf3: one TCP stream for %d s...\n", g.seconds);
    }
    auto result = bench::RunIperf3(g, clock);
    if (result.ok()) {
      report.goodput = std::move(result).value();
      report.goodput_seconds = g.seconds;
    } else {
      std::fprintf(stderr, "wharf bench: goodput: %s\n", result.status().ToString().c_str());
      ++failures;
    }
  }

  WharfGoodputs wharf_goodputs;
  for (const std::string& proto : row_protos) {
    if (!o.goodput || !IsWharf(proto)) continue;
    bench::GoodputOptions g;
    g.scheme = WharfScheme(proto);
    g.address = o.address;
    g.seconds = o.goodput_seconds;
    g.pin = !o.no_pin;
    g.client_cpu = o.client_cpu;
    g.server_cpu = o.server_cpu;
    if (!o.no_progress) {
      std::fprintf(stderr, "%s: 1 MiB RPC requests, 4 in flight, for %d s...\n", proto.c_str(),
                   o.goodput_seconds);
    }
    auto result = IsManaged(proto) ? bench::RunManagedGoodput(g, managed_plan(proto), clock)
                                   : bench::RunWharfGoodput(g, clock);
    if (result.ok()) {
      wharf_goodputs.emplace_back(proto, *result);
    } else {
      std::fprintf(stderr, "wharf bench: %s goodput: %s\n", proto.c_str(),
                   result.status().ToString().c_str());
      ++failures;
    }
  }

  // One-sided puts (wharf/remote_memory.h) beside the ucx:// RPC goodput,
  // embedded and managed (a managed run has both applications on wharfd).
  WharfGoodputs put_goodputs;
  for (const std::string& proto : row_protos) {
    if (!o.goodput || (proto != "wharf-ucx" && proto != "wharf-ucx-managed")) continue;
    bench::GoodputOptions g;
    g.scheme = "ucx";
    g.address = o.address;
    g.seconds = o.goodput_seconds;
    g.window = kPutWindow;
    g.pin = !o.no_pin;
    g.client_cpu = o.client_cpu;
    g.server_cpu = o.server_cpu;
    if (!o.no_progress) {
      std::fprintf(stderr, "%s put: 1 MiB one-sided writes, %d in flight, for %d s...\n",
                   proto.c_str(), kPutWindow, o.goodput_seconds);
    }
    auto result = IsManaged(proto) ? bench::RunManagedPutGoodput(g, managed_plan(proto), clock)
                                   : bench::RunWharfPutGoodput(g, clock);
    if (result.ok()) {
      put_goodputs.emplace_back(proto, *result);
    } else {
      std::fprintf(stderr, "wharf bench: %s put goodput: %s\n", proto.c_str(),
                   result.status().ToString().c_str());
      ++failures;
    }
  }

  std::fputs(bench::FormatTable(report).c_str(), stdout);
  for (const auto& [proto, put] : put_goodputs) {
    std::printf("%-24s goodput %.2f Gbit/s (1 MiB one-sided writes, %d in flight, %.0f s, %llu writes)\n",
                (proto + " put").c_str(), put.bits_per_second / 1e9, kPutWindow, put.seconds,
                static_cast<unsigned long long>(put.messages));
    if (!put.hosting_note.empty()) {
      std::printf("  note: %s put goodput: %s\n", proto.c_str(), put.hosting_note.c_str());
    }
  }
  if (put_goodputs.size() == 2 && put_goodputs[0].second.bits_per_second > 0) {
    std::printf("ratio %s put / %s put goodput: %.2fx\n", put_goodputs[1].first.c_str(),
                put_goodputs[0].first.c_str(),
                put_goodputs[1].second.bits_per_second / put_goodputs[0].second.bits_per_second);
  }
  for (const auto& [proto, goodput] : wharf_goodputs) {
    const std::string cpu =
        goodput.cpu_ns < 0 || goodput.messages == 0
            ? ""
            : ", CPU " + std::to_string(static_cast<long long>(
                             static_cast<double>(goodput.cpu_ns) / kNsPerUs / goodput.messages)) +
                  " us/message";
    std::printf("%-24s goodput %.2f Gbit/s (1 MiB RPC requests, 4 in flight, %.0f s, %llu messages%s)\n",
                proto.c_str(), goodput.bits_per_second / 1e9, goodput.seconds,
                static_cast<unsigned long long>(goodput.messages), cpu.c_str());
    if (!goodput.hosting_note.empty()) {
      std::printf("  note: %s goodput: %s\n", proto.c_str(), goodput.hosting_note.c_str());
    }
  }
  std::fputs(RatioLines(report, wharf_goodputs).c_str(), stdout);
  if (o.ucx_perftest) {
    failures += RunUcxPerftestRows(o, report, wharf_goodputs, put_goodputs, ucx_env, clock);
  }
  std::fflush(stdout);
  if (!o.json_path.empty()) {
    Status s = bench::WriteTextFile(o.json_path, bench::FormatJson(report));
    if (!s.ok()) {
      std::fprintf(stderr, "wharf bench: --json: %s\n", s.ToString().c_str());
      ++failures;
    }
  }
  return failures == 0 ? 0 : 1;
}

void AddProbeFloorCommand(CLI::App& bench, BenchOptions& options) {
  CLI::App* floor = bench.add_subcommand(
      "probe-floor",
      "The least CPU a UDP mesh prober spends per probe on this machine, the baseline for "
      "wharfd's figure (scripts/mesh-bench runs it in the same rounds): two threads on kernel "
      "sockets, a prober sending --rate probes a second in passes of --pass-ms (one send each, "
      "with a transmit stamp, a pass's stamps read in one call) and a responder answering each "
      "with one send; CPU time of each thread per probe. Example:\n"
      "  wharf bench probe-floor --rate 10000 --seconds 5");
  options.probe_floor_command = floor;
  BenchProbeFloorOptions& o = options.probe_floor;
  floor->add_option("--host", o.host, "Numeric address both sockets bind")->capture_default_str();
  floor->add_option("--rate", o.rate, "Probes per second")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1'000'000u));
  floor->add_option("--pass-ms", o.pass_ms, "Probes due within a pass leave together")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 1000.0));
  floor->add_option("--seconds", o.seconds, "Measured time (after 0.2 s of warm-up)")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  floor->add_option("--size", o.probe_bytes, "Bytes of a probe and of its answer")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1024u));
  floor->add_flag("--no-transmit-stamps", o.no_transmit_stamps,
                  "Do not ask for the probes' transmit stamps");
  floor->add_option("--prober-cpu", o.prober_cpu, "CPU of the prober thread (-1: not pinned)")
      ->capture_default_str()
      ->check(CLI::Range(-1, 1023));
  floor->add_option("--responder-cpu", o.responder_cpu,
                    "CPU of the responder thread (-1: not pinned)")
      ->capture_default_str()
      ->check(CLI::Range(-1, 1023));
  floor->add_flag("--json", o.json, "Print one JSON object instead of text");
}

int RunProbeFloor(const BenchProbeFloorOptions& o) {
  bench::ProbeFloorOptions options;
  options.host = o.host;
  options.rate = o.rate;
  options.pass_ns = static_cast<DurationNs>(o.pass_ms * kNsPerMs);
  options.duration_ns = SecondsToNs(o.seconds);
  options.probe_bytes = o.probe_bytes;
  options.transmit_stamps = !o.no_transmit_stamps;
  options.prober_cpu = o.prober_cpu;
  options.responder_cpu = o.responder_cpu;
  Result<bench::ProbeFloorResult> r = bench::MeasureProbeFloor(options);
  if (!r.ok()) {
    std::fprintf(stderr, "wharf bench probe-floor: %s\n", r.status().ToString().c_str());
    return 1;
  }
  const double seconds = static_cast<double>(r->measured_ns) / kNsPerSec;
  if (o.json) {
    std::printf(
        "{\"probes_sent\": %llu, \"answers\": %llu, \"transmit_stamps\": %llu, "
        "\"receive_stamps\": %llu, \"seconds\": %.3f, \"prober_cpu_us_per_probe\": %.3f, "
        "\"responder_cpu_us_per_probe\": %.3f}\n",
        static_cast<unsigned long long>(r->probes_sent), static_cast<unsigned long long>(r->answers),
        static_cast<unsigned long long>(r->transmit_stamps),
        static_cast<unsigned long long>(r->receive_stamps), seconds,
        r->ProberNsPerProbe() / kNsPerUs, r->ResponderNsPerProbe() / kNsPerUs);
    return 0;
  }
  std::printf("probes sent      %llu in %.1f s (%.0f/s), %llu answered\n",
              static_cast<unsigned long long>(r->probes_sent), seconds,
              static_cast<double>(r->probes_sent) / seconds,
              static_cast<unsigned long long>(r->answers));
  std::printf("kernel stamps    %llu transmit, %llu receive\n",
              static_cast<unsigned long long>(r->transmit_stamps),
              static_cast<unsigned long long>(r->receive_stamps));
  std::printf("CPU per probe    prober %.1f us, responder %.1f us\n",
              r->ProberNsPerProbe() / kNsPerUs, r->ResponderNsPerProbe() / kNsPerUs);
  return 0;
}

}  // namespace

CLI::App* AddBenchCommand(CLI::App& app, BenchOptions& options) {
  CLI::App* bench = app.add_subcommand("bench", "Benchmarks: latency and goodput");
  bench->require_subcommand(1);
  CLI::App* baseline = bench->add_subcommand(
      "baseline",
      "Round trips with the echo server in a separate process: kernel UDP/TCP ping-pong, "
      "raw shared memory (--proto shm), wharf embedded (--proto wharf: homa://, wharf-tcp: "
      "tcp://) and managed through a private wharfd this command starts (wharf-managed, "
      "wharf-tcp-managed; --managed-remote adds rows through two daemons). With --goodput: "
      "one iperf3 TCP stream, and wharf 1 MiB RPC goodput for each wharf proto listed. Every "
      "row reports the CPU time of all its processes per round trip. Examples:\n"
      "  wharf bench baseline --proto udp,wharf --mode poll --goodput\n"
      "  wharf bench baseline --proto tcp,wharf-tcp --mode poll --goodput\n"
      "  wharf bench baseline --proto udp,shm,wharf,wharf-managed --mode poll,block "
      "--managed-remote --goodput");
  options.baseline_command = baseline;
  options.cluster_command = AddBenchClusterCommand(*bench, options.cluster);
  options.throughput_command = AddBenchThroughputCommand(*bench, options.throughput);
  BenchBaselineOptions& o = options.baseline;
  baseline->add_option("--size", o.size_bytes, "Request (= echoed response) size in bytes")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, bench::kMaxTcpRequestBytes));
  baseline->add_option("--iterations", o.iterations, "Measured round trips per baseline")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, uint64_t{10'000'000}));
  baseline->add_option("--warmup", o.warmup, "Round trips before measuring (not recorded)")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{0}, uint64_t{10'000'000}));
  baseline
      ->add_option("--mode", o.modes,
                   "How both sides wait: 'poll' (non-blocking sockets, spin on recv; shm: spin on "
                   "the ring) or 'block' (blocking recv; shm: a short spin, then sleep on an "
                   "eventfd); a comma-separated list runs each")
      ->capture_default_str()
      ->delimiter(',')
      ->check(CLI::IsMember({"poll", "block"}));
  baseline
      ->add_option("--proto", o.protos,
                   "Ping-pong over 'udp', 'tcp' (TCP_NODELAY), 'shm' (two processes, one shared "
                   "memory region: its two rings, payload in its heap, eventfd doorbells in "
                   "block mode), 'wharf' (RPCs through the public API, embedded mode, homa://), "
                   "'wharf-tcp' (the same over tcp://), 'wharf-ucx' (over ucx://; UCX's "
                   "transport: see --ucx-perftest), 'wharf-managed' / 'wharf-tcp-managed' / "
                   "'wharf-ucx-managed' (both applications attached to one private wharfd, "
                   "which this command starts and stops); a comma-separated list runs each "
                   "in this one invocation, and wharf rows get ratio lines against the others")
      ->capture_default_str()
      ->delimiter(',')
      ->check(CLI::IsMember(
          {"udp", "tcp", "shm", "wharf", "wharf-tcp", "wharf-ucx", "wharf-managed",
           "wharf-tcp-managed", "wharf-ucx-managed"}));
  baseline->add_flag(
      "--ucx-perftest", o.ucx_perftest,
      "Also run ucx_perftest (ucx-utils) on the same UCX transport as the wharf-ucx rows "
      "(UCX_TLS and UCX_NET_DEVICES from the environment; tcp on lo when unset): its "
      "active-message ping-pong at --size, and with --goodput its 1 MiB active-message and put "
      "bandwidth, each with ratio lines against wharf-ucx");
  baseline->add_flag("--managed-remote", o.managed_remote,
                     "After each managed proto, also run it through two wharfds (one per "
                     "application, on two loopback ports), so that traffic crosses the network "
                     "stack between them: the '-remote' rows");
  baseline
      ->add_option("--daemon-cpu", o.daemon_cpu,
                   "Managed rows: where wharfd (with --managed-remote: the server's wharfd) "
                   "runs: 'server' (the server's CPU), 'client', 'free' (unpinned) or a CPU "
                   "number. In --mode poll a process spins only on a CPU it has to itself; "
                   "processes that share one sleep and are woken")
      ->capture_default_str();
  baseline
      ->add_option("--client-daemon-cpu", o.client_daemon_cpu,
                   "With --managed-remote: where the client's wharfd runs (as --daemon-cpu)")
      ->capture_default_str();
  baseline
      ->add_option("--address", o.address,
                   "Numeric IPv4/IPv6 address the servers bind and the clients connect to "
                   "(e.g. 198.18.0.2 inside a network namespace)")
      ->capture_default_str();
  baseline->add_option("--port", o.port, "Ping-pong server port (0: any free port)")
      ->capture_default_str();
  baseline
      ->add_option("--time-limit", o.time_limit_s,
                   "Stop a ping-pong after this many seconds, warm-up included, and report "
                   "what was measured")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  baseline
      ->add_option("--reply-timeout", o.reply_timeout_s,
                   "Seconds to wait for one echo (UDP resends, TCP fails after it)")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 60.0));
  baseline->add_flag("--goodput", o.goodput, "Also measure one iperf3 TCP stream (needs iperf3)");
  baseline->add_option("--goodput-seconds", o.goodput_seconds, "Length of the iperf3 run (-t)")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  options.iperf3_port_flag =
      baseline
          ->add_option("--iperf3-port", o.iperf3_port,
                       "iperf3 server port; if left at the default and busy, a free port is used "
                       "instead (0: any free port)")
          ->capture_default_str();
  baseline->add_option("--iperf3", o.iperf3_binary, "iperf3 program to run")->capture_default_str();
  baseline->add_flag("--no-pin", o.no_pin,
                     "Do not pin client and server to CPUs (pinning is on when this process may "
                     "use both --client-cpu and --server-cpu)");
  baseline->add_option("--client-cpu", o.client_cpu, "CPU for the client side")
      ->capture_default_str()
      ->check(CLI::Range(0, 1023));
  baseline->add_option("--server-cpu", o.server_cpu, "CPU for the server side")
      ->capture_default_str()
      ->check(CLI::Range(0, 1023));
  baseline->add_option("--json", o.json_path, "Also write the results as JSON to this file");
  baseline->add_flag("--no-progress", o.no_progress, "No progress line on stderr");
  AddProbeFloorCommand(*bench, options);
  return bench;
}

int RunBench(const BenchOptions& options) {
  if (options.baseline_command != nullptr && options.baseline_command->parsed()) {
    return RunBaseline(options.baseline, options.iperf3_port_flag != nullptr &&
                                             options.iperf3_port_flag->count() > 0);
  }
  if (options.probe_floor_command != nullptr && options.probe_floor_command->parsed()) {
    return RunProbeFloor(options.probe_floor);
  }
  if (options.cluster_command != nullptr && options.cluster_command->parsed()) {
    return RunBenchCluster(options.cluster);
  }
  if (options.throughput_command != nullptr && options.throughput_command->parsed()) {
    return RunBenchThroughput(options.throughput);
  }
  if (options.cluster.node_command != nullptr && options.cluster.node_command->parsed()) {
    return bench::RunBenchClusterNode(options.cluster.node,
                                       bench::BuiltinClusterNodeTransports());
  }
  return 2;
}

}  // namespace wharf::tools
