// Daemon::StatusJson: the daemon as `wharf status` shows it. The only file of
// the daemon that includes nlohmann-json.
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "daemon/wharfd.h"

namespace wharf::daemon {

std::string Daemon::StatusJson() const {
  using nlohmann::json;
  json apps = json::array();
  for (const auto& [id, s] : sessions_) {
    if (s->address().empty()) continue;  // a status query, not an application
    const SessionCounters& c = s->counters();
    apps.push_back({
        {"id", id},
        {"pid", s->peer().pid},
        {"uid", s->peer().uid},
        {"gid", s->peer().gid},
        {"program", s->program()},
        {"endpoint", s->address()},
        {"state", s->closing() ? "closing" : "attached"},
        {"heap_bytes", s->heap_bytes()},
        {"receive_bytes_in_use", s->receive_bytes_in_use()},
        {"inflight", s->inflight()},
        {"requests_in_service", s->requests_in_service()},
        {"connections", s->connections()},
        {"idle", s->application_idle()},
        {"commands", c.commands},
        {"completions", c.completions},
        {"bad_commands", c.bad_commands},
        {"bytes_sent", c.bytes_sent},
        {"bytes_received", c.bytes_received},
        {"received_in_place", c.received_in_place},
        {"requests_refused", c.requests_refused},
        {"late_answers", c.late_answers},
        {"backpressure_passes", c.backpressure_passes},
        {"control_refused", c.control_refused},
        {"close_reason", s->closing() ? s->close_reason().ToString() : ""},
    });
  }
  // Per transport: the counters of the daemon's own endpoint on each
  // listen socket, which include the socket's (shared by every application).
  json transports = json::object();
  for (const auto& own : own_) {
    json counters = json::object();
    for (const auto& [name, value] : own->engine->Counters()) counters[name] = value;
    transports[std::string(own->transport->scheme()) + "://" +
               own->transport->LocalAddress().ToString()] = counters;
  }
  json doc = {
      {"daemon",
       {{"pid", ::getpid()},
        {"socket", config_.socket_path},
        {"uptime_seconds", (clock_.NowNs() - started_ns_) / kNsPerSec},
        {"applications_attached", counters_.applications_attached},
        {"applications_detached", counters_.applications_detached},
        {"attaches_refused", counters_.attaches_refused},
        {"connections_refused", counters_.connections_refused},
        {"applications_faulted", counters_.applications_faulted},
        {"passes", counters_.passes},
        {"sleeps", counters_.sleeps},
        {"last_fault", last_fault_}}},
      {"applications", apps},
      {"transports", transports},
  };
  return doc.dump();
}

}  // namespace wharf::daemon
