// tools/grpc/grpc_node_main.cc: wharf-grpc-node, the gRPC C++ baseline of
// `wharf bench cluster`: flags, then one of three runs:
//
//   --serve-only        an echo server until SIGINT/SIGTERM (or --duration);
//   --throughput N      64 B (--size) RPCs, N in flight, to --target (or to
//                       the next peer), for --duration: RPC/s and CPU per RPC;
//   (default)           a cluster node: an echo server on its own peer
//                       address and an open-loop client to the others, the
//                       same flags and sample file as `wharf bench
//                       cluster-node` (cluster_text_samples.h);
//   --check-samples F   parses a sample file and summarises it.
//
// A separate executable so that gRPC stays out of wharf and libwharf.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "base/config_value.h"
#include "netns/bottleneck.h"
#include "tools/bench/cpu_usage.h"
#include "tools/grpc/echo_client.h"
#include "tools/grpc/echo_server.h"

namespace wharf::tools::grpc_node {
namespace {

struct Flags {
  int host = 0;
  std::string peers;  // comma-separated address:port, by host index
  std::string listen;  // default: peers[host]
  std::string port_file;
  int server_threads = 2;
  int client_threads = 1;
  std::string workload = "w4";
  std::string workload_dir = bench::DefaultWorkloadDir();
  bool truncate = false;
  double load = 0.8;
  std::string link_rate = "1gbit";
  std::string duration = "2s";
  bool duration_given = false;  // --serve-only runs until stopped without it
  std::string drain = "5s";
  std::string linger = "2s";
  int64_t start_at_ns = 0;
  uint64_t seed = 1;
  std::string response_bytes;  // empty: echo
  std::string out;
  bool serve_only = false;
  int throughput = 0;
  std::string target;
  std::string size = "64";
  std::string check_samples;
};

std::vector<std::string> SplitPeers(const std::string& text) {
  std::vector<std::string> peers;
  size_t start = 0;
  while (start <= text.size() && !text.empty()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    peers.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return peers;
}

// Blocks SIGINT and SIGTERM in every thread (call before starting any), so
// that WaitForSignal can take them synchronously, without a handler.
sigset_t BlockStopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

// Waits for SIGINT/SIGTERM, at most `ns` (forever when negative).
void WaitForSignal(const sigset_t& set, DurationNs ns) {
  if (ns < 0) {
    int signal = 0;
    sigwait(&set, &signal);
    return;
  }
  timespec timeout{.tv_sec = ns / kNsPerSec, .tv_nsec = ns % kNsPerSec};
  while (sigtimedwait(&set, nullptr, &timeout) < 0 && errno == EINTR) {
  }
}

Result<std::unique_ptr<EchoServer>> StartServer(const Flags& flags, const std::string& address) {
  WHARF_ASSIGN_OR_RETURN(std::unique_ptr<EchoServer> server,
                         EchoServer::Start(address, flags.server_threads));
  if (!flags.port_file.empty()) {
    // Written whole under a temporary name, so a reader never sees half.
    std::string tmp = flags.port_file + ".tmp";
    std::ofstream(tmp) << server->port() << "\n";
    if (std::rename(tmp.c_str(), flags.port_file.c_str()) != 0) {
      return InternalError("cannot write --port-file " + flags.port_file);
    }
  }
  return server;
}

Status ServeOnly(const Flags& flags, const sigset_t& signals) {
  if (flags.listen.empty()) return InvalidArgumentError("--serve-only needs --listen ADDRESS:PORT");
  // --duration bounds a server started by a test; by default it runs until stopped.
  DurationNs run_ns = -1;
  if (flags.duration_given) {
    WHARF_ASSIGN_OR_RETURN(run_ns, ParseDuration(flags.duration));
  }
  WHARF_ASSIGN_OR_RETURN(std::unique_ptr<EchoServer> server, StartServer(flags, flags.listen));
  std::printf("grpc server: listening on port %d, %d threads\n", server->port(),
              flags.server_threads);
  std::fflush(stdout);
  Result<DurationNs> cpu_start = bench::ProcessCpuNs(0);
  WaitForSignal(signals, run_ns);
  server->Shutdown();
  Result<DurationNs> cpu_end = bench::ProcessCpuNs(0);
  std::printf("grpc server: served %llu RPCs, CPU %lld ns\n",
              static_cast<unsigned long long>(server->served()),
              cpu_start.ok() && cpu_end.ok() ? static_cast<long long>(*cpu_end - *cpu_start) : -1LL);
  return OkStatus();
}

Status Throughput(const Flags& flags) {
  ThroughputOptions options{.in_flight = flags.throughput};
  options.target = flags.target;
  if (options.target.empty()) {
    std::vector<std::string> peers = SplitPeers(flags.peers);
    if (peers.size() < 2 || flags.host < 0 || flags.host >= static_cast<int>(peers.size())) {
      return InvalidArgumentError("--throughput needs --target, or --peers with 2+ hosts and --host");
    }
    options.target = peers[(flags.host + 1) % peers.size()];
  }
  WHARF_ASSIGN_OR_RETURN(options.bytes, ParseBytes(flags.size));
  WHARF_ASSIGN_OR_RETURN(options.duration_ns, ParseDuration(flags.duration));
  WHARF_ASSIGN_OR_RETURN(ThroughputResult r, RunThroughput(options, SystemClock::Get()));
  bool echo_ok = r.echo_mismatches == 0 && r.failed == 0;
  std::printf(
      "grpc throughput: %llu B, %d in flight to %s, %.2f s: %llu RPCs, %.0f RPC/s, "
      "client CPU %.0f ns/RPC, failed %llu, echo check %s\n",
      static_cast<unsigned long long>(options.bytes), options.in_flight, options.target.c_str(),
      static_cast<double>(r.elapsed_ns) / 1e9, static_cast<unsigned long long>(r.completed),
      r.RpcsPerSec(), r.CpuNsPerRpc(), static_cast<unsigned long long>(r.failed),
      echo_ok ? "passed" : "FAILED");
  if (!echo_ok) {
    return InternalError(std::to_string(r.failed) + " RPCs failed, " +
                         std::to_string(r.echo_mismatches) + " echo mismatches");
  }
  return OkStatus();
}

Status ClusterNode(const Flags& flags, const sigset_t& signals) {
  std::vector<std::string> peers = SplitPeers(flags.peers);
  if (peers.size() < 2) return InvalidArgumentError("--peers: expected 2 or more address:port");
  if (flags.host < 0 || flags.host >= static_cast<int>(peers.size())) {
    return InvalidArgumentError("--host: expected 0.." + std::to_string(peers.size() - 1));
  }
  if (flags.out.empty()) return InvalidArgumentError("--out FILE is required");
  WHARF_ASSIGN_OR_RETURN(bench::Workload workload,
                         bench::Workload::FromSpec(flags.workload, flags.workload_dir));
  if (flags.truncate) workload = workload.Truncated(bench::kHomaTruncationBytes);
  WHARF_ASSIGN_OR_RETURN(int64_t link_bps, netns::ParseRateBitsPerSecond(flags.link_rate));
  OpenLoopOptions options;
  options.peers = peers;
  options.host = flags.host;
  options.workload = &workload;
  options.seed = flags.seed;
  WHARF_ASSIGN_OR_RETURN(options.duration_ns, ParseDuration(flags.duration));
  WHARF_ASSIGN_OR_RETURN(options.drain_ns, ParseDuration(flags.drain));
  WHARF_ASSIGN_OR_RETURN(DurationNs linger_ns, ParseDuration(flags.linger));
  options.arrivals = {.load = flags.load,
                      .link_bps = static_cast<uint64_t>(link_bps),
                      .hosts = static_cast<int>(peers.size()),
                      .client_threads = flags.client_threads};
  if (!flags.response_bytes.empty()) {
    options.arrivals.response = bench::ResponseSize::kFixed;
    WHARF_ASSIGN_OR_RETURN(options.arrivals.fixed_response_bytes, ParseBytes(flags.response_bytes));
  }

  std::string listen = flags.listen.empty() ? peers[flags.host] : flags.listen;
  WHARF_ASSIGN_OR_RETURN(std::unique_ptr<EchoServer> server, StartServer(flags, listen));
  // Every node starts at the same wall-clock instant (all namespaces share
  // the kernel's clock), converted once to the monotonic clock the run uses.
  Clock& clock = SystemClock::Get();
  options.start_ns = clock.NowNs();
  if (flags.start_at_ns > 0) options.start_ns += std::max<int64_t>(0, flags.start_at_ns - clock.WallNs());
  Result<DurationNs> cpu_start = bench::ProcessCpuNs(0);
  WHARF_ASSIGN_OR_RETURN(OpenLoopResult result, RunOpenLoop(options, clock));
  Result<DurationNs> cpu_end = bench::ProcessCpuNs(0);
  // The node's CPU: its client and its server (others' RPCs to it), as a
  // host's CPU per message is counted for wharf (from before the warm-up
  // RPCs, one per peer and client thread: negligible beside a run).
  result.summary.cpu_ns = cpu_start.ok() && cpu_end.ok() ? *cpu_end - *cpu_start : -1;

  bench::ClusterSampleHeader header{.proto = "grpc",
                                    .host = flags.host,
                                    .hosts = static_cast<int>(peers.size()),
                                    .workload = workload.Describe(),
                                    .load = flags.load,
                                    .link_bps = static_cast<uint64_t>(link_bps),
                                    .duration_ns = options.duration_ns,
                                    .seed = flags.seed};
  std::string tmp = flags.out + ".tmp";
  {
    std::ofstream file(tmp, std::ios::trunc);
    file << bench::FormatClusterSampleHeader(header);
    char line[bench::kClusterSampleLineMax];
    for (const bench::ClusterSample& sample : result.samples) {
      file.write(line, static_cast<std::streamsize>(
                           bench::FormatClusterSample(sample, line, sizeof(line))));
    }
    file << bench::FormatClusterSampleSummary(result.summary);
    if (!file.flush()) return InternalError("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), flags.out.c_str()) != 0) {
    return InternalError("cannot rename " + tmp + " to " + flags.out);
  }
  std::printf("grpc node %d: issued %llu, completed %llu, failed %llu (echo mismatches %llu) -> %s\n",
              flags.host, static_cast<unsigned long long>(result.summary.issued),
              static_cast<unsigned long long>(result.summary.completed),
              static_cast<unsigned long long>(result.summary.failed),
              static_cast<unsigned long long>(result.echo_mismatches), flags.out.c_str());
  std::fflush(stdout);
  // Keep answering the other nodes, whose runs may end later than ours.
  WaitForSignal(signals, linger_ns);
  server->Shutdown();
  return OkStatus();
}

// Parses a sample file and says what is in it (the tests use it).
Status CheckSamples(const std::string& path) {
  std::ifstream file(path);
  if (!file) return NotFoundError("cannot open " + path);
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  WHARF_ASSIGN_OR_RETURN(bench::ClusterSampleFile samples, bench::ParseClusterSamples(text, path));
  std::printf("samples ok: proto %s, host %d of %d, %zu samples, failed %llu, workload %s\n",
              samples.header.proto.c_str(), samples.header.host, samples.header.hosts,
              samples.samples.size(), static_cast<unsigned long long>(samples.summary.failed),
              samples.header.workload.c_str());
  return OkStatus();
}

int Main(int argc, char** argv) {
  CLI::App app{"wharf-grpc-node: the gRPC C++ baseline of `wharf bench cluster`"};
  Flags f;
  app.add_option("--host", f.host, "this node's index in --peers");
  app.add_option("--peers", f.peers, "address:port of every host, comma-separated, by index");
  app.add_option("--listen", f.listen, "server address (default: this host's peer address)");
  app.add_option("--port-file", f.port_file, "write the server's bound port here");
  app.add_option("--server-threads", f.server_threads, "server completion-queue threads")
      ->capture_default_str();
  app.add_option("--threads", f.client_threads, "client threads")->capture_default_str();
  app.add_option("--workload", f.workload, "w1..w5 or a fixed size")->capture_default_str();
  app.add_option("--workload-dir", f.workload_dir, "where wN.csv are")->capture_default_str();
  app.add_flag("--truncate", f.truncate, "cut messages at 1000000 B, as Homa's benchmarks do");
  app.add_option("--load", f.load, "target share of the busiest link")->capture_default_str();
  app.add_option("--link-rate", f.link_rate, "host link rate, tc units")->capture_default_str();
  app.add_option("--duration", f.duration, "sending window (--serve-only: lifetime)")
      ->capture_default_str();
  app.add_option("--drain", f.drain, "wait for open RPCs after the window")->capture_default_str();
  app.add_option("--linger", f.linger, "keep serving after this node's run")->capture_default_str();
  app.add_option("--start-at", f.start_at_ns, "start at this wall-clock time, ns since the epoch");
  app.add_option("--seed", f.seed, "the run's seed")->capture_default_str();
  app.add_option("--response-bytes", f.response_bytes, "fixed response size (default: echo)");
  app.add_option("--out", f.out, "the sample file (cluster_text_samples.h)");
  app.add_flag("--serve-only", f.serve_only, "only serve");
  app.add_option("--throughput", f.throughput, "closed loop with N in flight: RPC/s, CPU/RPC");
  app.add_option("--target", f.target, "--throughput's server (default: the next peer)");
  app.add_option("--size", f.size, "--throughput's payload")->capture_default_str();
  app.add_option("--check-samples", f.check_samples, "parse a sample file and summarise it");
  CLI11_PARSE(app, argc, argv);
  f.duration_given = app.count("--duration") > 0;

  const sigset_t signals = BlockStopSignals();
  Status status = !f.check_samples.empty() ? CheckSamples(f.check_samples)
                  : f.serve_only ? ServeOnly(f, signals)
                  : f.throughput > 0 ? Throughput(f)
                                     : ClusterNode(f, signals);
  if (!status.ok()) {
    std::fprintf(stderr, "wharf-grpc-node: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace wharf::tools::grpc_node

int main(int argc, char** argv) { return wharf::tools::grpc_node::Main(argc, argv); }
