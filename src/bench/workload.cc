// Workload: parsing a bytes,cdf CSV, sampling the step CDF, truncation, means.
#include "bench/workload.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>

#include "base/config_value.h"

#ifndef WHARF_WORKLOAD_DIR
#error "WHARF_WORKLOAD_DIR must be defined by the build (src/bench/CMakeLists.txt)"
#endif

namespace wharf::bench {
namespace {

// The rows must end at exactly 1, but a file written with fewer digits may
// end at 0.999999999999; within this of 1 counts as 1 (and is set to 1).
constexpr double kLastCdfTolerance = 1e-9;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string Where(std::string_view source, size_t line) {
  return std::string(source) + ":" + std::to_string(line) + ": ";
}

double MeanOf(const std::vector<CdfPoint>& points) {
  // Summed in long double: W5 multiplies sizes of 10^7 by fractions of 10^-3.
  long double sum = 0;
  double previous = 0;
  for (const CdfPoint& p : points) {
    sum += static_cast<long double>(p.bytes) * (p.cdf - previous);
    previous = p.cdf;
  }
  return static_cast<double>(sum);
}

// The file's base name without ".csv": "/x/w3.csv" -> "w3".
std::string StemOf(const std::string& path) {
  std::string stem = path.substr(path.find_last_of('/') + 1);
  if (stem.size() > 4 && stem.ends_with(".csv")) stem.resize(stem.size() - 4);
  return stem;
}

}  // namespace

const char* DefaultWorkloadDir() { return WHARF_WORKLOAD_DIR; }

Workload::Workload(std::string name, std::vector<CdfPoint> points)
    : name_(std::move(name)), points_(std::move(points)) {
  Recompute();
}

void Workload::Recompute() {
  effective_.clear();
  for (const CdfPoint& p : points_) {
    if (truncation_bytes_ != 0 && p.bytes >= truncation_bytes_) {
      // Everything from here on is cut to the limit: one row, up to cdf 1.
      effective_.push_back({truncation_bytes_, 1.0});
      break;
    }
    effective_.push_back(p);
  }
  mean_bytes_ = MeanOf(effective_);
  full_mean_bytes_ = MeanOf(points_);
}

Result<Workload> Workload::ParseCsv(std::string_view text, std::string_view source) {
  std::vector<CdfPoint> points;
  size_t line_number = 0;
  bool saw_header = false;
  size_t previous_line = 0;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    const std::string_view raw = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    ++line_number;
    const std::string_view line = Trim(raw);
    if (line.empty()) continue;
    if (!saw_header) {
      if (line != "bytes,cdf") {
        return InvalidArgumentError(Where(source, line_number) + "expected the header 'bytes,cdf', got " +
                                    QuoteForError(line));
      }
      saw_header = true;
      continue;
    }
    const size_t comma = line.find(',');
    if (comma == std::string_view::npos || line.find(',', comma + 1) != std::string_view::npos) {
      return InvalidArgumentError(Where(source, line_number) +
                                  "expected two fields 'bytes,cdf', got " + QuoteForError(line));
    }
    const std::string_view bytes_text = Trim(line.substr(0, comma));
    const std::string_view cdf_text = Trim(line.substr(comma + 1));
    Result<uint64_t> bytes = ParseUint(bytes_text);
    if (!bytes.ok()) {
      return InvalidArgumentError(Where(source, line_number) + "bytes: " + bytes.status().message());
    }
    Result<double> cdf = ParseDouble(cdf_text);
    if (!cdf.ok()) {
      return InvalidArgumentError(Where(source, line_number) + "cdf: " + cdf.status().message());
    }
    if (*cdf < 0 || *cdf > 1) {
      return InvalidArgumentError(Where(source, line_number) + "expected a cdf in [0, 1], got " +
                                  QuoteForError(cdf_text));
    }
    if (!points.empty()) {
      const CdfPoint& last = points.back();
      if (*bytes <= last.bytes) {
        return InvalidArgumentError(Where(source, line_number) + "expected bytes greater than " +
                                    std::to_string(last.bytes) + " (line " +
                                    std::to_string(previous_line) + "), got " +
                                    QuoteForError(bytes_text));
      }
      if (*cdf < last.cdf) {
        return InvalidArgumentError(Where(source, line_number) + "expected a cdf of at least " +
                                    std::to_string(last.cdf) + " (line " +
                                    std::to_string(previous_line) + "), got " +
                                    QuoteForError(cdf_text));
      }
    }
    points.push_back({*bytes, *cdf});
    previous_line = line_number;
  }
  if (!saw_header) {
    return InvalidArgumentError(std::string(source) + ": expected the header 'bytes,cdf', got an empty file");
  }
  if (points.empty()) {
    return InvalidArgumentError(std::string(source) + ": expected rows after the header, got none");
  }
  if (std::fabs(points.back().cdf - 1.0) > kLastCdfTolerance) {
    return InvalidArgumentError(Where(source, previous_line) + "expected the last cdf to be 1, got " +
                                std::to_string(points.back().cdf));
  }
  points.back().cdf = 1.0;
  std::string name = StemOf(std::string(source));
  return Workload(std::move(name), std::move(points));
}

Result<Workload> Workload::LoadCsv(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(path + ": cannot open the workload file");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return UnavailableError(path + ": cannot read the workload file");
  return ParseCsv(text.str(), path);
}

Workload Workload::Fixed(uint64_t bytes) {
  return Workload(std::to_string(bytes) + " B", {{bytes, 1.0}});
}

Result<Workload> Workload::FromSpec(std::string_view spec, const std::string& workload_dir) {
  if (spec.size() == 2 && (spec[0] == 'w' || spec[0] == 'W') && spec[1] >= '1' && spec[1] <= '5') {
    return LoadCsv(workload_dir + "/w" + spec[1] + ".csv");
  }
  Result<uint64_t> bytes = ParseBytes(spec);
  if (!bytes.ok()) {
    return InvalidArgumentError("workload: expected w1..w5 or a message size like '100000' or '1MiB', got " +
                                QuoteForError(spec));
  }
  return Fixed(*bytes);
}

Workload Workload::Truncated(uint64_t limit_bytes) const {
  Workload copy = *this;
  copy.truncation_bytes_ = limit_bytes;
  copy.Recompute();
  return copy;
}

std::string Workload::Describe() const {
  if (truncation_bytes_ == 0 || truncation_bytes_ >= points_.back().bytes) return name_;
  return name_ + " (cut at " + std::to_string(truncation_bytes_) + " B)";
}

uint64_t Workload::Sample(double u) const {
  // First row with cdf >= u. u < 1 always finds one since the last cdf is 1;
  // u >= 1 (or NaN) falls to the last row.
  auto it = std::lower_bound(effective_.begin(), effective_.end(), u,
                             [](const CdfPoint& p, double value) { return p.cdf < value; });
  if (it == effective_.end()) return effective_.back().bytes;
  return it->bytes;
}

uint64_t Workload::Sample(std::mt19937_64& rng) const {
  if (is_fixed()) return effective_.front().bytes;
  return Sample(UniformUnit(rng));
}

double Workload::CumulativeFraction(uint64_t bytes) const {
  // Last row with size <= bytes.
  auto it = std::upper_bound(effective_.begin(), effective_.end(), bytes,
                             [](uint64_t value, const CdfPoint& p) { return value < p.bytes; });
  if (it == effective_.begin()) return 0;
  return std::prev(it)->cdf;
}

double Workload::FractionBelow(uint64_t bytes) const {
  return bytes == 0 ? 0 : CumulativeFraction(bytes - 1);
}

}  // namespace wharf::bench
