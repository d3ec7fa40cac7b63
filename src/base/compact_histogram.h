// base/compact_histogram.h: CompactHistogram, a small fixed-size (no heap)
// log-linear histogram of latencies in ns, for the many that wharf keeps at
// once: the mesh prober's sliding-window slots and the engine's per-peer
// round trips. base/histogram.h is the precise, allocated one the benchmarks
// use (0.4% buckets over all of u64); this one trades precision (6.25%)
// and range (68.7 s) for 1,112 bytes.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace wharf {

// A log-linear histogram of latencies in ns, of fixed size (no heap):
//
//   values [0, 16)             16 buckets of width 1 (exact)
//   values [2^e, 2^(e+1))      for e = 4..35: 8 linear sub-buckets of width
//                              2^(e-3), index (e-3)*8 + (v >> (e-3))
//   values >= 2^36 (~68.7 s)   no bucket: counted in OverflowCount()
//
// A bucket is never wider than 1/8 of its lower bound, and a percentile
// reports its bucket's midpoint (rounded down), which is within width/2 of
// every value in the bucket: within 1/16 (6.25%) of the exact value. Min and
// Max are exact, overflowed values included. 272 uint32_t counters and the
// totals take 1,112 bytes.
//
// Counts are 32-bit: a histogram holds at most 2^32 - 1 values (they wrap
// beyond), some 7 million probes a second for the 10 minutes the longest
// window merges.
//
// Owned by whoever measures: a mesh SlidingWindows slot, an engine's
// PeerRttTable entry, a caller's stack for a merged summary.
// Not thread-safe; merge on one thread.
class CompactHistogram {
 public:
  static constexpr int kSubBucketBits = 3;
  static constexpr uint64_t kSubBuckets = uint64_t{1} << kSubBucketBits;  // per power of two
  static constexpr int kMaxBits = 36;
  // Largest value with a bucket: 2^36 - 1 ns.
  static constexpr uint64_t kMaxTrackable = (uint64_t{1} << kMaxBits) - 1;
  // 16 exact buckets, then 8 per power of two from 2^4 to 2^35: 272.
  static constexpr size_t kBuckets = (kMaxBits - kSubBucketBits) * kSubBuckets + kSubBuckets;

  // The bucket layout, exposed so that tests can reason about bounds.
  // BucketIndex is meaningful for values up to kMaxTrackable.
  static constexpr size_t BucketIndex(uint64_t value) {
    // shift is 0 below 2 * kSubBuckets, else bit_width - 4: the number of low
    // bits a bucket of this power of two ignores.
    const int shift = std::bit_width(value | (2 * kSubBuckets - 1)) - (kSubBucketBits + 1);
    return static_cast<size_t>(shift) * kSubBuckets + static_cast<size_t>(value >> shift);
  }
  static constexpr uint64_t BucketLower(size_t index) {
    if (index < 2 * kSubBuckets) return index;
    const int shift = static_cast<int>(index / kSubBuckets) - 1;
    return (kSubBuckets + index % kSubBuckets) << shift;
  }
  static constexpr uint64_t BucketUpper(size_t index) {  // inclusive
    if (index < 2 * kSubBuckets) return index;
    const int shift = static_cast<int>(index / kSubBuckets) - 1;
    return BucketLower(index) + ((uint64_t{1} << shift) - 1);
  }
  // The value a percentile reports for a bucket: its (rounded-down) middle.
  static constexpr uint64_t BucketMidpoint(size_t index) {
    return BucketLower(index) + (BucketUpper(index) - BucketLower(index)) / 2;
  }

  // Adds one value. O(1), no allocation.
  void Record(uint64_t ns) {
    if (ns <= kMaxTrackable) {
      ++counts_[BucketIndex(ns)];
    } else {
      ++overflow_count_;
    }
    ++count_;
    if (ns < min_) min_ = ns;
    if (ns > max_) max_ = ns;
  }

  // Values recorded in bucket `index` (< kBuckets).
  uint32_t BucketCount(size_t index) const { return counts_[index]; }

  // Adds every value recorded in `other`, as if each had been recorded here.
  void Merge(const CompactHistogram& other);

  // Forgets every value.
  void Reset();

  // Number of values recorded, overflowed ones included.
  uint64_t Count() const { return count_; }
  // Exact smallest and largest recorded values; 0 when empty.
  uint64_t Min() const { return count_ == 0 ? 0 : min_; }
  uint64_t Max() const { return max_; }
  // Values above kMaxTrackable: counted, but in no bucket.
  uint64_t OverflowCount() const { return overflow_count_; }

  // The nearest-rank p-th percentile, p in [0, 100] (clamped; NaN is 0), as
  // base Histogram::Percentile: the midpoint of the bucket holding the
  // ceil(p/100 * Count())-th smallest value, clamped to [Min(), Max()]. P0 is
  // Min() and P100 is Max(), exactly; within 1/16 of the exact nearest-rank
  // value otherwise; Max() if that rank falls among overflowed values (the
  // only one of them known); 0 when empty. Walks the 272 buckets.
  uint64_t Percentile(double p) const;

 private:
  // counts_[i]: values recorded in bucket i.
  std::array<uint32_t, kBuckets> counts_{};
  uint32_t count_ = 0;           // every value, including overflow
  uint32_t overflow_count_ = 0;  // values above kMaxTrackable
  uint64_t min_ = UINT64_MAX;    // meaningful only when count_ > 0
  uint64_t max_ = 0;
};

static_assert(CompactHistogram::kBuckets == 272);
static_assert(CompactHistogram::BucketIndex(CompactHistogram::kMaxTrackable) ==
              CompactHistogram::kBuckets - 1);
static_assert(CompactHistogram::BucketUpper(CompactHistogram::kBuckets - 1) ==
              CompactHistogram::kMaxTrackable);
static_assert(sizeof(CompactHistogram) == 1112);

}  // namespace wharf
