// Rendering a BaselineReport as a table (printf) and as JSON (nlohmann-json).
#include "bench/report.h"

#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "wharf/build_info.h"

namespace wharf::bench {
namespace {

using Json = nlohmann::ordered_json;  // keeps the members in the order written

__attribute__((format(printf, 1, 2))) std::string Printf(const char* format, ...) {
  char line[256];
  va_list args;
  va_start(args, format);
  ::vsnprintf(line, sizeof(line), format, args);
  va_end(args);
  return line;
}

double Us(DurationNs ns) { return static_cast<double>(ns) / kNsPerUs; }

Json PinningJson(const PinPlan& plan) {
  Json j = {{"pinned", plan.pin}};
  if (plan.pin) {
    j["client_cpu"] = plan.client_cpu;
    j["server_cpu"] = plan.server_cpu;
  }
  if (!plan.note.empty()) j["note"] = plan.note;
  return j;
}

}  // namespace

double CpuUsPerRoundTrip(const PingPongResult& result) {
  if (result.cpu_ns < 0 || result.latency.count == 0) return -1;
  return static_cast<double>(result.cpu_ns) / kNsPerUs / static_cast<double>(result.latency.count);
}

std::string PingPongRow::Name() const {
  return proto + " " + std::string(WaitModeName(mode)) + " " + std::to_string(size_bytes) + " B";
}

std::string WithThousands(uint64_t value) {
  std::string digits = std::to_string(value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string FormatTable(const BaselineReport& report) {
  std::string out;
  std::vector<std::string> notes;
  if (!report.pingpong.empty()) {
    out += Printf("%-36s %8s %8s %8s %9s %9s %8s %9s %9s\n", "baseline", "p50 us", "p90 us",
                  "p99 us", "p99.9 us", "max us", "mean us", "RTT/s", "CPU us/RT");
    for (const PingPongRow& row : report.pingpong) {
      const LatencySummary& l = row.result.latency;
      const double cpu_us = CpuUsPerRoundTrip(row.result);
      out += Printf("%-36s %8.1f %8.1f %8.1f %9.1f %9.1f %8.1f %9s %9s\n", row.Name().c_str(),
                    Us(l.p50_ns), Us(l.p90_ns), Us(l.p99_ns), Us(l.p999_ns), Us(l.max_ns),
                    l.mean_ns / kNsPerUs,
                    WithThousands(static_cast<uint64_t>(std::llround(l.rate_per_sec))).c_str(),
                    cpu_us < 0 ? "-" : Printf("%.1f", cpu_us).c_str());
      std::string what = row.Name() + ": " + WithThousands(l.count) + " round trips";
      if (row.result.hit_time_limit) {
        notes.push_back(what + " (stopped by the time limit before " +
                        WithThousands(report.iterations) + ")");
      }
      if (row.result.timeouts > 0) {
        notes.push_back(what + ", " + std::to_string(row.result.timeouts) +
                        " resent after a lost datagram");
      }
      if (!row.result.pinning.note.empty())
        notes.push_back(row.Name() + ": " + row.result.pinning.note);
      if (!row.result.hosting_note.empty())
        notes.push_back(row.Name() + ": " + row.result.hosting_note);
    }
  }
  if (report.goodput) {
    const Iperf3Result& g = *report.goodput;
    const std::string retransmits =
        g.retransmits >= 0 ? ", " + std::to_string(g.retransmits) + " retransmits" : "";
    out += Printf("%-20s %8.2f Gbit/s (one TCP stream, %d s%s)\n", "iperf3 goodput",
                  g.received_bits_per_second / 1e9, report.goodput_seconds, retransmits.c_str());
    if (!g.note.empty()) notes.push_back("iperf3: " + g.note);
    if (!g.pinning.note.empty()) notes.push_back("iperf3: " + g.pinning.note);
  }
  if (!report.pingpong.empty()) {
    notes.push_back(
        "CPU us/RT: user + system CPU time of every process of the row (client, server and, "
        "managed, wharfd) per measured round trip");
  }
  const PinPlan* pinning = nullptr;
  if (!report.pingpong.empty()) pinning = &report.pingpong.front().result.pinning;
  if (pinning == nullptr && report.goodput) pinning = &report.goodput->pinning;
  if (pinning != nullptr) {
    notes.push_back(pinning->pin ? "client on CPU " + std::to_string(pinning->client_cpu) +
                                       ", server on CPU " + std::to_string(pinning->server_cpu)
                                 : "not pinned");
  }
  for (const std::string& note : notes) out += "  note: " + note + "\n";
  return out;
}

std::string FormatJson(const BaselineReport& report) {
  Json doc;
  doc["tool"] = "wharf bench baseline";
  doc["wharf_version"] = kVersion;
  doc["iterations"] = report.iterations;
  doc["warmup"] = report.warmup;
  Json rows = Json::array();
  for (const PingPongRow& row : report.pingpong) {
    const LatencySummary& l = row.result.latency;
    rows.push_back({
        {"name", row.Name()},
        {"proto", row.proto},
        {"mode", std::string(WaitModeName(row.mode))},
        {"size_bytes", row.size_bytes},
        {"address", row.address},
        {"port", row.result.port},
        {"count", l.count},
        {"min_ns", l.min_ns},
        {"p50_ns", l.p50_ns},
        {"p90_ns", l.p90_ns},
        {"p99_ns", l.p99_ns},
        {"p999_ns", l.p999_ns},
        {"max_ns", l.max_ns},
        {"mean_ns", l.mean_ns},
        {"elapsed_ns", l.elapsed_ns},
        {"round_trips_per_sec", l.rate_per_sec},
        {"warmup_done", row.result.warmup_done},
        {"timeouts", row.result.timeouts},
        {"hit_time_limit", row.result.hit_time_limit},
        {"pinning", PinningJson(row.result.pinning)},
        {"server_exit", row.result.server_exit},
    });
    if (row.result.cpu_ns >= 0) {
      rows.back()["cpu_ns"] = row.result.cpu_ns;
      rows.back()["cpu_ns_per_round_trip"] = CpuUsPerRoundTrip(row.result) * kNsPerUs;
      rows.back()["cpu_processes"] = row.result.cpu_processes;
    }
    if (!row.result.hosting_note.empty()) rows.back()["hosting"] = row.result.hosting_note;
  }
  doc["pingpong"] = std::move(rows);
  if (report.goodput) {
    const Iperf3Result& g = *report.goodput;
    Json goodput = {
        {"tool", g.version.empty() ? "iperf3" : g.version},
        {"streams", 1},
        {"requested_seconds", report.goodput_seconds},
        {"seconds", g.seconds},
        {"received_bits_per_second", g.received_bits_per_second},
        {"sent_bits_per_second", g.sent_bits_per_second},
        {"port", g.port},
        {"pinning", PinningJson(g.pinning)},
    };
    if (g.retransmits >= 0) goodput["retransmits"] = g.retransmits;
    if (!g.note.empty()) goodput["note"] = g.note;
    doc["goodput"] = std::move(goodput);
  }
  return doc.dump(2) + "\n";
}

Status WriteTextFile(const std::string& path, const std::string& text) {
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) return ErrnoToStatus(errno, "open " + path);
  const size_t written = std::fwrite(text.data(), 1, text.size(), file);
  const int write_errno = errno;
  if (std::fclose(file) != 0 || written != text.size()) {
    return ErrnoToStatus(written != text.size() ? write_errno : errno, "write " + path);
  }
  return OkStatus();
}

}  // namespace wharf::bench
