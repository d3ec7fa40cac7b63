// CompactHistogram's bucket walks: merge, reset, percentiles. Recording is
// inline in compact_histogram.h.
#include "base/compact_histogram.h"

#include <algorithm>
#include <cmath>

namespace wharf {

void CompactHistogram::Merge(const CompactHistogram& other) {
  if (other.count_ == 0) return;
  for (size_t i = 0; i < kBuckets; ++i) counts_[i] += other.counts_[i];
  overflow_count_ += other.overflow_count_;
  count_ += other.count_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

void CompactHistogram::Reset() { *this = CompactHistogram{}; }

uint64_t CompactHistogram::Percentile(double p) const {
  if (count_ == 0) return 0;
  // `!(p > 0)` also sends NaN here: a caller bug should give a defined answer.
  if (!(p > 0.0)) return Min();
  if (p >= 100.0) return max_;
  // Nearest rank, computed as base Histogram computes it so both name the
  // same sample: the smallest value with at least p% of values at or below.
  const long double exact_rank =
      std::ceil(static_cast<long double>(p) / 100.0L * static_cast<long double>(count_));
  uint64_t rank = exact_rank < 1.0L ? 1 : static_cast<uint64_t>(exact_rank);
  rank = std::min<uint64_t>(rank, count_);

  uint64_t seen = 0;
  for (size_t i = 0; i < kBuckets; ++i) {
    seen += counts_[i];
    if (seen >= rank) return std::clamp(BucketMidpoint(i), Min(), max_);
  }
  return max_;  // the rank lies among overflowed values, whose only known one is max_
}

}  // namespace wharf
