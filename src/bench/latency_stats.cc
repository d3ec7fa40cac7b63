// LatencyStats: exact percentiles by sorting.
#include "bench/latency_stats.h"

#include <algorithm>
#include <cmath>

namespace wharf::bench {

DurationNs LatencyStats::Percentile(const std::vector<DurationNs>& sorted_ns, double percent) {
  const size_t n = sorted_ns.size();
  if (n == 0) return 0;
  percent = std::clamp(percent, 0.0, 100.0);
  // The rank is computed in long double and nudged down by a relative epsilon
  // so that e.g. 99.9 % of 1000 gives rank 999 rather than 1000 when the
  // product lands a hair above the integer.
  const long double exact = static_cast<long double>(percent) / 100.0L * n;
  auto rank = static_cast<size_t>(std::ceil(exact - exact * 1e-12L));
  rank = std::clamp<size_t>(rank, 1, n);
  return sorted_ns[rank - 1];
}

LatencySummary LatencyStats::Summarize(DurationNs elapsed_ns) {
  LatencySummary s;
  s.count = samples_ns_.size();
  if (s.count == 0) {
    s.elapsed_ns = elapsed_ns;
    return s;
  }
  std::sort(samples_ns_.begin(), samples_ns_.end());
  s.min_ns = samples_ns_.front();
  s.max_ns = samples_ns_.back();
  s.p50_ns = Percentile(samples_ns_, 50);
  s.p90_ns = Percentile(samples_ns_, 90);
  s.p99_ns = Percentile(samples_ns_, 99);
  s.p999_ns = Percentile(samples_ns_, 99.9);
  long double sum = 0;
  for (DurationNs v : samples_ns_) sum += static_cast<long double>(v);
  s.mean_ns = static_cast<double>(sum / s.count);
  s.elapsed_ns = elapsed_ns > 0 ? elapsed_ns : static_cast<DurationNs>(sum);
  s.rate_per_sec = s.elapsed_ns > 0 ? static_cast<double>(s.count) * kNsPerSec / s.elapsed_ns : 0;
  return s;
}

}  // namespace wharf::bench
