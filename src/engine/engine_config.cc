// Loading EngineConfig: a file layer and an overrides layer, read key by key.
#include "engine/engine_config.h"

#include <initializer_list>
#include <map>
#include <algorithm>
#include <string>

#include "base/config.h"

namespace wharf::engine {
namespace {

// Overrides must be "section.name": every engine key has exactly that shape.
Status CheckOverrideKeys(const std::vector<std::pair<std::string, std::string>>& kv) {
  for (const auto& [key, value] : kv) {
    size_t dot = key.find('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == key.size() ||
        key.find('.', dot + 1) != std::string::npos) {
      return InvalidArgumentError("setting '" + key +
                                  "': expected 'section.name' (e.g. homa.overcommit)");
    }
  }
  return OkStatus();
}

// Reads each key from the overrides, falling back to the file, falling back
// to the built-in default; both layers learn the key is known.
class Layers {
 public:
  Layers(const ConfigDoc& file, const ConfigDoc& over) : file_(file), over_(over) {}

  template <typename T, typename Get>
  Status Read(T* field, Get get) {
    Result<T> from_file = get(file_, *field);
    if (!from_file.ok()) return from_file.status();
    Result<T> from_over = get(over_, *from_file);
    if (!from_over.ok()) return from_over.status();
    *field = *from_over;
    return OkStatus();
  }

 private:
  const ConfigDoc& file_;
  const ConfigDoc& over_;
};

template <typename T>
Status Uint(Layers& l, std::string_view key, T* field, uint64_t max) {
  uint64_t v = *field;
  WHARF_RETURN_IF_ERROR(l.Read(&v, [&](const ConfigDoc& d, uint64_t def) {
    return d.GetUint(key, def, max);
  }));
  *field = static_cast<T>(v);
  return OkStatus();
}

template <typename T>
Status Bytes(Layers& l, std::string_view key, T* field, uint64_t max) {
  uint64_t v = *field;
  WHARF_RETURN_IF_ERROR(l.Read(&v, [&](const ConfigDoc& d, uint64_t def) -> Result<uint64_t> {
    WHARF_ASSIGN_OR_RETURN(uint64_t got, d.GetBytes(key, def));
    if (got > max) {
      return InvalidArgumentError(d.source_name() + ": " + std::string(key) + ": expected at most " +
                                  std::to_string(max) + " bytes, got " + std::to_string(got));
    }
    return got;
  }));
  *field = static_cast<T>(v);
  return OkStatus();
}

Status Int(Layers& l, std::string_view key, int* field, int min, int max) {
  int64_t v = *field;
  WHARF_RETURN_IF_ERROR(l.Read(&v, [&](const ConfigDoc& d, int64_t def) {
    return d.GetInt(key, def, min, max);
  }));
  *field = static_cast<int>(v);
  return OkStatus();
}

Status Duration(Layers& l, std::string_view key, DurationNs* field) {
  return l.Read(field, [&](const ConfigDoc& d, DurationNs def) { return d.GetDuration(key, def); });
}

// A string that must be one of `allowed`.
Status OneOf(Layers& l, std::string_view key, std::string* field,
             std::initializer_list<std::string_view> allowed) {
  return l.Read(field, [&](const ConfigDoc& d, std::string def) -> Result<std::string> {
    WHARF_ASSIGN_OR_RETURN(std::string got, d.GetString(key, std::move(def)));
    std::string choices;
    for (std::string_view a : allowed) {
      if (got == a) return got;
      choices += (choices.empty() ? "" : " or ") + std::string(a);
    }
    return InvalidArgumentError(d.source_name() + ": " + std::string(key) + ": expected " +
                                choices + ", got '" + got + "'");
  });
}

// Free text of at most 256 bytes, for values passed on to a library (UCX's
// transport and device lists): printable ASCII, no spaces.
Status Text(Layers& l, std::string_view key, std::string* field) {
  return l.Read(field, [&](const ConfigDoc& d, std::string def) -> Result<std::string> {
    WHARF_ASSIGN_OR_RETURN(std::string got, d.GetString(key, std::move(def)));
    const bool printable = std::all_of(got.begin(), got.end(), [](char ch) {
      return ch > ' ' && ch < 0x7f;
    });
    if (got.size() > 256 || !printable) {
      return InvalidArgumentError(d.source_name() + ": " + std::string(key) +
                                  ": expected at most 256 printable characters without spaces");
    }
    return got;
  });
}

Status Bool(Layers& l, std::string_view key, bool* field) {
  return l.Read(field, [&](const ConfigDoc& d, bool def) { return d.GetBool(key, def); });
}

}  // namespace

Result<EngineConfig> LoadEngineConfig(
    const std::string& file, const std::vector<std::pair<std::string, std::string>>& overrides) {
  WHARF_ASSIGN_OR_RETURN(ConfigDoc file_doc,
                         file.empty() ? ConfigDoc::Parse("", "<no config file>")
                                      : ConfigDoc::LoadFile(file));
  WHARF_RETURN_IF_ERROR(CheckOverrideKeys(overrides));
  WHARF_ASSIGN_OR_RETURN(ConfigDoc over_doc, ConfigDoc::FromSettings(overrides, "settings"));
  WHARF_ASSIGN_OR_RETURN(EngineConfig c, ReadEngineConfig(file_doc, over_doc));
  WHARF_RETURN_IF_ERROR(file_doc.CheckNoUnknownKeys());
  WHARF_RETURN_IF_ERROR(over_doc.CheckNoUnknownKeys());
  return c;
}

Result<EngineConfig> ReadEngineConfig(const ConfigDoc& file_doc, const ConfigDoc& over_doc) {
  Layers l(file_doc, over_doc);
  EngineConfig c;
  homa::HomaConfig& h = c.homa;
  // The transport also carries the engine's frame header within 32 bits.
  WHARF_RETURN_IF_ERROR(
      Bytes(l, "homa.max_message_bytes", &h.max_message_bytes, UINT32_MAX - kFrameBytes));
  WHARF_RETURN_IF_ERROR(Bytes(l, "homa.unsched_bytes", &h.unsched_bytes, UINT32_MAX));
  WHARF_RETURN_IF_ERROR(Duration(l, "homa.peer_timeout", &h.peer_timeout_ns));
  WHARF_RETURN_IF_ERROR(Uint(l, "homa.max_peers", &h.max_peers, UINT32_MAX));
  WHARF_RETURN_IF_ERROR(Duration(l, "homa.peer_idle_timeout", &h.peer_idle_timeout_ns));
  WHARF_RETURN_IF_ERROR(
      Uint(l, "homa.max_clients_per_peer", &h.max_clients_per_peer, UINT32_MAX));
  WHARF_RETURN_IF_ERROR(
      Uint(l, "homa.max_tombstones_per_client", &h.max_tombstones_per_client, UINT32_MAX));
  WHARF_RETURN_IF_ERROR(Int(l, "homa.overcommit", &h.overcommit, 1, 64));
  WHARF_RETURN_IF_ERROR(Bytes(l, "homa.max_incoming_bytes", &h.max_incoming_bytes, UINT32_MAX));
  WHARF_RETURN_IF_ERROR(Int(l, "homa.grant_fifo_permille", &h.grant_fifo_permille, 0, 1000));
  WHARF_RETURN_IF_ERROR(Bytes(l, "homa.fifo_grant_bytes", &h.fifo_grant_bytes, UINT32_MAX));
  WHARF_RETURN_IF_ERROR(Uint(l, "homa.cutoff_version", &h.cutoff_version, UINT16_MAX));
  WHARF_RETURN_IF_ERROR(Int(l, "homa.max_sched_priority", &h.max_sched_priority, 0, 7));
  WHARF_RETURN_IF_ERROR(Uint(l, "homa.control_priority", &h.control_priority, 7));
  // "auto" or a rate: auto keeps the default rate but leaves paths through
  // software devices unpaced (homa/config.h link_rate_auto).
  {
    struct LinkRate {
      uint64_t bps;
      bool automatic;
    } rate{h.link_bps, h.link_rate_auto};
    WHARF_RETURN_IF_ERROR(l.Read(&rate, [](const ConfigDoc& d, LinkRate def) -> Result<LinkRate> {
      WHARF_ASSIGN_OR_RETURN(std::string text, d.GetString("homa.link_rate", ""));
      if (text.empty()) return def;
      if (text == "auto") return LinkRate{homa::HomaConfig{}.link_bps, true};
      Result<uint64_t> bps = d.GetRate("homa.link_rate", def.bps);
      if (!bps.ok()) {
        return InvalidArgumentError(std::string(bps.status().message()) + ", or 'auto'");
      }
      return LinkRate{*bps, false};
    }));
    h.link_bps = rate.bps;
    h.link_rate_auto = rate.automatic;
  }
  WHARF_RETURN_IF_ERROR(Duration(l, "homa.max_nic_backlog", &h.max_nic_backlog_ns));
  WHARF_RETURN_IF_ERROR(Bytes(l, "homa.pacer_bypass_bytes", &h.pacer_bypass_bytes, UINT32_MAX));
  WHARF_RETURN_IF_ERROR(Duration(l, "homa.tick", &h.tick_ns));
  WHARF_RETURN_IF_ERROR(Int(l, "homa.resend_ticks", &h.resend_ticks, 1, 1'000'000));
  WHARF_RETURN_IF_ERROR(Int(l, "homa.resend_interval_ticks", &h.resend_interval_ticks, 1, 1'000'000));
  WHARF_RETURN_IF_ERROR(Int(l, "homa.timeout_ticks", &h.timeout_ticks, 2, 100'000'000));
  WHARF_RETURN_IF_ERROR(Int(l, "homa.need_ack_ticks", &h.need_ack_ticks, 1, 1'000'000));
  WHARF_RETURN_IF_ERROR(Int(l, "homa.max_restarts", &h.max_restarts, 0, 1'000'000));
  WHARF_RETURN_IF_ERROR(
      Bytes(l, "homa.max_incoming_buffer_bytes", &h.max_incoming_buffer_bytes, UINT64_MAX));
  {
    std::vector<std::string> defaults;
    for (uint32_t v : h.unsched_cutoffs) defaults.push_back(std::to_string(v));
    std::vector<std::string> cutoffs = defaults;
    WHARF_RETURN_IF_ERROR(l.Read(&cutoffs, [](const ConfigDoc& d, std::vector<std::string> def) {
      return d.GetStringList("homa.unsched_cutoffs", std::move(def));
    }));
    if (cutoffs.size() != h.unsched_cutoffs.size()) {
      return InvalidArgumentError("homa.unsched_cutoffs: expected 8 byte counts (priority 0..7), got " +
                                  std::to_string(cutoffs.size()));
    }
    for (size_t i = 0; i < cutoffs.size(); ++i) {
      char* end = nullptr;
      unsigned long long v = std::strtoull(cutoffs[i].c_str(), &end, 10);
      if (cutoffs[i].empty() || *end != '\0' || v > UINT32_MAX) {
        return InvalidArgumentError("homa.unsched_cutoffs[" + std::to_string(i) +
                                    "]: expected a byte count, got '" + cutoffs[i] + "'");
      }
      h.unsched_cutoffs[i] = static_cast<uint32_t>(v);
    }
  }
  WHARF_RETURN_IF_ERROR(Uint(l, "udp.mtu", &c.mtu, 65535));
  WHARF_RETURN_IF_ERROR(Bytes(l, "udp.recv_buffer_bytes", &c.recv_buffer_bytes, INT32_MAX));
  WHARF_RETURN_IF_ERROR(Bytes(l, "udp.send_buffer_bytes", &c.send_buffer_bytes, INT32_MAX));
  WHARF_RETURN_IF_ERROR(Bool(l, "udp.gso", &c.gso));
  WHARF_RETURN_IF_ERROR(Bool(l, "udp.gro", &c.gro));
  {
    using GL = EngineConfig::GroLoopback;
    std::string gro_loopback = c.gro_loopback == GL::kAdaptive ? "adaptive"
                               : c.gro_loopback == GL::kAlways ? "true"
                                                               : "false";
    WHARF_RETURN_IF_ERROR(
        OneOf(l, "udp.gro_loopback", &gro_loopback, {"adaptive", "true", "false"}));
    c.gro_loopback = gro_loopback == "adaptive" ? GL::kAdaptive
                     : gro_loopback == "true"   ? GL::kAlways
                                                : GL::kNever;
  }
  WHARF_RETURN_IF_ERROR(Bool(l, "udp.hot_peer_socket", &c.hot_peer_socket));
  WHARF_RETURN_IF_ERROR(Bool(l, "udp.rx_timestamps", &c.rx_timestamps));
  WHARF_RETURN_IF_ERROR(Bool(l, "udp.tx_timestamps", &c.tx_timestamps));
  WHARF_RETURN_IF_ERROR(Bytes(l, "udp.gso_copy_bytes", &c.gso_copy_bytes, 65535));
  stream::TcpConfig& t = c.tcp;
  WHARF_RETURN_IF_ERROR(Bytes(l, "tcp.chunk_bytes", &t.chunk_bytes, 64u << 20));
  if (t.chunk_bytes < 1024) {
    return InvalidArgumentError("tcp.chunk_bytes: expected at least 1KiB, got " +
                                std::to_string(t.chunk_bytes));
  }
  WHARF_RETURN_IF_ERROR(Bytes(l, "tcp.notsent_lowat_bytes", &t.notsent_lowat_bytes, INT32_MAX));
  WHARF_RETURN_IF_ERROR(Int(l, "tcp.connections_per_peer", &t.connections_per_peer, 1, 64));
  WHARF_RETURN_IF_ERROR(Int(l, "tcp.listen_backlog", &t.listen_backlog, 1, 65535));
  WHARF_RETURN_IF_ERROR(Duration(l, "tcp.reconnect_min", &t.reconnect_min_ns));
  WHARF_RETURN_IF_ERROR(Duration(l, "tcp.reconnect_max", &t.reconnect_max_ns));
  WHARF_RETURN_IF_ERROR(Duration(l, "tcp.peer_timeout", &t.peer_timeout_ns));
  WHARF_RETURN_IF_ERROR(Duration(l, "tcp.idle_timeout", &t.idle_timeout_ns));
  WHARF_RETURN_IF_ERROR(
      Uint(l, "tcp.max_inbound_connections", &t.max_inbound_connections, 1u << 20));
  WHARF_RETURN_IF_ERROR(Uint(l, "tcp.max_peers", &t.max_peers, 1u << 24));
  WHARF_RETURN_IF_ERROR(Duration(l, "tcp.ping_interval", &t.ping_interval_ns));
  WHARF_RETURN_IF_ERROR(Duration(l, "tcp.ack_delay", &t.ack_delay_ns));
  WHARF_RETURN_IF_ERROR(Bytes(l, "tcp.max_incoming_bytes", &t.max_incoming_bytes, UINT64_MAX));
  WHARF_RETURN_IF_ERROR(
      Bytes(l, "tcp.max_stored_response_bytes", &t.max_stored_response_bytes, UINT64_MAX));
  WHARF_RETURN_IF_ERROR(Bytes(l, "tcp.send_buffer_bytes", &t.send_buffer_bytes, INT32_MAX));
  WHARF_RETURN_IF_ERROR(Bytes(l, "tcp.recv_buffer_bytes", &t.recv_buffer_bytes, INT32_MAX));
  if (t.reconnect_min_ns <= 0 || t.reconnect_max_ns < t.reconnect_min_ns) {
    return InvalidArgumentError("tcp.reconnect_min/tcp.reconnect_max: expected 0 < min <= max");
  }
  if (t.peer_timeout_ns <= 0 || t.ping_interval_ns <= 0) {
    return InvalidArgumentError("tcp.peer_timeout and tcp.ping_interval: expected > 0");
  }
  ucx::UcxConfig& x = c.ucx;
  WHARF_RETURN_IF_ERROR(Text(l, "ucx.tls", &x.tls));
  WHARF_RETURN_IF_ERROR(Text(l, "ucx.devices", &x.devices));
  WHARF_RETURN_IF_ERROR(Bool(l, "ucx.detect_peer_failure", &x.detect_peer_failure));
  WHARF_RETURN_IF_ERROR(Uint(l, "ucx.max_peers", &x.max_peers, 1u << 20));
  WHARF_RETURN_IF_ERROR(Uint(l, "ucx.max_server_rpcs", &x.max_server_rpcs, 1u << 24));
  WHARF_RETURN_IF_ERROR(Duration(l, "ucx.idle_timeout", &x.idle_timeout_ns));
  WHARF_RETURN_IF_ERROR(Bytes(l, "ucx.pool_bytes", &x.pool_bytes, uint64_t{1} << 40));
  WHARF_RETURN_IF_ERROR(Uint(l, "ucx.max_regions", &x.max_regions, 1u << 20));
  if (x.max_peers == 0 || x.max_server_rpcs == 0 || x.idle_timeout_ns <= 0 || x.max_regions == 0) {
    return InvalidArgumentError(
        "ucx.max_peers, ucx.max_server_rpcs, ucx.idle_timeout and ucx.max_regions: expected > 0");
  }
  WHARF_RETURN_IF_ERROR(Duration(l, "endpoint.spin", &c.spin_ns));
  {
    using SY = EngineConfig::SpinYield;
    std::string yield = c.spin_yield == SY::kAuto ? "auto" : c.spin_yield == SY::kAlways ? "true" : "false";
    WHARF_RETURN_IF_ERROR(OneOf(l, "endpoint.spin_yield", &yield, {"auto", "true", "false"}));
    c.spin_yield = yield == "auto" ? SY::kAuto : yield == "true" ? SY::kAlways : SY::kNever;
  }
  WHARF_RETURN_IF_ERROR(Duration(l, "endpoint.keepalive", &c.limits.keepalive_ns));
  WHARF_RETURN_IF_ERROR(OneOf(l, "endpoint.default_transport", &c.default_scheme, {"homa", "tcp", "ucx"}));
  WHARF_RETURN_IF_ERROR(Bytes(l, "endpoint.max_queued_bytes_per_connection",
                              &c.limits.max_queued_bytes_per_connection, UINT64_MAX));
  WHARF_RETURN_IF_ERROR(Duration(l, "endpoint.keeper_after", &c.keeper_after_ns));
  WHARF_RETURN_IF_ERROR(Uint(l, "endpoint.max_connections", &c.limits.max_connections, SIZE_MAX));
  WHARF_RETURN_IF_ERROR(
      Uint(l, "endpoint.max_barrier_rounds", &c.limits.max_barrier_rounds, SIZE_MAX));
  WHARF_RETURN_IF_ERROR(
      Duration(l, "endpoint.barrier_round_timeout", &c.limits.barrier_round_timeout_ns));
  WHARF_RETURN_IF_ERROR(Uint(l, "endpoint.peer_rtt_peers", &c.limits.peer_rtt_peers, 65'536));
  WHARF_RETURN_IF_ERROR(Duration(l, "endpoint.peer_rtt_idle", &c.limits.peer_rtt_idle_ns));
  if (c.limits.peer_rtt_idle_ns <= 0) {
    return InvalidArgumentError("endpoint.peer_rtt_idle: expected a duration > 0");
  }
  WHARF_RETURN_IF_ERROR(Bytes(l, "rpc.max_request_bytes", &c.rpc.max_request_bytes, UINT64_MAX));
  WHARF_RETURN_IF_ERROR(Bytes(l, "rpc.max_response_bytes", &c.rpc.max_response_bytes, UINT64_MAX));
  if (c.keeper_after_ns <= 0) {
    return InvalidArgumentError("endpoint.keeper_after: expected a duration > 0");
  }
  return c;
}

}  // namespace wharf::engine
