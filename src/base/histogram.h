// base/histogram.h: Histogram, a mergeable log-linear histogram of u64 values
// (latencies in ns, sizes in bytes) with O(1) recording and bounded memory.
// It does not hold time series, labels or exposition formats: mesh/ turns
// buckets into Prometheus text, bench code into tables.
//
// Bucket layout (HdrHistogram-style, kSubBucketBits = 7):
//
//   values [0, 256)           256 buckets of width 1 (exact)
//   values [2^e, 2^(e+1))     for e = 8..63: 128 linear sub-buckets of
//                             width 2^(e-7), indices (e-7)*128 + (v >> (e-7))
//
// so a bucket is never wider than 1/128 of its lower bound: every value is
// within 0.79% of both bounds of its bucket, and within 0.4% of the bucket
// midpoint that percentiles report. The full u64 range takes kMaxBuckets
// (7424) counters, 58 KiB; a histogram built with a smaller max_value keeps
// only the buckets up to it and counts larger values as overflow.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace wharf {

// One non-empty bucket: the `count` recorded values v have lower <= v <= upper.
struct HistogramBucket {
  uint64_t lower;
  uint64_t upper;  // inclusive, so the last bucket can end at UINT64_MAX
  uint64_t count;
};

// Owned by whoever measures (an engine's stats, a bench client). Not
// thread-safe: one writer, and readers on the same thread; to combine
// per-thread histograms, Merge them on one thread.
class Histogram {
 public:
  static constexpr int kSubBucketBits = 7;
  static constexpr uint64_t kSubBuckets = uint64_t{1} << kSubBucketBits;  // per power of two
  static constexpr size_t kMaxBuckets = (64 - kSubBucketBits) * kSubBuckets + kSubBuckets;

  // Buckets covering [0, max_value]; values above max_value still update
  // Count/Min/Max/Mean but land in OverflowCount() instead of a bucket. The
  // counters are allocated here and never again.
  explicit Histogram(uint64_t max_value = UINT64_MAX);

  // Adds `value` once, or `count` times. O(1), no allocation.
  void Record(uint64_t value) { Record(value, 1); }
  void Record(uint64_t value, uint64_t count) {
    if (count == 0) return;
    const size_t index = BucketIndex(value);
    if (index < counts_.size()) {
      counts_[index] += count;
    } else {
      overflow_count_ += count;
    }
    total_count_ += count;
    sum_ += static_cast<unsigned __int128>(value) * count;
    if (value < min_) min_ = value;
    if (value > max_) max_ = value;
  }

  // Adds every value recorded in `other`, as if each had been recorded here.
  // Buckets `other` has beyond this histogram's max_value become overflow.
  void Merge(const Histogram& other);

  // Forgets every value; keeps the allocation.
  void Reset();

  // Number of values recorded (wraps only after 2^64 values).
  uint64_t Count() const { return total_count_; }
  // Exact smallest and largest recorded values; 0 when empty.
  uint64_t Min() const { return total_count_ == 0 ? 0 : min_; }
  uint64_t Max() const { return max_; }
  // Exact arithmetic mean (the sum is kept in 128 bits); 0 when empty.
  double Mean() const;
  // Values above max_value: counted, but in no bucket.
  uint64_t OverflowCount() const { return overflow_count_; }

  // The nearest-rank p-th percentile, p in [0, 100] (clamped): the midpoint
  // of the bucket holding the ceil(p/100 * Count())-th smallest value, clamped
  // to [Min(), Max()]. P0 is Min() and P100 is Max(), exactly. Within 0.4% of
  // the exact nearest-rank percentile; 0 when empty. If the rank falls among
  // overflowed values, returns Max(), the only one of them known.
  uint64_t Percentile(double p) const;
  uint64_t P50() const { return Percentile(50.0); }
  uint64_t P90() const { return Percentile(90.0); }
  uint64_t P99() const { return Percentile(99.0); }
  uint64_t P999() const { return Percentile(99.9); }

  // Calls fn(const HistogramBucket&) for each non-empty bucket in increasing
  // value order (overflow excluded; see OverflowCount). Cost is linear in the
  // number of buckets, so call it when exporting, not per value.
  template <typename Fn>
  void ForEachBucket(Fn&& fn) const {
    for (size_t i = 0; i < counts_.size(); ++i) {
      if (counts_[i] != 0) fn(HistogramBucket{BucketLower(i), BucketUpper(i), counts_[i]});
    }
  }

  // The bucket layout, exposed so that tests and exporters can reason about
  // bounds without recording anything.
  static constexpr size_t BucketIndex(uint64_t value) {
    // shift is 0 for values below 2 * kSubBuckets, else bit_width - 8: the
    // number of low bits a bucket of this exponent group ignores.
    const int shift = std::bit_width(value | (2 * kSubBuckets - 1)) - (kSubBucketBits + 1);
    return static_cast<size_t>(shift) * kSubBuckets + static_cast<size_t>(value >> shift);
  }
  static constexpr uint64_t BucketLower(size_t index) {
    if (index < 2 * kSubBuckets) return index;
    const int shift = static_cast<int>(index / kSubBuckets) - 1;
    return (kSubBuckets + index % kSubBuckets) << shift;
  }
  static constexpr uint64_t BucketUpper(size_t index) {
    if (index < 2 * kSubBuckets) return index;
    const int shift = static_cast<int>(index / kSubBuckets) - 1;
    return BucketLower(index) + ((uint64_t{1} << shift) - 1);
  }
  // The value a percentile reports for a bucket: its (rounded-down) middle.
  static constexpr uint64_t BucketMidpoint(size_t index) {
    return BucketLower(index) + (BucketUpper(index) - BucketLower(index)) / 2;
  }

  // Largest value with a bucket, as given to the constructor.
  uint64_t MaxTrackable() const { return max_trackable_; }

 private:
  uint64_t max_trackable_;
  // counts_[i]: values recorded in bucket i; size BucketIndex(max_value) + 1,
  // fixed at construction.
  std::vector<uint64_t> counts_;
  uint64_t overflow_count_ = 0;
  uint64_t total_count_ = 0;
  // Sum of all recorded values, in 128 bits: fewer than 2^64 values of at
  // most 2^64 - 1 each cannot wrap it, so Mean stays exact until Count does.
  unsigned __int128 sum_ = 0;
  uint64_t min_ = UINT64_MAX;  // meaningful only when total_count_ > 0
  uint64_t max_ = 0;
};

static_assert(Histogram::BucketIndex(UINT64_MAX) == Histogram::kMaxBuckets - 1);
static_assert(Histogram::BucketUpper(Histogram::kMaxBuckets - 1) == UINT64_MAX);

}  // namespace wharf
