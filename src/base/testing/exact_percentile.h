// base/testing/exact_percentile.h: what histogram tests compare against:
// the exact nearest-rank percentile of a sample, and CompactHistogram's
// stated error bound. Test code only.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace wharf::testing_support {

// The nearest-rank percentile of sorted values, with the rank computed as
// CompactHistogram::Percentile computes it, so that both name the same sample.
inline uint64_t ExactPercentile(const std::vector<uint64_t>& sorted, double p) {
  if (p <= 0) return sorted.front();
  if (p >= 100) return sorted.back();
  long double rank = std::ceil(static_cast<long double>(p) / 100.0L * sorted.size());
  size_t r = std::clamp<size_t>(static_cast<size_t>(rank), 1, sorted.size());
  return sorted[r - 1];
}

// The stated bound: within 1/16 of the exact value (in integers, no rounding).
inline ::testing::AssertionResult WithinASixteenth(uint64_t got, uint64_t exact) {
  const uint64_t error = got > exact ? got - exact : exact - got;
  if (16 * error <= exact) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got " << got << ", exact " << exact;
}

}  // namespace wharf::testing_support
