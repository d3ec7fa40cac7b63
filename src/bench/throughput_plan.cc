// `wharf bench throughput`: flags to plan.
#include "bench/throughput_plan.h"

#include <algorithm>

#include "base/config_value.h"

namespace wharf::bench {
namespace {

// homa-typed is wharf too (its modes, its wharfds), run by the proto node.
bool IsWharf(const std::string& proto) {
  return proto == "homa" || proto == "tcp" || proto == "homa-typed";
}

template <typename T>
void AddOnce(std::vector<T>& out, const T& item) {
  if (std::find(out.begin(), out.end(), item) == out.end()) out.push_back(item);
}

Status CheckInFlight(const std::vector<int>& counts, const std::string& flag) {
  if (counts.empty()) return InvalidArgumentError(flag + ": expected at least one count");
  for (int n : counts) {
    if (n < 1 || n > 65536) {
      return InvalidArgumentError(flag + " " + std::to_string(n) + ": expected 1 to 65536");
    }
  }
  return OkStatus();
}

Result<uint64_t> ParseMessageSize(const std::string& text, const std::string& flag) {
  Result<uint64_t> bytes = ParseBytes(text);
  if (!bytes.ok()) return bytes.status().WithContext(flag);
  if (*bytes < 1 || *bytes > (uint64_t{16} << 20)) {
    return InvalidArgumentError(flag + " " + text + ": expected 1 B to 16 MiB");
  }
  return *bytes;
}

}  // namespace

std::vector<ThroughputSeriesSpec> ThroughputSeriesFor(const std::vector<std::string>& protos,
                                                   const std::vector<std::string>& modes) {
  std::vector<ThroughputSeriesSpec> out;
  for (const std::string& p : protos) {
    std::vector<std::string> proto_modes = IsWharf(p) ? modes : std::vector<std::string>{"embedded"};
    for (const std::string& m : proto_modes) {
      ThroughputSeriesSpec s{.proto = p,
                             .mode = m,
                             .label = IsWharf(p) ? p + " " + m : p,
                             .wharf = IsWharf(p),
                             .managed = IsWharf(p) && m == "managed"};
      const bool seen = std::any_of(out.begin(), out.end(),
                                    [&](const ThroughputSeriesSpec& o) { return o.label == s.label; });
      if (!seen) out.push_back(s);
    }
  }
  return out;
}

bool IsGrpc(const std::string& proto) { return proto == "grpc" || proto == "grpc-sync"; }

bool RunsOnProtoNode(const std::string& proto) { return IsGrpc(proto) || proto == "homa-typed"; }

bool HasGoodputRows(const ThroughputSeriesSpec& series) { return !RunsOnProtoNode(series.proto); }

Result<ThroughputPlan> PlanThroughput(const ThroughputOptions& o) {
  ThroughputPlan plan;
  for (const std::string& p : o.paths) {
    if (p != "loopback" && p != "veth") {
      return InvalidArgumentError("--path " + p + ": expected loopback or veth");
    }
    AddOnce(plan.paths, p);
  }
  if (plan.paths.empty()) return InvalidArgumentError("--path: expected loopback, veth or both");
  if (o.mtu < 576 || o.mtu > 65535) {
    return InvalidArgumentError("--mtu " + std::to_string(o.mtu) + ": expected 576 to 65535");
  }
  plan.mtu = o.mtu;
  for (const std::string& p : o.protos) {
    if (!IsWharf(p) && !IsGrpc(p) && p != "kernel-udp" && p != "kernel-tcp") {
      return InvalidArgumentError("--proto " + p +
                                  ": expected homa, homa-typed, tcp, grpc, grpc-sync, kernel-udp "
                                  "or kernel-tcp");
    }
  }
  for (const std::string& m : o.modes) {
    if (m != "embedded" && m != "managed") {
      return InvalidArgumentError("--mode " + m + ": expected embedded or managed");
    }
  }
  const bool wharf = std::any_of(o.protos.begin(), o.protos.end(), IsWharf);
  if (wharf && o.modes.empty()) return InvalidArgumentError("--mode: expected at least one mode");
  plan.series = ThroughputSeriesFor(o.protos, o.modes);
  if (plan.series.empty()) return InvalidArgumentError("--proto: expected at least one protocol");

  plan.rpc = !o.no_rpc;
  plan.goodput = !o.no_goodput;
  if (!plan.rpc && !plan.goodput) {
    return InvalidArgumentError("--no-rpc and --no-goodput leave nothing to measure");
  }
  if (plan.rpc) {
    WHARF_ASSIGN_OR_RETURN(plan.size, ParseMessageSize(o.size, "--size"));
    WHARF_RETURN_IF_ERROR(CheckInFlight(o.in_flight, "--in-flight"));
    plan.in_flight = o.in_flight;
    Result<DurationNs> duration = ParseDuration(o.duration);
    if (!duration.ok()) return duration.status().WithContext("--duration");
    if (*duration < 100 * kNsPerMs || *duration > 3600 * kNsPerSec) {
      return InvalidArgumentError("--duration " + o.duration + ": expected 100ms to 1h");
    }
    plan.duration_ns = *duration;
  }
  Result<DurationNs> warmup = ParseDuration(o.warmup);
  if (!warmup.ok()) return warmup.status().WithContext("--warmup");
  if (*warmup < 0 || *warmup > 60 * kNsPerSec) {
    return InvalidArgumentError("--warmup " + o.warmup + ": expected 0 to 60s");
  }
  plan.warmup_ns = *warmup;
  if (plan.goodput) {
    WHARF_ASSIGN_OR_RETURN(plan.goodput_bytes, ParseMessageSize(o.goodput_size, "--goodput-size"));
    WHARF_RETURN_IF_ERROR(CheckInFlight(o.goodput_in_flight, "--goodput-in-flight"));
    plan.goodput_in_flight = o.goodput_in_flight;
    if (o.goodput_seconds < 1 || o.goodput_seconds > 3600) {
      return InvalidArgumentError("--goodput-seconds " + std::to_string(o.goodput_seconds) +
                                  ": expected 1 to 3600");
    }
    plan.goodput_seconds = o.goodput_seconds;
  }
  if (o.rounds < 1 || o.rounds > 20) {
    return InvalidArgumentError("--rounds " + std::to_string(o.rounds) + ": expected 1 to 20");
  }
  plan.rounds = o.rounds;
  for (const std::string& s : o.settings) {
    if (s.find('=') == std::string::npos || s.front() == '=') {
      return InvalidArgumentError("--set " + s + ": expected KEY=VALUE");
    }
  }
  plan.pin = PlanPinning(!o.no_pin, o.client_cpu, o.server_cpu);
  if (!plan.pin.pin) {
    plan.pin.client_cpu = -1;
    plan.pin.server_cpu = -1;
  }
  return plan;
}

}  // namespace wharf::bench
