// Histogram: the parts that walk all buckets (merge, percentiles, reset).
// Recording and the bucket arithmetic are inline in histogram.h.
#include "base/histogram.h"

#include <algorithm>
#include <cmath>

namespace wharf {

Histogram::Histogram(uint64_t max_value)
    : max_trackable_(max_value), counts_(BucketIndex(max_value) + 1, 0) {}

void Histogram::Merge(const Histogram& other) {
  if (other.total_count_ == 0) return;
  const size_t common = std::min(counts_.size(), other.counts_.size());
  for (size_t i = 0; i < common; ++i) counts_[i] += other.counts_[i];
  for (size_t i = common; i < other.counts_.size(); ++i) overflow_count_ += other.counts_[i];
  overflow_count_ += other.overflow_count_;
  total_count_ += other.total_count_;
  sum_ += other.sum_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

void Histogram::Reset() {
  std::fill(counts_.begin(), counts_.end(), 0);
  overflow_count_ = 0;
  total_count_ = 0;
  sum_ = 0;
  min_ = UINT64_MAX;
  max_ = 0;
}

double Histogram::Mean() const {
  if (total_count_ == 0) return 0.0;
  // Divide in integers first so that the quotient keeps full precision for
  // large sums; only the remainder goes through floating point.
  const unsigned __int128 quotient = sum_ / total_count_;
  const unsigned __int128 remainder = sum_ % total_count_;
  return static_cast<double>(quotient) +
         static_cast<double>(remainder) / static_cast<double>(total_count_);
}

uint64_t Histogram::Percentile(double p) const {
  if (total_count_ == 0) return 0;
  // `!(p > 0)` also sends NaN here: a caller bug should give a defined answer.
  if (!(p > 0.0)) return Min();
  if (p >= 100.0) return max_;
  // Nearest rank: the smallest value with at least p% of values at or below
  // it. The rank is computed in long double because p/100 * 2^64 does not fit
  // a double's mantissa exactly.
  const long double exact_rank =
      std::ceil(static_cast<long double>(p) / 100.0L * static_cast<long double>(total_count_));
  uint64_t rank = exact_rank < 1.0L ? 1 : static_cast<uint64_t>(exact_rank);
  rank = std::min(rank, total_count_);

  uint64_t seen = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    seen += counts_[i];
    if (seen >= rank) return std::clamp(BucketMidpoint(i), Min(), max_);
  }
  // The rank lies among values above max_value, whose only known one is max_.
  return max_;
}

}  // namespace wharf
