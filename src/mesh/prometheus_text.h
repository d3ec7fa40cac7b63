// mesh/prometheus_text.h: PrometheusText, a writer of the Prometheus text
// exposition format 0.0.4 (what wharfd serves at /metrics), and the fixed
// latency buckets that base/Histogram is recounted into for it.
//
// It knows the format, not the metrics: which families exist, their names,
// help and labels are the caller's (metrics_exporter.cc). It does no HTTP.
//
// What a family looks like (HELP, TYPE, then every sample of the family):
//
//   # HELP wharf_probe_rtt_seconds Round-trip time of mesh probes.
//   # TYPE wharf_probe_rtt_seconds histogram
//   wharf_probe_rtt_seconds_bucket{target="b",le="1e-06"} 0
//   ...                                                  (one line per bound)
//   wharf_probe_rtt_seconds_bucket{target="b",le="+Inf"} 7
//   wharf_probe_rtt_seconds_sum{target="b"} 0.000123
//   wharf_probe_rtt_seconds_count{target="b"} 7
//
// Project conventions: names start with `wharf_` and carry base units
// (`_seconds`, `_bytes`); counters end in `_total`; latency is a histogram
// over kLatencyBucketsSeconds. The writer enforces what the format and
// `promtool check metrics` require (see PrometheusText); the prefix and the
// units are the caller's.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>

#include "base/histogram.h"
#include "wharf/result.h"
#include "wharf/status.h"

namespace wharf::mesh {

enum class MetricType : uint8_t { kCounter, kGauge, kHistogram };

// One label of a sample. Both views are borrowed for the call only.
struct Label {
  std::string_view name;   // [a-zA-Z_][a-zA-Z0-9_]*, not "__..." (reserved)
  std::string_view value;  // any UTF-8; escaped on output
};

// Builds one exposition in memory. Owned by whoever renders /metrics, for
// one rendering; not thread-safe (gather the values first, then write).
//
// Misuse is reported, not aborted on: the first one is kept, later calls are
// ignored, and Finish() returns it (kInvalidArgument, naming the metric)
// instead of a text, so a broken exposition is never served. Misuse is:
//   - a metric name not [a-zA-Z_:][a-zA-Z0-9_:]*, a counter not ending in
//     `_total`, empty or non-UTF-8 help;
//   - a family started twice (its samples would be split) or whose name is
//     taken by an earlier family, including a histogram's _bucket, _sum and
//     _count series;
//   - a sample before any Family, Sample on a histogram, HistogramSample on
//     a counter or gauge, a negative counter value;
//   - a label name not [a-zA-Z_][a-zA-Z0-9_]*, starting with "__", or `le` or
//     `quantile` (the format's own); the same label name twice in a sample,
//     the same label set twice in a family, a value that is not UTF-8;
//   - histogram bounds that are not finite or not strictly increasing, as
//     many counts as bounds not given, cumulative counts that decrease or
//     exceed the total count.
class PrometheusText {
 public:
  PrometheusText() = default;

  // Starts a family: writes "# HELP name help" and "# TYPE name type". Every
  // sample until the next Family belongs to it. A counter's name is its full
  // series name, `_total` included (format 0.0.4 has no suffix rule).
  void Family(std::string_view name, MetricType type, std::string_view help);

  // One counter or gauge sample: "name{labels} value". A double parses back
  // to the same double: "3" for an integral one below 2^53, else the
  // shortest digits in Go's %g layout ("1.5", "1e-07", "1e+300"), or +Inf,
  // -Inf, NaN. A uint64_t is written exactly, even above 2^53. An int
  // argument is ambiguous on purpose: pass uint64_t{n} or a double.
  void Sample(std::initializer_list<Label> labels, double value);
  void Sample(std::initializer_list<Label> labels, uint64_t value);

  // One histogram: a `_bucket` line per bound with le="<bound>", then
  // le="+Inf" with `count`, then `_sum` and `_count`. `upper_bounds` are
  // finite and strictly increasing (+Inf is added here, not passed);
  // `cumulative_counts[i]` counts observations <= upper_bounds[i]; `count`
  // counts all of them; `sum` is their total, in the metric's unit.
  void HistogramSample(std::initializer_list<Label> labels, std::span<const double> upper_bounds,
                       std::span<const uint64_t> cumulative_counts, uint64_t count, double sum);

  // The exposition, or the first misuse. Leaves the writer empty, ready for
  // another rendering.
  Result<std::string> Finish();

 private:
  // Records `problem` about `metric` unless an error is already held.
  void Fail(std::string_view metric, std::string_view problem);
  // Checks that a sample (a histogram one or not) may be written to the
  // current family with these labels, and records the label set; false
  // (after Fail) if not.
  bool CheckSample(std::initializer_list<Label> labels, bool histogram);
  // Appends "{a="x",b="y"}", with `le` last when given; nothing when both
  // are empty.
  void AppendLabels(std::initializer_list<Label> labels, std::string_view le);

  std::string text_;
  Status error_;  // the first misuse; ok while there is none
  // The current family; name_ empty before the first Family.
  std::string name_;
  MetricType type_ = MetricType::kGauge;
  // Series name -> its family, for the families written so far (a
  // histogram's _bucket, _sum and _count included), so that none is started
  // twice and no two families share a series name.
  std::map<std::string, std::string, std::less<>> series_names_;
  // The label sets of the current family, each as its sorted "name=value"
  // list, so that a series is not written twice.
  std::set<std::string, std::less<>> label_sets_;
};

// Prometheus bucket bounds for latency, 1 µs to 10 s in a 1-2.5-5 series.
// Every labelled latency histogram costs kLatencyBucketCount + 3 series (a
// bucket per bound, le="+Inf", _sum, _count): 25 per label set.
//
// The bounds in ns are exact integers; the seconds are the nearest doubles
// to them (ns / 1e9 is correctly rounded, and so monotonic), so they print
// as "1e-06", "2.5e-06", ..., "10", and for any n ns below 2^53,
// double(n) / 1e9 <= kLatencyBucketsSeconds[i] exactly when
// n <= kLatencyBucketsNs[i]: a value of 1000 ns is at le="1e-06" whichever
// array it is compared against.
inline constexpr std::array<uint64_t, 22> kLatencyBucketsNs = {
    1'000,         2'500,         5'000,         10'000,         25'000,      50'000,
    100'000,       250'000,       500'000,       1'000'000,      2'500'000,   5'000'000,
    10'000'000,    25'000'000,    50'000'000,    100'000'000,    250'000'000, 500'000'000,
    1'000'000'000, 2'500'000'000, 5'000'000'000, 10'000'000'000,
};
inline constexpr size_t kLatencyBucketCount = kLatencyBucketsNs.size();
inline constexpr std::array<double, kLatencyBucketCount> kLatencyBucketsSeconds = [] {
  std::array<double, kLatencyBucketCount> seconds{};
  for (size_t i = 0; i < kLatencyBucketCount; ++i) {
    seconds[i] = static_cast<double>(kLatencyBucketsNs[i]) / 1e9;
  }
  return seconds;
}();

// A latency Histogram (values in ns) recounted at kLatencyBucketsSeconds:
// the arguments of PrometheusText::HistogramSample for it.
struct PrometheusLatency {
  // cumulative_counts[i]: values counted at or below kLatencyBucketsSeconds[i].
  std::array<uint64_t, kLatencyBucketCount> cumulative_counts{};
  uint64_t count = 0;        // every recorded value, overflow included (le="+Inf")
  double sum_seconds = 0.0;  // Mean() * Count() / 1e9: the sum, to double rounding
};

// Each log-linear bucket of `latency_ns` counts at the first bound at or
// above its upper edge. A bucket that straddles a bound (only buckets wider
// than 1 ns, values >= 256 ns, by at most 0.79% of the value) counts at the
// next bound: a value is never reported faster than it was, so 1000 ns
// exactly, in bucket [1000, 1003], counts at 2.5e-06, not 1e-06 (a recorder
// that keeps exact values counts it at 1e-06). Values beyond the last bound
// or the histogram's max_value count only in `count`.
PrometheusLatency ToPrometheusLatency(const Histogram& latency_ns);

}  // namespace wharf::mesh
