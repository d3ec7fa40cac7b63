// bench/arrivals.h: open-loop Poisson arrivals for `wharf bench cluster`,
// as Homa's cp_node generates them: each client thread issues RPCs at
// exponentially distributed gaps, to a server chosen uniformly at random,
// with request sizes drawn from a Workload, at a rate chosen so that the
// busiest host link carries a target fraction of its rate.
//
// The rate (bytes are the payload plus `overhead_bytes_per_message`):
//
//   Every host is a client and a server (servers == 0, Homa's default). A
//   host issues L RPCs/s; with servers uniform among the other hosts it also
//   serves L RPCs/s on average, so its uplink carries L * (E[req] + E[resp])
//   bytes/s (and its downlink the same):
//       L = load * link_bps / (8 * (E[req] + E[resp]))
//   Separate roles (servers = S > 0, clients C = hosts - S): a client uplink
//   carries L * E[req], a server downlink (C/S) * L * E[req], and the
//   responses likewise the other way, so the busiest link carries
//   L * max(E[req], E[resp]) * max(1, C/S):
//       L = load * link_bps / (8 * max(E[req], E[resp]) * max(1, C/S))
//   Per thread: rate = L / client_threads, mean gap = 1e9 / rate ns.
//
// E[resp] is E[req] when responses echo the request size (cp_node's default),
// else the fixed response size (cp_node --one-way uses 100 B). A run at
// load 0.8 on 25 Gbps links with echoed responses sends 10 Gbps of requests
// per host, cperf's "-b 20".
//
// It schedules; it does not send, time or sleep: the harness turns the send
// times into deadlines on its own clock.
#pragma once

#include <cstdint>
#include <random>

#include "base/clock.h"
#include "bench/workload.h"
#include "wharf/result.h"

namespace wharf::bench {

enum class ResponseSize {
  kEcho,   // the response is as long as the request
  kFixed,  // every response is ArrivalConfig::fixed_response_bytes long
};

struct ArrivalConfig {
  double load = 0.8;      // target share of the busiest link's rate, (0, 10]
  uint64_t link_bps = 0;  // every host's link rate, bits per second
  int hosts = 0;          // hosts in the cluster, >= 2
  int client_threads = 1;  // sending threads per client host
  // 0: every host sends and serves. S > 0: hosts [hosts - S, hosts) only
  // serve and the others only send.
  int servers = 0;
  ResponseSize response = ResponseSize::kEcho;
  uint64_t fixed_response_bytes = 100;
  // Counted on the wire for each request and each response (headers), so
  // that `load` is what crosses the link, not only the payload. 0: payload only.
  uint64_t overhead_bytes_per_message = 0;
};

// What a config asks of each client host and thread. Pure arithmetic.
struct ArrivalRates {
  double mean_request_bytes = 0;   // E[req] on the wire
  double mean_response_bytes = 0;  // E[resp] on the wire
  // Bytes the busiest link carries per RPC a client host issues (the
  // denominator of the formula above).
  double busiest_link_bytes_per_rpc = 0;
  double rpcs_per_sec_per_host = 0;    // L
  double rpcs_per_sec_per_thread = 0;  // L / client_threads
  double mean_gap_ns = 0;              // per thread
};

// InvalidArgument names the setting ("arrivals: hosts: expected >= 2, got 1").
Result<ArrivalRates> ComputeArrivalRates(const ArrivalConfig& config, const Workload& workload);

// One RPC to issue.
struct Arrival {
  DurationNs send_offset_ns = 0;  // since the thread's start, never decreasing
  int server = 0;                 // host index
  uint64_t request_bytes = 0;     // payload
  uint64_t response_bytes = 0;    // payload
};

// The schedule of one client thread. Owned by that thread; holds a pointer
// to the Workload, which must outlive it. Deterministic: the same seed, host
// and thread give the same arrivals.
class ArrivalGenerator {
 public:
  // For thread `thread` of client host `host`; `seed` is the run's, and each
  // (host, thread) pair gets its own stream from it. Borrows `workload`,
  // which must outlive the generator (a temporary does not).
  static Result<ArrivalGenerator> Create(const ArrivalConfig& config, const Workload& workload,
                                         int host, int thread, uint64_t seed);

  // The next RPC. No allocation.
  Arrival Next();
  // One exponential gap in ns (what Next adds to the send time).
  double NextGapNs();

  const ArrivalRates& rates() const { return rates_; }

 private:
  ArrivalGenerator(const ArrivalConfig& config, const Workload& workload, ArrivalRates rates,
                   int host, uint64_t seed);
  int PickServer();

  ArrivalConfig config_;
  const Workload* workload_;
  ArrivalRates rates_;
  int host_;
  std::mt19937_64 rng_;
  double clock_ns_ = 0;  // unrounded, so rounding never accumulates
};

// The stream seed for (seed, host, thread): splitmix64 of their mix.
uint64_t ThreadSeed(uint64_t seed, int host, int thread);

}  // namespace wharf::bench
