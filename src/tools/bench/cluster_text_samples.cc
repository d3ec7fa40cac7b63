// tools/bench/cluster_text_samples.cc: formatting and parsing of a load node's
// sample file (format in cluster_text_samples.h).
#include "tools/bench/cluster_text_samples.h"

#include <cinttypes>
#include <cstdio>

#include "base/config_value.h"

namespace wharf::tools::bench {
namespace {

constexpr std::string_view kMagic = "wharf-cluster-samples";
constexpr std::string_view kColumns = "send_offset_ns server request_bytes response_bytes rtt_ns";

std::string Where(std::string_view source, size_t line) {
  return std::string(source) + ":" + std::to_string(line) + ": ";
}

// Splits on single spaces; empty fields (double spaces) stay, and fail parsing.
std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t start = 0;
  while (start <= line.size()) {
    size_t space = line.find(' ', start);
    if (space == std::string_view::npos) space = line.size();
    fields.push_back(line.substr(start, space - start));
    start = space + 1;
  }
  return fields;
}

// The header keys in the order they are written; each must appear once.
enum HeaderKey { kProto, kHost, kHosts, kWorkload, kLoad, kLinkBps, kDurationNs, kSeed, kKeys };
constexpr std::string_view kKeyNames[kKeys] = {"proto", "host", "hosts", "workload",
                                               "load", "link_bps", "duration_ns", "seed"};

Status ParseHeaderValue(HeaderKey key, std::string_view value, ClusterSampleHeader& header) {
  switch (key) {
    case kProto:
      header.proto = std::string(value);
      return header.proto.empty() ? InvalidArgumentError("empty") : OkStatus();
    case kWorkload:
      header.workload = std::string(value);
      return header.workload.empty() ? InvalidArgumentError("empty") : OkStatus();
    case kHost:
    case kHosts: {
      WHARF_ASSIGN_OR_RETURN(int64_t v, ParseInt(value, 0, 1 << 20));
      (key == kHost ? header.host : header.hosts) = static_cast<int>(v);
      return OkStatus();
    }
    case kLoad: {
      WHARF_ASSIGN_OR_RETURN(header.load, ParseDouble(value));
      return OkStatus();
    }
    case kLinkBps: {
      WHARF_ASSIGN_OR_RETURN(header.link_bps, ParseUint(value));
      return OkStatus();
    }
    case kDurationNs: {
      WHARF_ASSIGN_OR_RETURN(header.duration_ns, ParseInt(value, 0));
      return OkStatus();
    }
    case kSeed: {
      WHARF_ASSIGN_OR_RETURN(header.seed, ParseUint(value));
      return OkStatus();
    }
    case kKeys:
      break;
  }
  return InvalidArgumentError("unknown key");
}

Result<ClusterSample> ParseSampleLine(std::string_view line) {
  std::vector<std::string_view> f = Fields(line);
  if (f.size() != 6) {
    return InvalidArgumentError("expected 5 numbers after 's', got " + QuoteForError(line));
  }
  ClusterSample s;
  WHARF_ASSIGN_OR_RETURN(s.send_offset_ns, ParseInt(f[1], 0));
  WHARF_ASSIGN_OR_RETURN(int64_t server, ParseInt(f[2], 0, 1 << 20));
  s.server = static_cast<int>(server);
  WHARF_ASSIGN_OR_RETURN(s.request_bytes, ParseUint(f[3]));
  WHARF_ASSIGN_OR_RETURN(s.response_bytes, ParseUint(f[4]));
  WHARF_ASSIGN_OR_RETURN(s.rtt_ns, ParseInt(f[5], 0));
  return s;
}

Result<ClusterSampleSummary> ParseEndLine(std::string_view line) {
  std::vector<std::string_view> f = Fields(line);
  static constexpr std::string_view kNames[] = {"issued", "completed", "failed", "cpu_ns"};
  if (f.size() != 9) {
    return InvalidArgumentError("expected 'end issued N completed N failed N cpu_ns N', got " +
                                QuoteForError(line));
  }
  for (int i = 0; i < 4; ++i) {
    if (f[1 + 2 * i] != kNames[i]) {
      return InvalidArgumentError("expected '" + std::string(kNames[i]) + "', got " +
                                  QuoteForError(f[1 + 2 * i]));
    }
  }
  ClusterSampleSummary s;
  WHARF_ASSIGN_OR_RETURN(s.issued, ParseUint(f[2]));
  WHARF_ASSIGN_OR_RETURN(s.completed, ParseUint(f[4]));
  WHARF_ASSIGN_OR_RETURN(s.failed, ParseUint(f[6]));
  WHARF_ASSIGN_OR_RETURN(s.cpu_ns, ParseInt(f[8], -1));
  if (s.completed + s.failed > s.issued) {
    return InvalidArgumentError("completed + failed exceeds issued in " + QuoteForError(line));
  }
  return s;
}

}  // namespace

std::string FormatClusterSampleHeader(const ClusterSampleHeader& header) {
  char load[32];
  std::snprintf(load, sizeof(load), "%.17g", header.load);
  std::string out;
  out += std::string(kMagic) + " " + std::to_string(kClusterSamplesVersion) + "\n";
  out += "proto " + header.proto + "\n";
  out += "host " + std::to_string(header.host) + "\n";
  out += "hosts " + std::to_string(header.hosts) + "\n";
  out += "workload " + header.workload + "\n";
  out += "load " + std::string(load) + "\n";
  out += "link_bps " + std::to_string(header.link_bps) + "\n";
  out += "duration_ns " + std::to_string(header.duration_ns) + "\n";
  out += "seed " + std::to_string(header.seed) + "\n";
  out += "columns " + std::string(kColumns) + "\n";
  return out;
}

size_t FormatClusterSample(const ClusterSample& s, char* buffer, size_t size) {
  int n = std::snprintf(buffer, size, "s %" PRId64 " %d %" PRIu64 " %" PRIu64 " %" PRId64 "\n",
                        s.send_offset_ns, s.server, s.request_bytes, s.response_bytes, s.rtt_ns);
  if (n < 0) return 0;
  return static_cast<size_t>(n) < size ? static_cast<size_t>(n) : size - 1;
}

std::string FormatClusterSampleSummary(const ClusterSampleSummary& s) {
  return "end issued " + std::to_string(s.issued) + " completed " + std::to_string(s.completed) +
         " failed " + std::to_string(s.failed) + " cpu_ns " + std::to_string(s.cpu_ns) + "\n";
}

Result<ClusterSampleFile> ParseClusterSamples(std::string_view text, std::string_view source) {
  ClusterSampleFile file;
  bool seen[kKeys] = {};
  bool columns = false;
  bool ended = false;
  size_t line_number = 0;
  while (!text.empty()) {
    size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);
    ++line_number;
    std::string where = Where(source, line_number);
    if (ended) return InvalidArgumentError(where + "text after the 'end' line");
    if (line_number == 1) {
      std::string want = std::string(kMagic) + " " + std::to_string(kClusterSamplesVersion);
      if (line != want) {
        return InvalidArgumentError(where + "expected '" + want + "', got " + QuoteForError(line));
      }
      continue;
    }
    size_t space = line.find(' ');
    std::string_view key = line.substr(0, space);
    std::string_view value = space == std::string_view::npos ? "" : line.substr(space + 1);
    if (!columns) {
      if (key == "columns") {
        for (int k = 0; k < kKeys; ++k) {
          if (!seen[k]) {
            return InvalidArgumentError(where + "header key '" + std::string(kKeyNames[k]) +
                                        "' missing before 'columns'");
          }
        }
        if (value != kColumns) {
          return InvalidArgumentError(where + "expected columns '" + std::string(kColumns) +
                                      "', got " + QuoteForError(value));
        }
        columns = true;
        continue;
      }
      int k = 0;
      while (k < kKeys && kKeyNames[k] != key) ++k;
      if (k == kKeys) {
        return InvalidArgumentError(where + "unknown header key " + QuoteForError(key));
      }
      if (seen[k]) return InvalidArgumentError(where + "header key '" + std::string(key) + "' repeated");
      seen[k] = true;
      Status status = ParseHeaderValue(static_cast<HeaderKey>(k), value, file.header);
      if (!status.ok()) return InvalidArgumentError(where + std::string(key) + ": " + status.message());
      continue;
    }
    if (key == "s") {
      Result<ClusterSample> sample = ParseSampleLine(line);
      if (!sample.ok()) return InvalidArgumentError(where + sample.status().message());
      file.samples.push_back(*sample);
    } else if (key == "end") {
      Result<ClusterSampleSummary> summary = ParseEndLine(line);
      if (!summary.ok()) return InvalidArgumentError(where + summary.status().message());
      file.summary = *summary;
      ended = true;
    } else {
      return InvalidArgumentError(where + "expected an 's' or 'end' line, got " + QuoteForError(line));
    }
  }
  if (!ended) {
    return InvalidArgumentError(std::string(source) +
                                ": no 'end' line (the node did not finish writing)");
  }
  if (file.samples.size() != file.summary.completed) {
    return InvalidArgumentError(std::string(source) + ": " + std::to_string(file.samples.size()) +
                                " sample lines but 'end' says completed " +
                                std::to_string(file.summary.completed));
  }
  return file;
}

}  // namespace wharf::tools::bench
