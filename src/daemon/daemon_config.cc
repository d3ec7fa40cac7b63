// Loading DaemonConfig: wharfd's own keys, then the engine's from the same
// documents, then the unknown-key check over both.
#include "daemon/daemon_config.h"

#include <charconv>

#include "base/config.h"
#include "engine/frame.h"

namespace wharf::daemon {
namespace {

// Reads `key` from the overrides, else the file, else keeps `*field`.
template <typename T, typename Get>
Status Layered(const ConfigDoc& file, const ConfigDoc& over, T* field, Get get) {
  WHARF_ASSIGN_OR_RETURN(T from_file, get(file, *field));
  WHARF_ASSIGN_OR_RETURN(*field, get(over, from_file));
  return OkStatus();
}

// daemon.allowed_uids: a YAML list ([1000, 1001]) or, as `--set` can only
// give a scalar, a comma-separated one ("1000,1001" or "[1000,1001]"; ""
// for none).
Result<std::vector<std::string>> UidList(const ConfigDoc& d, std::vector<std::string> def) {
  constexpr std::string_view kKey = "daemon.allowed_uids";
  Result<std::vector<std::string>> list = d.GetStringList(kKey, def);
  if (list.ok()) return list;
  Result<std::string> text = d.GetString(kKey, "");
  if (!text.ok()) return list.status();
  if (text->size() >= 2 && text->front() == '[' && text->back() == ']') {
    *text = text->substr(1, text->size() - 2);
  }
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text->size()) {
    size_t comma = text->find(',', start);
    if (comma == std::string::npos) comma = text->size();
    std::string item = text->substr(start, comma - start);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(std::move(item));
    start = comma + 1;
  }
  return out;
}

Status ReadDaemonKeys(const ConfigDoc& f, const ConfigDoc& o, DaemonConfig* c) {
  auto str = [&](std::string_view key, std::string* field) {
    return Layered(f, o, field, [key](const ConfigDoc& d, std::string def) {
      return d.GetString(key, std::move(def));
    });
  };
  auto uint = [&](std::string_view key, auto* field, uint64_t min, uint64_t max) -> Status {
    uint64_t v = *field;
    WHARF_RETURN_IF_ERROR(Layered(f, o, &v, [key, max](const ConfigDoc& d, uint64_t def) {
      return d.GetUint(key, def, max);
    }));
    if (v < min) {
      return InvalidArgumentError(std::string(key) + ": expected at least " + std::to_string(min) +
                                  ", got " + std::to_string(v));
    }
    *field = static_cast<std::remove_pointer_t<decltype(field)>>(v);
    return OkStatus();
  };
  WHARF_RETURN_IF_ERROR(str("daemon.socket", &c->socket_path));
  if (c->socket_path.empty()) return InvalidArgumentError("daemon.socket: expected a path");
  WHARF_RETURN_IF_ERROR(str("daemon.socket_group", &c->socket_group));
  std::vector<std::string> uids;
  WHARF_RETURN_IF_ERROR(Layered(f, o, &uids, UidList));
  for (const std::string& text : uids) {
    uint32_t uid = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), uid);
    if (ec != std::errc() || end != text.data() + text.size()) {
      return InvalidArgumentError("daemon.allowed_uids: expected numeric uids, got '" + text + "'");
    }
    c->allowed_uids.push_back(uid);
  }
  std::string level(LogLevelName(c->log_level));
  WHARF_RETURN_IF_ERROR(str("daemon.log_level", &level));
  Result<LogLevel> parsed = ParseLogLevel(level);
  if (!parsed.ok()) return parsed.status().WithContext("daemon.log_level");
  c->log_level = *parsed;
  WHARF_RETURN_IF_ERROR(Layered(f, o, &c->busy_spin_ns, [](const ConfigDoc& d, DurationNs def) {
    return d.GetDuration("daemon.busy_spin", def);
  }));
  if (c->busy_spin_ns > kNsPerSec) {
    return InvalidArgumentError("daemon.busy_spin: expected at most 1s, got " +
                                std::to_string(c->busy_spin_ns / kNsPerMs) + "ms");
  }
  auto duration = [&](std::string_view key, DurationNs* field, DurationNs min,
                      DurationNs max) -> Status {
    WHARF_RETURN_IF_ERROR(Layered(f, o, field, [key](const ConfigDoc& d, DurationNs def) {
      return d.GetDuration(key, def);
    }));
    if (*field < min || *field > max) {
      return InvalidArgumentError(std::string(key) + ": expected " + std::to_string(min / kNsPerMs) +
                                  "ms to " + std::to_string(max / kNsPerMs) + "ms, got " +
                                  std::to_string(*field / kNsPerMs) + "ms");
    }
    return OkStatus();
  };
  WHARF_RETURN_IF_ERROR(duration("daemon.hello_timeout", &c->hello_timeout_ns, 100 * kNsPerMs,
                                 60 * kNsPerSec));
  WHARF_RETURN_IF_ERROR(uint("daemon.max_unattached", &c->max_unattached, 1, 1 << 16));
  WHARF_RETURN_IF_ERROR(
      uint("daemon.max_unattached_per_uid", &c->max_unattached_per_uid, 1, 1 << 16));
  WHARF_RETURN_IF_ERROR(
      uint("daemon.status_requests_per_second", &c->status_requests_per_second, 1, 100000));
  WHARF_RETURN_IF_ERROR(duration("daemon.stall_threshold", &c->stall_threshold_ns, kNsPerMs,
                                 60 * kNsPerSec));
  WHARF_RETURN_IF_ERROR(Layered(f, o, &c->refuse_passed_fds, [](const ConfigDoc& d, bool def) {
    return d.GetBool("daemon.refuse_passed_fds", def);
  }));
  WHARF_RETURN_IF_ERROR(str("listen.homa", &c->listen_homa));
  WHARF_RETURN_IF_ERROR(str("listen.tcp", &c->listen_tcp));
  WHARF_RETURN_IF_ERROR(uint("limits.max_applications", &c->max_applications, 1, 1 << 20));
  AppLimits& l = c->limits;
  WHARF_RETURN_IF_ERROR(Layered(f, o, &l.heap_bytes, [](const ConfigDoc& d, uint64_t def) {
    return d.GetBytes("limits.heap_bytes", def);
  }));
  if (l.heap_bytes < (64u << 10) || l.heap_bytes > (64ull << 30) || l.heap_bytes % 8192 != 0) {
    return InvalidArgumentError("limits.heap_bytes: expected a multiple of 8KiB from 64KiB to 64GiB, got " +
                                std::to_string(l.heap_bytes));
  }
  WHARF_RETURN_IF_ERROR(uint("limits.ring_entries", &l.ring_entries, 8, 1 << 20));
  if ((l.ring_entries & (l.ring_entries - 1)) != 0) {
    return InvalidArgumentError("limits.ring_entries: expected a power of two, got " +
                                std::to_string(l.ring_entries));
  }
  WHARF_RETURN_IF_ERROR(uint("limits.max_inflight", &l.max_inflight, 1, 1 << 24));
  WHARF_RETURN_IF_ERROR(uint("limits.max_connections", &l.max_connections, 1, 1 << 24));
  WHARF_RETURN_IF_ERROR(uint("limits.max_backlog", &l.max_backlog, 16, 1 << 24));
  WHARF_RETURN_IF_ERROR(uint("limits.commands_per_pass", &l.commands_per_pass, 1, 1 << 16));
  MeshSettings& m = c->mesh;
  WHARF_RETURN_IF_ERROR(str("http.listen", &m.http_listen));
  WHARF_RETURN_IF_ERROR(str("mesh.pinglist", &m.pinglist));
  WHARF_RETURN_IF_ERROR(str("mesh.name", &m.name));
  WHARF_RETURN_IF_ERROR(uint("mesh.max_probes_per_second", &m.max_probes_per_second, 1, 1000000));
  WHARF_RETURN_IF_ERROR(
      duration("mesh.reload_check", &m.reload_check_ns, 100 * kNsPerMs, 3600 * kNsPerSec));
  return OkStatus();
}

}  // namespace

Result<DaemonConfig> LoadDaemonConfig(
    const std::string& file, const std::vector<std::pair<std::string, std::string>>& overrides) {
  WHARF_ASSIGN_OR_RETURN(ConfigDoc file_doc, file.empty()
                                                 ? ConfigDoc::Parse("", "<no config file>")
                                                 : ConfigDoc::LoadFile(file));
  WHARF_ASSIGN_OR_RETURN(ConfigDoc over_doc, ConfigDoc::FromSettings(overrides, "--set"));
  DaemonConfig c;
  WHARF_RETURN_IF_ERROR(ReadDaemonKeys(file_doc, over_doc, &c));
  WHARF_ASSIGN_OR_RETURN(c.engine, engine::ReadEngineConfig(file_doc, over_doc));
  // As in embedded mode: homa.max_message_bytes is the applications' payload
  // limit; the transports also carry the engine's frame header.
  c.engine.limits.max_message_bytes = c.engine.homa.max_message_bytes;
  c.engine.homa.max_message_bytes = static_cast<uint32_t>(std::min<uint64_t>(
      uint64_t{c.engine.homa.max_message_bytes} + engine::kFrameBytes, UINT32_MAX));
  c.engine.limits.max_connections = std::min(c.engine.limits.max_connections, c.limits.max_connections);
  // A wharfd that probes times its probes by the kernel's transmit and
  // receive stamps (docs/mesh.md), unless udp.tx_timestamps and
  // udp.rx_timestamps say otherwise.
  if (!c.mesh.pinglist.empty()) {
    for (auto [key, on] : {std::pair{"udp.rx_timestamps", &c.engine.rx_timestamps},
                           std::pair{"udp.tx_timestamps", &c.engine.tx_timestamps}}) {
      if (!file_doc.Has(key) && !over_doc.Has(key)) *on = true;
    }
  }
  WHARF_RETURN_IF_ERROR(file_doc.CheckNoUnknownKeys());
  WHARF_RETURN_IF_ERROR(over_doc.CheckNoUnknownKeys());
  return c;
}

}  // namespace wharf::daemon
