// `wharf bench throughput`: ratios, targets, tables and JSON of a run.
#include "bench/throughput_report.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "bench/throughput_rounds.h"

namespace wharf::bench {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

bool IsWharf(const std::string& proto) { return proto == "homa" || proto == "tcp"; }

std::string Format(const char* format, double value) {
  char text[64];
  std::snprintf(text, sizeof(text), format, value);
  return text;
}

// "12.3x", or "-" when unknown.
std::string RatioCell(double ratio) { return ratio < 0 ? "-" : Format("%.2fx", ratio); }

// "10x met", "10x MISSED", or "" without a target.
std::string TargetCell(double target, double ratio) {
  if (target <= 0) return "";
  const std::string t = Format("%gx", target);
  if (ratio < 0) return t + " ?";
  return t + (ratio >= target ? " met" : " MISSED");
}

std::string Number(double value, const char* format) {
  return value < 0 ? "-" : Format(format, value);
}

// "9.61-10.40x" over the rounds; "" with one round or none.
std::string RangeCell(const std::vector<double>& ratios) {
  if (ratios.size() < 2) return "";
  const auto [lo, hi] = std::minmax_element(ratios.begin(), ratios.end());
  return Format("%.2f", *lo) + Format("-%.2fx", *hi);
}

// "machine: ..." with the cross-CPU probes, before/after per round; "" without.
std::string CrossCpuLine(const std::vector<double>& gbps) {
  if (gbps.empty()) return "";
  std::string out = "machine: CPU-to-CPU copy, Gbit/s, before/after each round:";
  for (size_t i = 0; i < gbps.size(); ++i) {
    out += (i % 2 == 0 ? (i == 0 ? " " : ", ") : "/") + Format("%.0f", gbps[i]);
  }
  return out + " (a VM's rate can change for minutes; bulk rows move with it)\n";
}

// "machine: ..." with the process switch probes, one per round; "" without.
std::string SwitchLine(const std::vector<double>& us) {
  if (us.empty()) return "";
  std::string out = "machine: process switch on the client CPU, us, before each round:";
  for (size_t i = 0; i < us.size(); ++i) out += (i == 0 ? " " : ", ") + Format("%.1f", us[i]);
  return out + " (managed rows pay two per batch of RPCs on each CPU)\n";
}

// The ratios of one round (or of a run of one round).
double OneRpcRatio(const ThroughputPathResult& path, const ThroughputRow& row,
                   const std::string& baseline) {
  for (const ThroughputRow& g : path.rpc) {
    if (g.proto == baseline && g.in_flight == row.in_flight && g.bytes == row.bytes &&
        g.rpc_per_sec > 0) {
      return row.rpc_per_sec / g.rpc_per_sec;
    }
  }
  return -1;
}

double OneGoodputRatio(const ThroughputPathResult& path, const ThroughputRow& row) {
  if (!path.iperf3.has_value() || path.iperf3->received_bits_per_second <= 0) return -1;
  return GoodputBitsPerSecond(row) / path.iperf3->received_bits_per_second;
}

// `one` applied to each round's copy of `row` (or to the path itself when
// it has no rounds); unknown ratios left out.
template <typename One>
std::vector<double> PerRound(const ThroughputPathResult& path, const ThroughputRow& row,
                             std::vector<ThroughputRow> ThroughputPathResult::*rows, One one) {
  std::vector<double> out;
  if (path.rounds.empty()) {
    if (const double r = one(path, row); r >= 0) out.push_back(r);
    return out;
  }
  for (const ThroughputPathResult& round : path.rounds) {
    for (const ThroughputRow& r : round.*rows) {
      if (!SameRow(r, row)) continue;
      if (const double ratio = one(round, r); ratio >= 0) out.push_back(ratio);
    }
  }
  return out;
}

nlohmann::json RatioJson(const std::vector<double>& rounds, double target) {
  const double ratio = Median(rounds);
  nlohmann::json j = {{"ratio", ratio < 0 ? nlohmann::json() : nlohmann::json(ratio)}};
  if (rounds.size() > 1) j["rounds"] = rounds;
  if (target > 0) {
    j["target"] = target;
    j["met"] = ratio < 0 ? nlohmann::json() : nlohmann::json(ratio >= target);
  }
  return j;
}

}  // namespace

double GoodputBitsPerSecond(const ThroughputRow& row) {
  return row.rpc_per_sec * static_cast<double>(row.bytes) * 8;
}

double CpuMsPerMiB(const ThroughputRow& row) {
  const double mib = static_cast<double>(row.rpcs) * static_cast<double>(row.bytes) / kMiB;
  if (row.total_cpu_ns < 0 || mib <= 0) return -1;
  return static_cast<double>(row.total_cpu_ns) / 1e6 / mib;
}

double Iperf3CpuMsPerMiB(const Iperf3Result& r) {
  if (r.client_cpu_percent < 0 || r.server_cpu_percent < 0 || r.received_bits_per_second <= 0 ||
      r.seconds <= 0) {
    return -1;
  }
  const double cpu_ms = (r.client_cpu_percent + r.server_cpu_percent) / 100 * r.seconds * 1e3;
  const double mib = r.received_bits_per_second / 8 * r.seconds / kMiB;
  return cpu_ms / mib;
}

std::vector<double> RpcRatioRounds(const ThroughputPathResult& path, const ThroughputRow& row,
                                   const std::string& baseline) {
  return PerRound(path, row, &ThroughputPathResult::rpc,
                  [&](const ThroughputPathResult& p, const ThroughputRow& r) {
                    return OneRpcRatio(p, r, baseline);
                  });
}

std::vector<double> GoodputRatioRounds(const ThroughputPathResult& path,
                                       const ThroughputRow& row) {
  return PerRound(path, row, &ThroughputPathResult::goodput, OneGoodputRatio);
}

double RpcRatio(const ThroughputPathResult& path, const ThroughputRow& row,
                const std::string& baseline) {
  return Median(RpcRatioRounds(path, row, baseline));
}

double GoodputRatio(const ThroughputPathResult& path, const ThroughputRow& row) {
  return Median(GoodputRatioRounds(path, row));
}

double RpcTarget(const ThroughputRow& row) {
  if (row.in_flight != 32 && row.in_flight != 256) return 0;
  if (row.proto == "homa" || row.proto == "homa-typed") return 10;
  return row.proto == "tcp" ? 5 : 0;
}

double GoodputTarget(const std::string& path, const ThroughputRow& row) {
  if (!IsWharf(row.proto)) return 0;
  if (path == "loopback") return 2.0;
  return row.proto == "homa" ? 1.0 : 0.8;
}

std::string FormatThroughputReport(const ThroughputReport& report) {
  std::string out;
  char line[512];
  const PinPlan& pin = report.plan.pin;
  for (const ThroughputPathResult& p : report.paths) {
    const bool rounds = p.rounds.size() > 1;
    out += "\npath " + p.path + ": " + p.description + "; " +
           (pin.pin ? "client side on CPU " + std::to_string(pin.client_cpu) +
                          ", server side on CPU " + std::to_string(pin.server_cpu)
                    : std::string("not pinned")) +
           "\n";
    if (rounds) {
      out += "each row: its median of " + std::to_string(p.rounds.size()) +
             " rounds (every series once per round, in turn); vs columns: the median of the "
             "rounds' ratios, their range last\n";
    }
    out += CrossCpuLine(p.cross_cpu_gbps);
    out += SwitchLine(p.process_switch_us);
    if (!p.rpc.empty()) {
      std::snprintf(line, sizeof(line),
                    "RPC throughput, %llu B requests and responses, closed loop:\n",
                    static_cast<unsigned long long>(p.rpc.front().bytes));
      out += line;
      std::snprintf(line, sizeof(line), "%-16s %9s %12s %9s %9s %11s %9s %9s %9s %12s %7s%s\n",
                    "series", "in flight", "RPC/s", "P50 us", "P99 us", "CPU ns/RPC",
                    "CPUs busy", "vs grpc", "vs sync", "target", "failed",
                    rounds ? "  vs grpc range" : "");
      out += line;
      for (const ThroughputRow& r : p.rpc) {
        const double ratio = RpcRatio(p, r, "grpc");
        std::snprintf(line, sizeof(line),
                      "%-16s %9d %12.0f %9.1f %9.1f %11s %9s %9s %9s %12s %7llu  %s\n",
                      r.label.c_str(), r.in_flight, r.rpc_per_sec, r.p50_us, r.p99_us,
                      Number(r.cpu_ns_per_rpc, "%.0f").c_str(), Number(r.cpus_busy, "%.2f").c_str(),
                      RatioCell(ratio).c_str(), RatioCell(RpcRatio(p, r, "grpc-sync")).c_str(),
                      TargetCell(RpcTarget(r), ratio).c_str(),
                      static_cast<unsigned long long>(r.failed),
                      RangeCell(RpcRatioRounds(p, r)).c_str());
        out += line;
      }
    }
    if (!p.goodput.empty() || p.iperf3.has_value() || !p.iperf3_error.empty()) {
      const uint64_t bytes = p.goodput.empty() ? report.plan.goodput_bytes : p.goodput.front().bytes;
      std::snprintf(line, sizeof(line),
                    "Goodput, %llu B requests one way (1 B responses), request payload:\n",
                    static_cast<unsigned long long>(bytes));
      out += line;
      std::snprintf(line, sizeof(line), "%-16s %9s %10s %11s %9s %10s %12s %7s%s\n", "series",
                    "in flight", "Gbit/s", "CPU ms/MiB", "CPUs busy", "vs iperf3", "target",
                    "failed", rounds ? "  vs iperf3 range" : "");
      out += line;
      if (p.iperf3.has_value()) {
        std::snprintf(line, sizeof(line), "%-16s %9s %10.2f %11s %9s %10s %12s %7s\n",
                      "iperf3 (1 TCP)", "-", p.iperf3->received_bits_per_second / 1e9,
                      Number(Iperf3CpuMsPerMiB(*p.iperf3), "%.2f").c_str(), "-", "1.00x", "", "-");
        out += line;
      } else if (!p.iperf3_error.empty()) {
        out += "iperf3: not measured: " + p.iperf3_error + "\n";
      }
      for (const ThroughputRow& r : p.goodput) {
        const double ratio = GoodputRatio(p, r);
        std::snprintf(line, sizeof(line), "%-16s %9d %10.2f %11s %9s %10s %12s %7llu  %s\n",
                      r.label.c_str(), r.in_flight, GoodputBitsPerSecond(r) / 1e9,
                      Number(CpuMsPerMiB(r), "%.2f").c_str(), Number(r.cpus_busy, "%.2f").c_str(),
                      RatioCell(ratio).c_str(), TargetCell(GoodputTarget(p.path, r), ratio).c_str(),
                      static_cast<unsigned long long>(r.failed),
                      RangeCell(GoodputRatioRounds(p, r)).c_str());
        out += line;
      }
    }
    for (const std::string& n : p.notes) out += "note: " + n + "\n";
    for (const std::string& e : p.errors) out += "FAILED: " + e + "\n";
  }
  return out;
}

std::string ThroughputReportJson(const ThroughputReport& report) {
  const ThroughputPlan& plan = report.plan;
  nlohmann::json series = nlohmann::json::array();
  for (const ThroughputSeriesSpec& s : plan.series) series.push_back(s.label);
  nlohmann::json doc = {
      {"plan",
       {{"paths", plan.paths},
        {"mtu", plan.mtu},
        {"series", series},
        {"rpc", plan.rpc},
        {"size", plan.size},
        {"in_flight", plan.in_flight},
        {"duration_ns", plan.duration_ns},
        {"warmup_ns", plan.warmup_ns},
        {"goodput", plan.goodput},
        {"goodput_bytes", plan.goodput_bytes},
        {"goodput_in_flight", plan.goodput_in_flight},
        {"goodput_seconds", plan.goodput_seconds},
        {"rounds", plan.rounds},
        {"pinned", plan.pin.pin},
        {"client_cpu", plan.pin.client_cpu},
        {"server_cpu", plan.pin.server_cpu},
        {"pin_note", plan.pin.note},
        {"settings", report.settings}}}};
  nlohmann::json paths = nlohmann::json::array();
  for (const ThroughputPathResult& p : report.paths) {
    nlohmann::json rpc = nlohmann::json::parse(ThroughputRowsJson(p.rpc));
    for (size_t i = 0; i < p.rpc.size(); ++i) {
      rpc[i]["vs_grpc"] = RatioJson(RpcRatioRounds(p, p.rpc[i], "grpc"), RpcTarget(p.rpc[i]));
      rpc[i]["vs_grpc_sync"] = RatioJson(RpcRatioRounds(p, p.rpc[i], "grpc-sync"), 0);
    }
    nlohmann::json goodput = nlohmann::json::parse(ThroughputRowsJson(p.goodput));
    for (size_t i = 0; i < p.goodput.size(); ++i) {
      const ThroughputRow& r = p.goodput[i];
      goodput[i]["goodput_bits_per_second"] = GoodputBitsPerSecond(r);
      goodput[i]["cpu_ms_per_mib"] = CpuMsPerMiB(r);
      goodput[i]["vs_iperf3"] = RatioJson(GoodputRatioRounds(p, r), GoodputTarget(p.path, r));
    }
    nlohmann::json iperf3;
    if (p.iperf3.has_value()) {
      iperf3 = {{"received_bits_per_second", p.iperf3->received_bits_per_second},
                {"sent_bits_per_second", p.iperf3->sent_bits_per_second},
                {"seconds", p.iperf3->seconds},
                {"retransmits", p.iperf3->retransmits},
                {"client_cpu_percent", p.iperf3->client_cpu_percent},
                {"server_cpu_percent", p.iperf3->server_cpu_percent},
                {"cpu_ms_per_mib", Iperf3CpuMsPerMiB(*p.iperf3)},
                {"version", p.iperf3->version}};
    } else if (!p.iperf3_error.empty()) {
      iperf3 = {{"error", p.iperf3_error}};
    }
    nlohmann::json rounds = nlohmann::json::array();
    for (const ThroughputPathResult& r : p.rounds) {
      nlohmann::json round = {{"rpc", nlohmann::json::parse(ThroughputRowsJson(r.rpc))},
                              {"goodput", nlohmann::json::parse(ThroughputRowsJson(r.goodput))},
                              {"errors", r.errors}};
      if (r.iperf3.has_value()) {
        round["iperf3_received_bits_per_second"] = r.iperf3->received_bits_per_second;
      }
      rounds.push_back(round);
    }
    paths.push_back({{"path", p.path},
                     {"description", p.description},
                     {"rpc", rpc},
                     {"goodput", goodput},
                     {"iperf3", iperf3},
                     {"errors", p.errors},
                     {"notes", p.notes},
                     {"cross_cpu_copy_gbit_per_sec", p.cross_cpu_gbps},
                     {"process_switch_us", p.process_switch_us},
                     {"rounds", rounds}});
  }
  doc["paths"] = paths;
  return doc.dump(2);
}

}  // namespace wharf::bench
