// The link-rate bottleneck: rate parsing, tbf sizing, installing the tbfs on
// a cluster and reading their counters back from `tc -s`.
#include "netns/bottleneck.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <utility>

#include "netns/subprocess.h"

namespace wharf::netns {
namespace {

constexpr DurationNs kTcTimeoutNs = 20 * kNsPerSec;
constexpr int64_t kMinBurstBytes = 64 * 1024;
// Two full 1500-byte frames: the least bucket that lets the link run back to
// back with priority queues.
constexpr int64_t kMinPriorityBurstBytes = 2 * 1514;
constexpr const char* kLatency = "5ms";

struct Unit {
  std::string_view name;
  double bits;  // bits per second of one unit
};
// Longest names first so that "kbit" is not read as "bit" after a 'k'.
constexpr Unit kUnits[] = {
    {"tbit", 1e12}, {"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}, {"bit", 1},
};

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// "1234", "12Kb", "3Mb", "1Gb" (tc's sprint_size: powers of 1024) -> bytes.
std::optional<int64_t> ParseSize(std::string_view word) {
  size_t digits = 0;
  while (digits < word.size() &&
         (std::isdigit(static_cast<unsigned char>(word[digits])) != 0 || word[digits] == '.')) {
    ++digits;
  }
  if (digits == 0) return std::nullopt;
  const double value = std::strtod(std::string(word.substr(0, digits)).c_str(), nullptr);
  const std::string_view unit = word.substr(digits);
  double scale = 1;
  if (unit == "b" || unit == "p" || unit.empty()) {
    scale = 1;
  } else if (unit == "Kb") {
    scale = 1024;
  } else if (unit == "Mb") {
    scale = 1024.0 * 1024;
  } else if (unit == "Gb") {
    scale = 1024.0 * 1024 * 1024;
  } else {
    return std::nullopt;
  }
  return static_cast<int64_t>(std::llround(value * scale));
}

// The integer after `key` in `text` ("Sent 123 bytes" with key "Sent "),
// or nullopt.
std::optional<int64_t> NumberAfter(std::string_view text, std::string_view key) {
  const size_t at = text.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  size_t end = at + key.size();
  while (end < text.size() && text[end] != ' ' && text[end] != ',' && text[end] != ')' &&
         text[end] != '\n') {
    ++end;
  }
  return ParseSize(text.substr(at + key.size(), end - at - key.size()));
}

std::vector<QueueStats> QueuesOf(const NetnsCluster& cluster, bool ingress) {
  std::vector<QueueStats> queues;
  for (int host = 0; host < cluster.host_count(); ++host) {
    queues.push_back({.host = host,
                      .ingress = false,
                      .netns = cluster.namespace_name(host),
                      .device = NetnsCluster::kHostInterface});
    if (ingress) {
      queues.push_back({.host = host,
                        .ingress = true,
                        .netns = cluster.switch_namespace(),
                        .device = "p" + std::to_string(host)});
    }
  }
  return queues;
}

}  // namespace

Result<int64_t> ParseRateBitsPerSecond(std::string_view text) {
  const std::string lower = Lower(text);
  size_t digits = 0;
  while (digits < lower.size() &&
         (std::isdigit(static_cast<unsigned char>(lower[digits])) != 0 || lower[digits] == '.')) {
    ++digits;
  }
  const std::string number = lower.substr(0, digits);
  const std::string unit = lower.substr(digits);
  const auto bad = [&] {
    return InvalidArgumentError("rate '" + std::string(text) +
                                "': expected a number and a unit such as 1gbit, 200mbit, 64kbit");
  };
  if (number.empty() || std::count(number.begin(), number.end(), '.') > 1 || number == ".") {
    return bad();
  }
  double bits = 0;
  if (unit.empty()) {
    bits = 1;
  } else {
    const auto* found = std::find_if(std::begin(kUnits), std::end(kUnits),
                                     [&](const Unit& u) { return u.name == unit; });
    if (found == std::end(kUnits)) {
      if (unit.ends_with("bps")) {
        return InvalidArgumentError("rate '" + std::string(text) +
                                    "' is ambiguous: tc reads 'bps' as bytes per second, wharf's "
                                    "config as bits; write it in bit, kbit, mbit or gbit");
      }
      return bad();
    }
    bits = found->bits;
  }
  const double value = std::strtod(number.c_str(), nullptr) * bits;
  if (!std::isfinite(value) || value >= 9.2e18) return bad();
  return static_cast<int64_t>(std::llround(value));
}

std::string FormatRate(int64_t bits_per_second) {
  constexpr std::pair<int64_t, const char*> kScales[] = {
      {1'000'000'000'000, "tbit"}, {1'000'000'000, "gbit"}, {1'000'000, "mbit"}, {1'000, "kbit"}};
  for (const auto& [scale, name] : kScales) {
    if (bits_per_second >= scale && bits_per_second % scale == 0) {
      return std::to_string(bits_per_second / scale) + name;
    }
  }
  return std::to_string(bits_per_second) + "bit";
}

int64_t TbfBurstBytes(int64_t bits_per_second) {
  // Bytes one millisecond of the rate carries.
  return std::max(kMinBurstBytes, bits_per_second / 8 / 1000);
}

TbfOptions TbfForRate(int64_t bits_per_second) {
  // tc reads a bare "b" suffix as bytes.
  return TbfOptions{.burst = std::to_string(TbfBurstBytes(bits_per_second)) + "b",
                    .latency = kLatency};
}

Result<BottleneckReport> ApplyBottleneck(NetnsCluster& cluster, int64_t bits_per_second,
                                         bool ingress, int priority_levels) {
  if (bits_per_second < kMinBottleneckBitsPerSecond ||
      bits_per_second > kMaxBottleneckBitsPerSecond) {
    return InvalidArgumentError("bottleneck rate " + FormatRate(bits_per_second) +
                                " is outside 1mbit to 100gbit");
  }
  BottleneckReport report;
  report.rate_bits_per_second = bits_per_second;
  report.tbf = TbfForRate(bits_per_second);
  report.tbf.priority_levels = priority_levels;
  report.burst_bytes = TbfBurstBytes(bits_per_second);
  if (priority_levels > 1) {
    // The classes' queues cut GSO packets into frames (netns_cluster.cc),
    // so the bucket needs no 64 KiB floor, and a big one would let an idle
    // link pass many frames at once: unloaded round trips of unpaced
    // senders (TCP) came out faster than the link can carry them. 200 us of
    // the rate (25 kB at 1 Gbit/s) is the least with which one TCP stream
    // still reached 95% of 1 Gbit/s here (100 us: 69-90%).
    report.burst_bytes = std::max<int64_t>(kMinPriorityBurstBytes, bits_per_second / 8 / 5000);
    report.tbf.burst = std::to_string(report.burst_bytes) + "b";
  }
  const std::string rate = FormatRate(bits_per_second);
  for (int host = 0; host < cluster.host_count(); ++host) {
    WHARF_RETURN_IF_ERROR(cluster.SetEgressRate(host, rate, report.tbf));
    if (ingress) WHARF_RETURN_IF_ERROR(cluster.SetIngressRate(host, rate, report.tbf));
  }
  report.queues = QueuesOf(cluster, ingress);
  return report;
}

Result<std::vector<QueueStats>> ReadBottleneckQueues(const NetnsCluster& cluster, bool ingress) {
  std::vector<QueueStats> queues = QueuesOf(cluster, ingress);
  for (QueueStats& queue : queues) {
    WHARF_ASSIGN_OR_RETURN(
        CommandOutput shown,
        RunChecked({"tc", "-n", queue.netns, "-s", "qdisc", "show", "dev", queue.device, "root"},
                   {}, kTcTimeoutNs));
    WHARF_RETURN_IF_ERROR(ParseTcQdiscStats(shown.stdout_text, queue)
                              .WithContext("reading " + queue.netns + "/" + queue.device));
  }
  return queues;
}

Status ParseTcQdiscStats(std::string_view text, QueueStats& stats) {
  const size_t sent = text.find(" Sent ");
  if (sent == std::string_view::npos) {
    return InvalidArgumentError("no 'Sent' line in tc output: " + std::string(text));
  }
  const std::string_view rest = text.substr(sent);
  stats.sent_bytes = NumberAfter(rest, "Sent ").value_or(0);
  stats.sent_packets = NumberAfter(rest, "bytes ").value_or(0);
  stats.dropped_packets = NumberAfter(rest, "dropped ").value_or(0);
  stats.overlimits = NumberAfter(rest, "overlimits ").value_or(0);
  const size_t backlog = rest.find("backlog ");
  if (backlog != std::string_view::npos) {
    const std::string_view words = rest.substr(backlog);
    stats.backlog_bytes = NumberAfter(words, "backlog ").value_or(0);
    const size_t space = words.find(' ', 8);
    if (space != std::string_view::npos) {
      stats.backlog_packets = NumberAfter(words.substr(space), " ").value_or(0);
    }
  }
  return OkStatus();
}

}  // namespace wharf::netns
