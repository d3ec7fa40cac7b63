// Histogram micro-benchmarks: the per-value cost an engine pays to record a
// latency, and the export-time costs (percentile, merge) mesh/ pays per scrape.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include "base/histogram.h"

namespace wharf {
namespace {

// Pre-generated log-normal latencies, so the benchmark measures Record and
// not the random number generator. A power-of-two count keeps indexing cheap.
std::vector<uint64_t> LatencySamples() {
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> dist(10.0, 1.5);  // ~22 us median
  std::vector<uint64_t> values(1 << 16);
  for (auto& v : values) v = static_cast<uint64_t>(dist(rng));
  return values;
}

void BM_Record(benchmark::State& state) {
  const std::vector<uint64_t> values = LatencySamples();
  Histogram h;
  size_t i = 0;
  for (auto _ : state) {
    h.Record(values[i++ & (values.size() - 1)]);
  }
  benchmark::DoNotOptimize(h.Count());
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Record);

void BM_RecordWithCount(benchmark::State& state) {
  const std::vector<uint64_t> values = LatencySamples();
  Histogram h;
  size_t i = 0;
  for (auto _ : state) {
    h.Record(values[i++ & (values.size() - 1)], 3);
  }
  benchmark::DoNotOptimize(h.Count());
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RecordWithCount);

void BM_P99(benchmark::State& state) {
  Histogram h;
  for (uint64_t v : LatencySamples()) h.Record(v);
  for (auto _ : state) benchmark::DoNotOptimize(h.P99());
}
BENCHMARK(BM_P99);

void BM_Merge(benchmark::State& state) {
  Histogram a, b;
  for (uint64_t v : LatencySamples()) b.Record(v);
  for (auto _ : state) {
    a.Merge(b);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_Merge);

}  // namespace
}  // namespace wharf
