// Poisson arrivals: the rate formula (see arrivals.h) and the per-thread generator.
#include "bench/arrivals.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace wharf::bench {
namespace {

constexpr double kMaxLoad = 10;  // beyond this a typo is likelier than an overload study

Status Bad(const std::string& what, const std::string& expected, const std::string& got) {
  return InvalidArgumentError("arrivals: " + what + ": expected " + expected + ", got " + got);
}

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Uniform in [0, n) without modulo bias, the same on every standard library.
uint64_t UniformIndex(std::mt19937_64& rng, uint64_t n) {
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do {
    x = rng();
  } while (x >= limit);
  return x % n;
}

}  // namespace

uint64_t ThreadSeed(uint64_t seed, int host, int thread) {
  return SplitMix64(SplitMix64(seed ^ (static_cast<uint64_t>(host) << 32)) ^
                    static_cast<uint64_t>(thread));
}

Result<ArrivalRates> ComputeArrivalRates(const ArrivalConfig& config, const Workload& workload) {
  if (!(config.load > 0 && config.load <= kMaxLoad)) {
    return Bad("load", "a fraction of the link rate in (0, 10]", std::to_string(config.load));
  }
  if (config.link_bps == 0) return Bad("link_bps", "> 0", "0");
  if (config.hosts < 2) return Bad("hosts", ">= 2", std::to_string(config.hosts));
  if (config.client_threads < 1) {
    return Bad("client_threads", ">= 1", std::to_string(config.client_threads));
  }
  if (config.servers < 0 || config.servers > config.hosts - 1) {
    return Bad("servers", "0 (all hosts serve) up to hosts - 1 = " + std::to_string(config.hosts - 1),
               std::to_string(config.servers));
  }
  ArrivalRates r;
  const auto overhead = static_cast<double>(config.overhead_bytes_per_message);
  r.mean_request_bytes = workload.mean_bytes() + overhead;
  r.mean_response_bytes =
      (config.response == ResponseSize::kEcho ? workload.mean_bytes()
                                              : static_cast<double>(config.fixed_response_bytes)) +
      overhead;
  if (config.servers == 0) {
    r.busiest_link_bytes_per_rpc = r.mean_request_bytes + r.mean_response_bytes;
  } else {
    const double fan_in = static_cast<double>(config.hosts - config.servers) / config.servers;
    r.busiest_link_bytes_per_rpc =
        std::max(r.mean_request_bytes, r.mean_response_bytes) * std::max(1.0, fan_in);
  }
  if (!(r.busiest_link_bytes_per_rpc > 0)) {
    return Bad("workload", "messages that carry bytes (or a per-message overhead)",
               "a mean of 0 bytes");
  }
  const double link_bytes_per_sec = static_cast<double>(config.link_bps) / 8;
  r.rpcs_per_sec_per_host = config.load * link_bytes_per_sec / r.busiest_link_bytes_per_rpc;
  r.rpcs_per_sec_per_thread = r.rpcs_per_sec_per_host / config.client_threads;
  r.mean_gap_ns = static_cast<double>(kNsPerSec) / r.rpcs_per_sec_per_thread;
  return r;
}

Result<ArrivalGenerator> ArrivalGenerator::Create(const ArrivalConfig& config,
                                                  const Workload& workload, int host, int thread,
                                                  uint64_t seed) {
  WHARF_ASSIGN_OR_RETURN(ArrivalRates rates, ComputeArrivalRates(config, workload));
  const int clients = config.servers == 0 ? config.hosts : config.hosts - config.servers;
  if (host < 0 || host >= clients) {
    return Bad("host", "a client host in [0, " + std::to_string(clients) + ")", std::to_string(host));
  }
  if (thread < 0 || thread >= config.client_threads) {
    return Bad("thread", "in [0, " + std::to_string(config.client_threads) + ")",
               std::to_string(thread));
  }
  return ArrivalGenerator(config, workload, rates, host, ThreadSeed(seed, host, thread));
}

ArrivalGenerator::ArrivalGenerator(const ArrivalConfig& config, const Workload& workload,
                                   ArrivalRates rates, int host, uint64_t seed)
    : config_(config), workload_(&workload), rates_(rates), host_(host), rng_(seed) {}

double ArrivalGenerator::NextGapNs() {
  // Inverse transform of the exponential CDF; 1 - u is in (0, 1], so the log
  // is finite.
  return -std::log1p(-UniformUnit(rng_)) * rates_.mean_gap_ns;
}

int ArrivalGenerator::PickServer() {
  if (config_.servers > 0) {
    const int first_server = config_.hosts - config_.servers;
    return first_server + static_cast<int>(UniformIndex(rng_, config_.servers));
  }
  // Uniform among the other hosts: draw from hosts - 1 and skip ourselves.
  const int pick = static_cast<int>(UniformIndex(rng_, config_.hosts - 1));
  return pick >= host_ ? pick + 1 : pick;
}

Arrival ArrivalGenerator::Next() {
  clock_ns_ += NextGapNs();
  Arrival a;
  a.send_offset_ns = static_cast<DurationNs>(std::llround(clock_ns_));
  a.server = PickServer();
  a.request_bytes = workload_->Sample(rng_);
  a.response_bytes =
      config_.response == ResponseSize::kEcho ? a.request_bytes : config_.fixed_response_bytes;
  return a;
}

}  // namespace wharf::bench
