// `wharf bench`: benchmarks. For now one subcommand, `wharf bench baseline`,
// which measures wharf (embedded and managed) beside the baselines it is
// compared against (UDP, TCP and shared-memory ping-pong, iperf3 goodput)
// and prints them as a table, ratio lines and, optionally, JSON. The measuring code is in src/bench/ (wharf_bench); this file
// holds the flags and the printing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/cluster_command.h"
#include "tools/throughput_command.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace wharf::tools {

struct BenchBaselineOptions {
  size_t size_bytes = 64;                     // ping-pong request (= response) size
  uint64_t iterations = 100'000;              // measured round trips per row
  uint64_t warmup = 1'000;                    // unmeasured round trips before them
  std::vector<std::string> modes = {"poll"};  // "poll" and/or "block"
  // "udp", "tcp", "shm", "wharf", "wharf-tcp", "wharf-ucx", and each wharf
  // one with "-managed"
  std::vector<std::string> protos = {"udp"};
  // Also run ucx_perftest (ucx-utils): its active-message ping-pong at
  // size_bytes and, with goodput, its 1 MiB active-message and put
  // bandwidth, over the same UCX transport as the wharf-ucx rows.
  bool ucx_perftest = false;
  std::string address = "127.0.0.1";          // server address (numeric)
  uint16_t port = 0;                          // ping-pong server port; 0: any free
  bool goodput = false;                       // also run iperf3
  int goodput_seconds = 5;
  uint16_t iperf3_port = 5201;
  std::string iperf3_binary = "iperf3";
  bool no_pin = false;
  int client_cpu = 0;
  int server_cpu = 1;
  // Managed rows: where wharfd runs ("server", "client", "free" or a CPU
  // number), and with --managed-remote also the client's own wharfd.
  std::string daemon_cpu = "server";
  std::string client_daemon_cpu = "client";
  bool managed_remote = false;  // also managed rows through two daemons
  double time_limit_s = 60;     // per ping-pong row
  double reply_timeout_s = 1;
  std::string json_path;  // "" = no JSON
  bool no_progress = false;
};

// `wharf bench probe-floor` (bench/probe_floor.h).
struct BenchProbeFloorOptions {
  std::string host = "127.0.0.1";
  uint32_t rate = 10'000;
  double pass_ms = 1;
  double seconds = 5;
  uint32_t probe_bytes = 24;
  bool no_transmit_stamps = false;
  int prober_cpu = 0;
  int responder_cpu = 1;
  bool json = false;  // one JSON object on stdout instead of the text lines
};

struct BenchOptions {
  BenchBaselineOptions baseline;
  BenchProbeFloorOptions probe_floor;
  CLI::App* probe_floor_command = nullptr;
  // Set by AddBenchCommand; tell RunBench which subcommand ran.
  CLI::App* baseline_command = nullptr;
  CLI::Option* iperf3_port_flag = nullptr;  // given explicitly: no fallback port
  // `wharf bench cluster` (tools/cluster_command.h).
  BenchClusterOptions cluster;
  CLI::App* cluster_command = nullptr;
  // `wharf bench throughput` (tools/throughput_command.h).
  bench::ThroughputOptions throughput;
  CLI::App* throughput_command = nullptr;
};

// Adds `bench` (with its subcommands) to `app`; returns the `bench` command.
CLI::App* AddBenchCommand(CLI::App& app, BenchOptions& options);

// Returns the process exit code: 0 when every requested measurement ran.
int RunBench(const BenchOptions& options);

}  // namespace wharf::tools
