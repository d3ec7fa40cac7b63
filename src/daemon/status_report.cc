// RenderStatusJson: DaemonReport -> JSON. The daemon's only include of
// nlohmann-json.
#include "daemon/status_report.h"

#include <exception>

#include <nlohmann/json.hpp>

namespace wharf::daemon {
namespace {

using nlohmann::json;

json Application(const ApplicationReport& a) {
  json app = {
      {"id", a.id},
      {"pid", a.pid},
      {"uid", a.uid},
      {"gid", a.gid},
      {"program", a.program},
      {"endpoint", a.endpoint},
      {"state", a.closing ? "closing" : "attached"},
      {"heap_bytes", a.heap_bytes},
      {"receive_bytes_in_use", a.receive_bytes_in_use},
      {"inflight", a.inflight},
      {"requests_in_service", a.requests_in_service},
      {"connections", a.connections},
      {"idle", a.idle},
      {"close_reason", a.close_reason},
  };
  for (const auto& [name, value] : a.counters) app[name] = value;
  json paths = json::array();
  for (const auto& [peer, path] : a.paths) paths.push_back({{"peer", peer}, {"path", path}});
  app["paths"] = std::move(paths);
  return app;
}

json Document(const DaemonReport& r) {
  json apps = json::array();
  for (const ApplicationReport& a : r.applications) apps.push_back(Application(a));
  json transports = json::object();
  for (const auto& [name, counters] : r.transports) {
    json c = json::object();
    for (const auto& [key, value] : counters) c[key] = value;
    transports[name] = std::move(c);
  }
  const DaemonCounters& c = r.counters;
  return json{
      {"daemon",
       {{"pid", r.pid},
        {"socket", r.socket},
        {"uptime_seconds", r.uptime_seconds},
        {"applications_attached", c.applications_attached},
        {"applications_detached", c.applications_detached},
        {"attaches_refused", c.attaches_refused},
        {"connections_refused", c.connections_refused},
        {"connections_evicted", c.connections_evicted},
        {"hello_timeouts", c.hello_timeouts},
        {"status_requests_limited", c.status_requests_limited},
        {"applications_faulted", c.applications_faulted},
        {"unattached_connections", r.unattached_connections},
        {"kernel_refuses_fds", r.kernel_refuses_fds},
        {"fds_closed_off_loop", r.fds_closed_off_loop},
        {"passes", c.passes},
        {"sleeps", c.sleeps},
        {"last_fault", r.last_fault},
        {"loop",
         {{"turns", r.loop.turns},
          {"stalls", r.loop.stalls},
          {"stalls_blocked", r.loop.stalls_blocked},
          {"stall_threshold_us", r.loop.threshold_ns / 1000},
          {"max_turn_us", r.loop.max_turn_ns / 1000},
          {"p99_turn_us", r.loop.p99_turn_ns / 1000},
          {"last_stall_us", r.loop.last_stall_ns / 1000}}}}},
      {"applications", std::move(apps)},
      {"transports", std::move(transports)},
  };
}

}  // namespace

Result<std::string> RenderStatusJson(const DaemonReport& report) {
  try {
    // replace: text that is not UTF-8 becomes U+FFFD instead of an exception.
    return Document(report).dump(-1, ' ', false, json::error_handler_t::replace);
  } catch (const std::exception& e) {
    return InternalError(std::string("wharfd status as JSON: ") + e.what());
  }
}

}  // namespace wharf::daemon
