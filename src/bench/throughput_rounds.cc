// `wharf bench throughput --rounds`: medians over the rounds of a run.
#include "bench/throughput_rounds.h"

#include <algorithm>
#include <string>

namespace wharf::bench {
namespace {

// The element of `items` (pointers, not empty) whose `key` is the median,
// the lower middle one for an even count.
template <typename T, typename Key>
const T& MedianBy(std::vector<const T*> items, Key key) {
  std::stable_sort(items.begin(), items.end(),
                   [&](const T* a, const T* b) { return key(*a) < key(*b); });
  return *items[(items.size() - 1) / 2];
}

// One row per (label, in flight, bytes) in first-seen order, each its
// median over the rounds that have it.
std::vector<ThroughputRow> MergeRows(const std::vector<ThroughputPathResult>& rounds,
                                     std::vector<ThroughputRow> ThroughputPathResult::*rows) {
  std::vector<ThroughputRow> merged;
  for (const ThroughputPathResult& round : rounds) {
    for (const ThroughputRow& row : round.*rows) {
      auto seen = std::find_if(merged.begin(), merged.end(),
                               [&](const ThroughputRow& m) { return SameRow(m, row); });
      if (seen != merged.end()) continue;
      std::vector<const ThroughputRow*> samples;
      for (const ThroughputPathResult& r : rounds) {
        for (const ThroughputRow& other : r.*rows) {
          if (SameRow(other, row)) samples.push_back(&other);
        }
      }
      merged.push_back(MedianRow(samples));
    }
  }
  return merged;
}

void AddOnce(std::vector<std::string>& to, const std::vector<std::string>& from) {
  for (const std::string& s : from) {
    if (std::find(to.begin(), to.end(), s) == to.end()) to.push_back(s);
  }
}

}  // namespace

bool SameRow(const ThroughputRow& a, const ThroughputRow& b) {
  return a.label == b.label && a.in_flight == b.in_flight && a.bytes == b.bytes;
}

double Median(std::vector<double> values) {
  if (values.empty()) return -1;
  std::sort(values.begin(), values.end());
  return values[(values.size() - 1) / 2];
}

const ThroughputRow& MedianRow(const std::vector<const ThroughputRow*>& rows) {
  return MedianBy(rows, [](const ThroughputRow& r) { return r.rpc_per_sec; });
}

void MergeRounds(ThroughputPathResult& path) {
  if (path.rounds.empty()) return;
  path.rpc = MergeRows(path.rounds, &ThroughputPathResult::rpc);
  path.goodput = MergeRows(path.rounds, &ThroughputPathResult::goodput);
  std::vector<const Iperf3Result*> iperf3;
  for (const ThroughputPathResult& r : path.rounds) {
    if (r.iperf3.has_value()) iperf3.push_back(&*r.iperf3);
    if (!r.iperf3_error.empty() && path.iperf3_error.empty()) path.iperf3_error = r.iperf3_error;
    AddOnce(path.errors, r.errors);
    AddOnce(path.notes, r.notes);
  }
  path.iperf3.reset();
  if (!iperf3.empty()) {
    path.iperf3 =
        MedianBy(iperf3, [](const Iperf3Result& r) { return r.received_bits_per_second; });
    path.iperf3_error.clear();  // measured in some round: the median stands
  }
}

}  // namespace wharf::bench
