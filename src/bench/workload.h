// bench/workload.h: Workload, a message-size distribution for `wharf
// bench cluster`: one of Homa's W1-W5 step CDFs (data/workloads/wN.csv, format
// in data/workloads/README.md) or a single fixed size, optionally truncated at
// a size limit as Homa's benchmarks do. It samples sizes, gives their means and
// places sizes on the cumulative-fraction axis of the slowdown plots.
//
// It does not pick when messages are sent (arrivals.h) or measure anything.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "wharf/result.h"

namespace wharf::bench {

// Homa/Linux's largest message (HOMA_MAX_MESSAGE_LENGTH); its cluster
// benchmark cuts every longer message down to this.
inline constexpr uint64_t kHomaTruncationBytes = 1'000'000;

// One row of a step CDF: a fraction `cdf` of messages are at most `bytes` long.
struct CdfPoint {
  uint64_t bytes = 0;
  double cdf = 0;
};

// The data/workloads directory of the source tree this binary was built from.
const char* DefaultWorkloadDir();

// Value type; immutable once built, so one Workload may be shared by threads.
class Workload {
 public:
  // Parses the CSV text of a workload file. `source` names it in errors:
  // "w3.csv:17: expected bytes greater than 1200 (line 16), got '1100'".
  static Result<Workload> ParseCsv(std::string_view text, std::string_view source);
  // Reads and parses `path`; the workload is named after the file ("w3").
  static Result<Workload> LoadCsv(const std::string& path);
  // Every message is `bytes` long.
  static Workload Fixed(uint64_t bytes);
  // "w1".."w5" (any case): <workload_dir>/wN.csv. Otherwise a size for
  // base/config_value.h's ParseBytes: "100000", "64B", "1MiB" is Fixed.
  static Result<Workload> FromSpec(std::string_view spec, const std::string& workload_dir);

  // A copy in which every message longer than `limit_bytes` is exactly
  // `limit_bytes` long (Homa's choice: cut, not redrawn). 0 removes the limit.
  Workload Truncated(uint64_t limit_bytes) const;

  // "w3", "w3 (cut at 1000000 B)", "100000 B".
  std::string Describe() const;
  const std::string& name() const { return name_; }
  bool is_fixed() const { return points_.size() == 1; }
  uint64_t truncation_bytes() const { return truncation_bytes_; }  // 0: none
  // The distribution as sampled: with truncation, rows above the limit are
  // folded into one row at the limit (so the last row is always cdf 1).
  const std::vector<CdfPoint>& points() const { return effective_; }
  // The distribution as read, before truncation.
  const std::vector<CdfPoint>& full_points() const { return points_; }

  // The size for `u` in [0, 1) (clamped): the first row with cdf >= u.
  uint64_t Sample(double u) const;
  // The same for a u drawn from `rng` (53 random bits, so runs with the same
  // seed draw the same sizes on every standard library).
  uint64_t Sample(std::mt19937_64& rng) const;

  // Exact mean of the distribution as sampled (with truncation, if any).
  double mean_bytes() const { return mean_bytes_; }
  // Exact mean before truncation.
  double full_mean_bytes() const { return full_mean_bytes_; }
  uint64_t min_bytes() const { return effective_.front().bytes; }
  uint64_t max_bytes() const { return effective_.back().bytes; }

  // Fraction of messages at most `bytes` long (0 below the smallest size).
  // The x position of a size in Homa's slowdown plots.
  double CumulativeFraction(uint64_t bytes) const;
  // Fraction of messages strictly shorter than `bytes`.
  double FractionBelow(uint64_t bytes) const;
  // The smallest size with CumulativeFraction(size) >= fraction (a quantile;
  // the same as Sample(fraction)). Labels the plots' x ticks.
  uint64_t SizeAtFraction(double fraction) const { return Sample(fraction); }

 private:
  Workload(std::string name, std::vector<CdfPoint> points);
  void Recompute();

  std::string name_;
  std::vector<CdfPoint> points_;     // as read: bytes strictly increasing, last cdf 1
  uint64_t truncation_bytes_ = 0;    // 0: none
  std::vector<CdfPoint> effective_;  // points_ after truncation
  double mean_bytes_ = 0;
  double full_mean_bytes_ = 0;
};

// A uniform double in [0, 1) from the top 53 bits of one draw.
inline double UniformUnit(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

}  // namespace wharf::bench
