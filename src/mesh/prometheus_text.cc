// The Prometheus text writer and the latency recount (prometheus_text.h).
#include "mesh/prometheus_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iterator>
#include <utility>
#include <vector>

#include "base/text.h"

namespace wharf::mesh {
namespace {

bool IsAsciiLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsAsciiDigit(char c) { return c >= '0' && c <= '9'; }

// [a-zA-Z_:][a-zA-Z0-9_:]*
bool IsMetricName(std::string_view name) {
  if (name.empty() || IsAsciiDigit(name[0])) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return IsAsciiLetter(c) || IsAsciiDigit(c) || c == '_' || c == ':';
  });
}

// [a-zA-Z_][a-zA-Z0-9_]*
bool IsLabelName(std::string_view name) {
  if (name.empty() || IsAsciiDigit(name[0])) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return IsAsciiLetter(c) || IsAsciiDigit(c) || c == '_'; });
}

std::string_view TypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

// HELP text escapes backslash and newline; a label value also the quote.
void AppendEscaped(std::string& out, std::string_view text, bool escape_quote) {
  for (const char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && escape_quote) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

void AppendUint(std::string& out, uint64_t value) {
  char buf[24];
  const auto result = std::to_chars(buf, buf + sizeof(buf), value);
  out.append(buf, result.ptr);
}

// A double as Go's strconv.FormatFloat(v, 'g', -1, 64) writes it, which is
// what client_golang puts in `le` (and client_python imitates): the shortest
// digits that parse back to v, in %e form when the decimal exponent is
// below -4 or at least 6, else in %f form. Matching it keeps wharf's `le`
// values identical to other exporters' for the same bound, so histograms
// can be summed across jobs by `le`. "1e-06", "0.0001", "2.5", "1e+06".
void AppendGoFloat(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "NaN";
    return;
  }
  if (std::isinf(value)) {
    out += value > 0 ? "+Inf" : "-Inf";
    return;
  }
  // Shortest round-trip digits: "-1.2345678901234567e-308" is the longest.
  char buf[32];
  const auto sci = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
  const std::string_view digits(buf, static_cast<size_t>(sci.ptr - buf));
  const size_t e = digits.find('e');
  int exponent = 0;
  std::from_chars(digits.data() + e + 2, digits.data() + digits.size(), exponent);
  if (digits[e + 1] == '-') exponent = -exponent;
  if (exponent < -4 || exponent >= 6) {
    out += digits;
    return;
  }
  const auto fixed = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::fixed);
  out.append(buf, fixed.ptr);
}

// A sample value: an integral double below 2^53 as an integer ("1000000",
// not Go's "1e+06"), any other as AppendGoFloat. Both parse back exactly.
void AppendValue(std::string& out, double value) {
  if (std::isfinite(value) && std::fabs(value) < 0x1p53 && value == std::trunc(value)) {
    const auto integer = static_cast<int64_t>(value);
    if (integer < 0) out += '-';
    AppendUint(out, static_cast<uint64_t>(integer < 0 ? -integer : integer));
    return;
  }
  AppendGoFloat(out, value);
}

}  // namespace

void PrometheusText::Family(std::string_view name, MetricType type, std::string_view help) {
  if (!error_.ok()) return;
  if (!IsMetricName(name)) return Fail(name, "not a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)");
  if (type == MetricType::kCounter && !name.ends_with("_total")) {
    return Fail(name, "a counter's name must end in _total");
  }
  if (help.empty()) return Fail(name, "no help text");
  if (!IsValidUtf8(help)) return Fail(name, "help text is not UTF-8");
  std::vector<std::string> series{std::string(name)};
  if (type == MetricType::kHistogram) {
    for (const std::string_view suffix : {"_bucket", "_sum", "_count"}) {
      series.push_back(std::string(name) + std::string(suffix));
    }
  }
  for (const std::string& s : series) {
    const auto taken = series_names_.find(s);
    if (taken == series_names_.end()) continue;
    if (taken->second == name) {
      return Fail(name, "family written twice (a family's samples must be written together)");
    }
    return Fail(name, "series " + s + " is family " + taken->second + "'s");
  }
  for (std::string& s : series) series_names_.emplace(std::move(s), name);

  text_ += "# HELP ";
  text_ += name;
  text_ += ' ';
  AppendEscaped(text_, help, /*escape_quote=*/false);
  text_ += "\n# TYPE ";
  text_ += name;
  text_ += ' ';
  text_ += TypeName(type);
  text_ += '\n';
  name_ = name;
  type_ = type;
  label_sets_.clear();
}

void PrometheusText::Sample(std::initializer_list<Label> labels, double value) {
  if (!CheckSample(labels, /*histogram=*/false)) return;
  if (type_ == MetricType::kCounter && value < 0) return Fail(name_, "a counter is negative");
  text_ += name_;
  AppendLabels(labels, {});
  text_ += ' ';
  AppendValue(text_, value);
  text_ += '\n';
}

void PrometheusText::Sample(std::initializer_list<Label> labels, uint64_t value) {
  if (!CheckSample(labels, /*histogram=*/false)) return;
  text_ += name_;
  AppendLabels(labels, {});
  text_ += ' ';
  AppendUint(text_, value);
  text_ += '\n';
}

void PrometheusText::HistogramSample(std::initializer_list<Label> labels,
                                     std::span<const double> upper_bounds,
                                     std::span<const uint64_t> cumulative_counts, uint64_t count,
                                     double sum) {
  if (!CheckSample(labels, /*histogram=*/true)) return;
  if (upper_bounds.size() != cumulative_counts.size()) {
    return Fail(name_, std::to_string(upper_bounds.size()) + " bucket bounds but " +
                           std::to_string(cumulative_counts.size()) + " counts");
  }
  for (size_t i = 0; i < upper_bounds.size(); ++i) {
    if (!std::isfinite(upper_bounds[i])) {
      return Fail(name_, "bucket bound " + std::to_string(i) + " is not finite (+Inf is implied)");
    }
    if (i > 0 && !(upper_bounds[i] > upper_bounds[i - 1])) {
      return Fail(name_, "bucket bounds are not strictly increasing at " + std::to_string(i));
    }
    if (i + 1 < cumulative_counts.size() && cumulative_counts[i + 1] < cumulative_counts[i]) {
      return Fail(name_, "cumulative bucket counts decrease after bucket " + std::to_string(i));
    }
  }

  if (!cumulative_counts.empty() && cumulative_counts.back() > count) {
    return Fail(name_, "cumulative bucket counts exceed the total count");
  }

  const std::string bucket_name = name_ + "_bucket";
  std::string le;
  for (size_t i = 0; i < upper_bounds.size(); ++i) {
    le.clear();
    AppendGoFloat(le, upper_bounds[i]);
    text_ += bucket_name;
    AppendLabels(labels, le);
    text_ += ' ';
    AppendUint(text_, cumulative_counts[i]);
    text_ += '\n';
  }
  text_ += bucket_name;
  AppendLabels(labels, "+Inf");
  text_ += ' ';
  AppendUint(text_, count);
  text_ += '\n';
  text_ += name_;
  text_ += "_sum";
  AppendLabels(labels, {});
  text_ += ' ';
  AppendValue(text_, sum);
  text_ += '\n';
  text_ += name_;
  text_ += "_count";
  AppendLabels(labels, {});
  text_ += ' ';
  AppendUint(text_, count);
  text_ += '\n';
}

Result<std::string> PrometheusText::Finish() {
  PrometheusText done = std::exchange(*this, PrometheusText());
  if (!done.error_.ok()) return std::move(done.error_);
  return std::move(done.text_);
}

void PrometheusText::Fail(std::string_view metric, std::string_view problem) {
  if (!error_.ok()) return;
  error_ = InvalidArgumentError("prometheus text: " + PrintableText(metric, 200) + ": " +
                                std::string(problem));
}

bool PrometheusText::CheckSample(std::initializer_list<Label> labels, bool histogram) {
  if (!error_.ok()) return false;
  if (name_.empty()) {
    Fail("(no family)", "a sample before any Family");
    return false;
  }
  if (histogram != (type_ == MetricType::kHistogram)) {
    Fail(name_, histogram ? "HistogramSample on a " + std::string(TypeName(type_))
                          : std::string("Sample on a histogram (use HistogramSample)"));
    return false;
  }
  std::vector<Label> sorted(labels);
  for (const Label& label : sorted) {
    std::string problem;
    if (!IsLabelName(label.name)) {
      problem = "not a label name ([a-zA-Z_][a-zA-Z0-9_]*)";
    } else if (label.name.starts_with("__")) {
      problem = "label names starting with __ are reserved";
    } else if (label.name == "le" || label.name == "quantile") {
      problem = "the format's own label (the writer adds it)";
    } else if (!IsValidUtf8(label.value)) {
      problem = "value is not UTF-8";
    }
    if (!problem.empty()) {
      Fail(name_, "label \"" + PrintableText(label.name, 100) + "\": " + problem);
      return false;
    }
  }
  std::sort(sorted.begin(), sorted.end(),
            [](const Label& a, const Label& b) { return a.name < b.name; });
  // Quoted escaped values keep the key unambiguous: {a="x\",b=\"y"} is not
  // {a="x",b="y"}.
  std::string key;
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (i > 0 && sorted[i].name == sorted[i - 1].name) {
      Fail(name_, "label \"" + std::string(sorted[i].name) + "\" given twice");
      return false;
    }
    key += sorted[i].name;
    key += "=\"";
    AppendEscaped(key, sorted[i].value, /*escape_quote=*/true);
    key += "\",";
  }
  if (!label_sets_.insert(std::move(key)).second) {
    Fail(name_, "the same label set twice in the family");
    return false;
  }
  return true;
}

void PrometheusText::AppendLabels(std::initializer_list<Label> labels, std::string_view le) {
  if (labels.size() == 0 && le.empty()) return;
  text_ += '{';
  bool first = true;
  for (const Label& label : labels) {
    if (!first) text_ += ',';
    first = false;
    text_ += label.name;
    text_ += "=\"";
    AppendEscaped(text_, label.value, /*escape_quote=*/true);
    text_ += '"';
  }
  if (!le.empty()) {
    if (!first) text_ += ',';
    text_ += "le=\"";
    text_ += le;
    text_ += '"';
  }
  text_ += '}';
}

PrometheusLatency ToPrometheusLatency(const Histogram& latency_ns) {
  PrometheusLatency out;
  latency_ns.ForEachBucket([&](const HistogramBucket& bucket) {
    const auto bound =
        std::lower_bound(kLatencyBucketsNs.begin(), kLatencyBucketsNs.end(), bucket.upper);
    if (bound != kLatencyBucketsNs.end()) {
      out.cumulative_counts[static_cast<size_t>(bound - kLatencyBucketsNs.begin())] += bucket.count;
    }
  });
  for (size_t i = 1; i < kLatencyBucketCount; ++i) {
    out.cumulative_counts[i] += out.cumulative_counts[i - 1];
  }
  out.count = latency_ns.Count();
  out.sum_seconds = latency_ns.Mean() * static_cast<double>(latency_ns.Count()) / 1e9;
  return out;
}

}  // namespace wharf::mesh
