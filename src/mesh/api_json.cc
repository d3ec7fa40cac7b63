// The /api/v1 documents, with nlohmann-json.
#include "mesh/api_json.h"

#include <nlohmann/json.hpp>

#include <string>

namespace wharf::mesh {
namespace {

using Json = nlohmann::ordered_json;

// A latency for the API: microseconds, or null when there is none.
Json Micros(uint64_t ns, bool present) {
  if (!present) return nullptr;
  return static_cast<double>(ns) / 1000.0;
}

Json Seconds(TimeNs from, TimeNs to) {
  if (from == 0) return nullptr;
  return static_cast<double>(to - from) / static_cast<double>(kNsPerSec);
}

Json Percentiles(const WindowSummary& w) {
  const bool any = w.answered > 0;
  return Json{{"min_us", Micros(w.min_ns, any)},   {"p50_us", Micros(w.p50_ns, any)},
              {"p90_us", Micros(w.p90_ns, any)},   {"p99_us", Micros(w.p99_ns, any)},
              {"p999_us", Micros(w.p999_ns, any)}, {"max_us", Micros(w.max_ns, any)}};
}

Json LossRatio(const WindowSummary& w) {
  const uint64_t total = w.answered + w.lost;
  if (total == 0) return nullptr;
  return static_cast<double>(w.lost) / static_cast<double>(total);
}

Json WindowJson(const TargetSnapshot& t, Window w) {
  const auto i = static_cast<size_t>(w);
  return Json{{"state", SeriesStateName(t.state[i])},
              {"answered", t.rtt[i].answered},
              {"unanswered", t.rtt[i].lost},
              {"loss_ratio", LossRatio(t.rtt[i])},
              {"rtt", Percentiles(t.rtt[i])},
              {"network", Percentiles(t.network[i])}};
}

Json CountersJson(const SeriesCounters& c) {
  return Json{{"sent", c.sent},           {"answered", c.answered}, {"lost", c.lost},
              {"failed", c.failed},       {"reordered", c.reordered},
              {"duplicated", c.stray},    {"skipped", c.skipped},   {"weird", c.weird},
              {"kernel_stamped", c.kernel_stamped},
              {"kernel_send_stamped", c.kernel_send_stamped}};
}

// Which clock timed the answers' arrival: the kernel's receive stamp
// (SO_TIMESTAMPING, homa:// over UDP with udp.rx_timestamps), the prober's
// monotonic clock, or both over the target's life.
// Which clock timed `stamped` of `answered` answers' ends.
const char* StampSource(uint64_t stamped, uint64_t answered) {
  return stamped == 0 ? "monotonic" : stamped == answered ? "kernel" : "mixed";
}

Json TimestampsJson(const SeriesCounters& c) {
  return Json{{"send", StampSource(c.kernel_send_stamped, c.answered)},
              {"receive", StampSource(c.kernel_stamped, c.answered)}};
}

// The applications' own traffic on a peer (passive measurement).
Json PassiveWindowsJson(const PassiveSnapshot& p) {
  Json windows = Json::object();
  for (Window w : kWindows) {
    const auto i = static_cast<size_t>(w);
    windows[std::string(WindowName(w))] = Json{{"state", SeriesStateName(p.state[i])},
                                               {"answered", p.rtt[i].answered},
                                               {"unanswered", p.rtt[i].lost},
                                               {"failure_ratio", LossRatio(p.rtt[i])},
                                               {"rtt", Percentiles(p.rtt[i])}};
  }
  return windows;
}

Json PassiveJson(const MeshSnapshot& s, const PassiveSnapshot& p) {
  return Json{{"transport", p.transport},
              {"peer", p.peer},
              {"host", p.host.empty() ? Json(nullptr) : Json(p.host)},
              {"round_trips", p.round_trips},
              {"failures", p.failures},
              {"last_age_s", Seconds(p.last_ns, s.taken_ns)},
              {"windows", PassiveWindowsJson(p)}};
}

const PassiveSnapshot* PassiveOf(const MeshSnapshot& s, const TargetSnapshot& t) {
  if (t.passive < 0 || static_cast<size_t>(t.passive) >= s.peers.size()) return nullptr;
  return &s.peers[static_cast<size_t>(t.passive)];
}

Json HistoryJson(const MeshSnapshot& s, const std::vector<HistoryPoint>& history) {
  Json points = Json::array();
  for (const HistoryPoint& p : history) {
    const bool any = p.answered > 0;
    points.push_back(Json{{"age_s", Seconds(p.start_ns, s.taken_ns)},
                          {"answered", p.answered},
                          {"unanswered", p.lost},
                          {"p50_us", Micros(p.p50_ns, any)},
                          {"p99_us", Micros(p.p99_ns, any)},
                          {"max_us", Micros(p.max_ns, any)}});
  }
  return points;
}

Json TargetJson(const MeshSnapshot& s, const TargetSnapshot& t) {
  Json windows = Json::object();
  for (Window w : kWindows) windows[std::string(WindowName(w))] = WindowJson(t, w);
  return Json{{"host", t.host},
              {"transport", t.transport},
              {"uri", t.uri},
              {"origin", t.origin},
              {"interval_s", static_cast<double>(t.interval_ns) / kNsPerSec},
              {"timeout_s", static_cast<double>(t.timeout_ns) / kNsPerSec},
              {"size_bytes", t.size_bytes},
              {"priority", t.priority},
              {"dscp", t.dscp < 0 ? Json(nullptr) : Json(t.dscp)},
              {"timestamps", TimestampsJson(t.counters)},
              {"in_flight", t.in_flight},
              {"counters", CountersJson(t.counters)},
              {"last_answer_age_s", Seconds(t.last_answer_ns, s.taken_ns)},
              {"last_sent_age_s", Seconds(t.last_sent_ns, s.taken_ns)},
              {"last_failure", t.last_failure == StatusCode::kOk
                                   ? Json(nullptr)
                                   : Json(std::string(StatusCodeName(t.last_failure)))},
              {"windows", windows},
              {"passive", PassiveOf(s, t) == nullptr ? Json(nullptr)
                                                     : PassiveJson(s, *PassiveOf(s, t))}};
}

Json Header(const MeshSnapshot& s) {
  return Json{{"self", s.pinglist.self.empty() ? Json(nullptr) : Json(s.pinglist.self)},
              {"pinglist_version",
               s.pinglist.version.empty() ? Json(nullptr) : Json(s.pinglist.version)}};
}

}  // namespace

Result<Window> ParseWindow(std::string_view text) {
  for (Window w : kWindows) {
    if (WindowName(w) == text) return w;
  }
  return InvalidArgumentError("window '" + std::string(text) + "': expected 10s, 1m or 10m");
}

std::string RenderTargetsJson(const MeshSnapshot& s) {
  Json doc = Header(s);
  Json targets = Json::array();
  for (const TargetSnapshot& t : s.targets) targets.push_back(TargetJson(s, t));
  doc["targets"] = std::move(targets);
  doc["prober"] = Json{{"epoch", s.prober_epoch},
                       {"probes_per_second", s.probes_per_second},
                       {"stretch", s.stretch},
                       {"probes_sent", s.prober.probes_sent},
                       {"answers", s.prober.answers},
                       {"bad_answers", s.prober.bad_answers},
                       {"stray_completions", s.prober.stray_completions},
                       {"skipped_late", s.probes_skipped}};
  doc["responder"] = Json{{"answered", s.probes_answered}, {"malformed", s.probes_malformed}};
  return doc.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string RenderPeersJson(const MeshSnapshot& s) {
  Json doc = Header(s);
  Json peers = Json::array();
  for (const PassiveSnapshot& p : s.peers) peers.push_back(PassiveJson(s, p));
  doc["peers"] = std::move(peers);
  doc["untracked"] = s.passive_untracked;
  doc["evicted"] = s.passive_evicted;
  return doc.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string RenderMatrixJson(const MeshSnapshot& s, Window w) {
  const auto i = static_cast<size_t>(w);
  Json doc = Header(s);
  doc["window"] = WindowName(w);
  doc["hosts"] = s.pinglist.hosts;
  Json cells = Json::array();
  for (const TargetSnapshot& t : s.targets) {
    const WindowSummary& rtt = t.rtt[i];
    const bool any = rtt.answered > 0;
    const PassiveSnapshot* passive = PassiveOf(s, t);
    const WindowSummary app = passive != nullptr ? passive->rtt[i] : WindowSummary{};
    cells.push_back(Json{{"from", s.pinglist.self},
                         {"to", t.host},
                         {"transport", t.transport},
                         {"state", SeriesStateName(t.state[i])},
                         {"p50_us", Micros(rtt.p50_ns, any)},
                         {"p99_us", Micros(rtt.p99_ns, any)},
                         {"network_p50_us", Micros(t.network[i].p50_ns, t.network[i].answered > 0)},
                         {"network_p99_us", Micros(t.network[i].p99_ns, t.network[i].answered > 0)},
                         {"loss_ratio", LossRatio(rtt)},
                         {"answered", rtt.answered},
                         {"unanswered", rtt.lost},
                         {"age_s", Seconds(t.last_answer_ns, s.taken_ns)},
                         {"app_p50_us", Micros(app.p50_ns, app.answered > 0)},
                         {"app_p99_us", Micros(app.p99_ns, app.answered > 0)},
                         {"app_answered", app.answered},
                         {"app_unanswered", app.lost}});
  }
  doc["cells"] = std::move(cells);
  return doc.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string RenderPinglistJson(const MeshSnapshot& s) {
  const PinglistSnapshot& p = s.pinglist;
  Json doc{{"path", p.path.empty() ? Json(nullptr) : Json(p.path)},
           {"version", p.version.empty() ? Json(nullptr) : Json(p.version)},
           {"self", p.self.empty() ? Json(nullptr) : Json(p.self)},
           {"hosts", p.hosts},
           {"loads", p.loads},
           {"load_failures", p.load_failures},
           {"last_error", p.error.empty() ? Json(nullptr) : Json(p.error)},
           {"loaded_age_s", Seconds(p.loaded_ns, s.taken_ns)}};
  Json targets = Json::array();
  for (const TargetSnapshot& t : s.targets) {
    targets.push_back(Json{{"host", t.host},
                           {"transport", t.transport},
                           {"uri", t.uri},
                           {"interval_s", static_cast<double>(t.interval_ns) / kNsPerSec},
                           {"timeout_s", static_cast<double>(t.timeout_ns) / kNsPerSec},
                           {"size_bytes", t.size_bytes},
                           {"priority", t.priority},
                           {"dscp", t.dscp < 0 ? Json(nullptr) : Json(t.dscp)},
                           {"origin", t.origin}});
  }
  doc["targets"] = std::move(targets);
  return doc.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Result<std::string> RenderPairJson(const MeshSnapshot& s, std::string_view host,
                                   std::string_view transport) {
  for (const TargetSnapshot& t : s.targets) {
    if (t.host != host || t.transport != transport) continue;
    Json doc = Header(s);
    doc["target"] = TargetJson(s, t);
    doc["history"] = HistoryJson(s, t.history);
    const PassiveSnapshot* passive = PassiveOf(s, t);
    doc["passive_history"] = passive == nullptr ? Json::array() : HistoryJson(s, passive->history);
    return doc.dump(-1, ' ', false, Json::error_handler_t::replace);
  }
  return NotFoundError("no target '" + std::string(host) + "' over '" + std::string(transport) +
                       "' (see /api/v1/targets)");
}

}  // namespace wharf::mesh
