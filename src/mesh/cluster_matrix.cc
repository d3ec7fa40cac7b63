// ClusterMatrix: parsing a daemon's matrix defensively, merging, and the
// merged JSON, with nlohmann-json.
#include "mesh/cluster_matrix.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>
#include <utility>

namespace wharf::mesh {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kHttpScheme = "http://";

// What a JSON value is, for errors.
std::string TypeName(const Json& j) { return j.type_name(); }

Status WrongType(const std::string& field, std::string_view expected, const Json& got) {
  return InvalidArgumentError(field + ": expected " + std::string(expected) + ", got " +
                              TypeName(got));
}

// A string field, required or (null/missing allowed) optional.
Result<std::string> GetString(const Json& object, const char* key, const std::string& where,
                              bool required) {
  const std::string field = where + key;
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) {
    if (required) return InvalidArgumentError(field + ": missing");
    return std::string();
  }
  if (!it->is_string()) return WrongType(field, required ? "a string" : "a string or null", *it);
  return it->get<std::string>();
}

Result<std::optional<double>> GetNumber(const Json& object, const char* key,
                                        const std::string& where) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::optional<double>();
  if (!it->is_number()) return WrongType(where + key, "a number or null", *it);
  return std::optional<double>(it->get<double>());
}

Result<uint64_t> GetCount(const Json& object, const char* key, const std::string& where) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return uint64_t{0};
  if (!it->is_number_unsigned()) return WrongType(where + key, "a count (integer >= 0)", *it);
  return it->get<uint64_t>();
}

Result<MatrixCell> ParseCell(const Json& j, const std::string& where) {
  if (!j.is_object()) return WrongType(where.substr(0, where.size() - 1), "an object", j);
  MatrixCell c;
  WHARF_ASSIGN_OR_RETURN(c.from, GetString(j, "from", where, true));
  WHARF_ASSIGN_OR_RETURN(c.to, GetString(j, "to", where, true));
  WHARF_ASSIGN_OR_RETURN(c.transport, GetString(j, "transport", where, true));
  WHARF_ASSIGN_OR_RETURN(c.state, GetString(j, "state", where, true));
  WHARF_ASSIGN_OR_RETURN(c.p50_us, GetNumber(j, "p50_us", where));
  WHARF_ASSIGN_OR_RETURN(c.p99_us, GetNumber(j, "p99_us", where));
  WHARF_ASSIGN_OR_RETURN(c.network_p50_us, GetNumber(j, "network_p50_us", where));
  WHARF_ASSIGN_OR_RETURN(c.network_p99_us, GetNumber(j, "network_p99_us", where));
  WHARF_ASSIGN_OR_RETURN(c.loss_ratio, GetNumber(j, "loss_ratio", where));
  WHARF_ASSIGN_OR_RETURN(c.answered, GetCount(j, "answered", where));
  WHARF_ASSIGN_OR_RETURN(c.unanswered, GetCount(j, "unanswered", where));
  WHARF_ASSIGN_OR_RETURN(c.age_s, GetNumber(j, "age_s", where));
  // Absent from a wharfd older than passive measurement: no figures.
  WHARF_ASSIGN_OR_RETURN(c.app_p50_us, GetNumber(j, "app_p50_us", where));
  WHARF_ASSIGN_OR_RETURN(c.app_p99_us, GetNumber(j, "app_p99_us", where));
  WHARF_ASSIGN_OR_RETURN(c.app_answered, GetCount(j, "app_answered", where));
  WHARF_ASSIGN_OR_RETURN(c.app_unanswered, GetCount(j, "app_unanswered", where));
  return c;
}

Json OptionalNumber(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }
Json OptionalString(const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); }

Json Seconds(TimeNs from, TimeNs to) {
  if (from == 0) return nullptr;
  return static_cast<double>(to - from) / static_cast<double>(kNsPerSec);
}

Json CellJson(const MatrixCell& c) {
  return Json{{"from", c.from},
              {"to", c.to},
              {"transport", c.transport},
              {"state", c.state},
              {"p50_us", OptionalNumber(c.p50_us)},
              {"p99_us", OptionalNumber(c.p99_us)},
              {"network_p50_us", OptionalNumber(c.network_p50_us)},
              {"network_p99_us", OptionalNumber(c.network_p99_us)},
              {"loss_ratio", OptionalNumber(c.loss_ratio)},
              {"answered", c.answered},
              {"unanswered", c.unanswered},
              {"age_s", OptionalNumber(c.age_s)},
              {"app_p50_us", OptionalNumber(c.app_p50_us)},
              {"app_p99_us", OptionalNumber(c.app_p99_us)},
              {"app_answered", c.app_answered},
              {"app_unanswered", c.app_unanswered}};
}

Json SourcesJson(const ClusterMatrix& m) {
  Json sources = Json::array();
  for (const SourceState& s : m.sources) {
    sources.push_back(Json{{"url", s.url},
                           {"name", OptionalString(s.name)},
                           {"reachable", s.reachable},
                           {"error", s.reachable ? Json(nullptr) : Json(s.error)},
                           {"age_s", Seconds(s.fetched_ns, m.taken_ns)},
                           {"pinglist_version", OptionalString(s.pinglist_version)}});
  }
  return sources;
}

// The sources' pinglist version when every source that has one agrees.
Json CommonVersion(const ClusterMatrix& m) {
  std::string version;
  for (const SourceState& s : m.sources) {
    if (s.pinglist_version.empty()) continue;
    if (!version.empty() && version != s.pinglist_version) return nullptr;
    version = s.pinglist_version;
  }
  return OptionalString(version);
}

std::string Dump(const Json& doc) {
  return doc.dump(-1, ' ', false, Json::error_handler_t::replace);
}

void AddOnce(std::vector<std::string>& list, const std::string& name) {
  if (std::find(list.begin(), list.end(), name) == list.end()) list.push_back(name);
}

}  // namespace

Result<DaemonMatrix> ParseMatrixJson(std::string_view json) {
  Json doc = Json::parse(json.begin(), json.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return InvalidArgumentError("matrix: not JSON");
  if (!doc.is_object()) return WrongType("matrix", "an object", doc);
  DaemonMatrix m;
  WHARF_ASSIGN_OR_RETURN(m.self, GetString(doc, "self", "", false));
  WHARF_ASSIGN_OR_RETURN(m.pinglist_version, GetString(doc, "pinglist_version", "", false));
  WHARF_ASSIGN_OR_RETURN(m.window, GetString(doc, "window", "", false));
  auto hosts = doc.find("hosts");
  if (hosts == doc.end()) return InvalidArgumentError("hosts: missing");
  if (!hosts->is_array()) return WrongType("hosts", "an array", *hosts);
  for (size_t i = 0; i < hosts->size(); ++i) {
    const Json& h = (*hosts)[i];
    if (!h.is_string()) return WrongType("hosts[" + std::to_string(i) + "]", "a string", h);
    m.hosts.push_back(h.get<std::string>());
  }
  auto cells = doc.find("cells");
  if (cells == doc.end()) return InvalidArgumentError("cells: missing");
  if (!cells->is_array()) return WrongType("cells", "an array", *cells);
  m.cells.reserve(cells->size());
  for (size_t i = 0; i < cells->size(); ++i) {
    WHARF_ASSIGN_OR_RETURN(MatrixCell c,
                           ParseCell((*cells)[i], "cells[" + std::to_string(i) + "]."));
    m.cells.push_back(std::move(c));
  }
  return m;
}

std::string SourceRowName(const SourceState& source) {
  if (!source.name.empty()) return source.name;
  std::string_view url = source.url;
  if (url.substr(0, kHttpScheme.size()) == kHttpScheme) url.remove_prefix(kHttpScheme.size());
  return std::string(url);
}

ClusterMatrix Merge(std::string_view window, const std::vector<SourceFetch>& sources,
                    TimeNs now_ns) {
  ClusterMatrix out;
  out.window = std::string(window);
  out.taken_ns = now_ns;
  // Every transport seen, sorted: the pairs of a silent source with no
  // last good matrix.
  std::set<std::string> transports;
  for (const SourceFetch& f : sources) {
    SourceState s{.url = f.url,
                  .name = f.matrix ? f.matrix->self : std::string(),
                  .reachable = f.reachable && f.matrix.has_value(),
                  .error = f.error,
                  .fetched_ns = f.matrix ? f.fetched_ns : 0,
                  .pinglist_version = f.matrix ? f.matrix->pinglist_version : std::string()};
    if (!s.reachable && s.error.empty()) s.error = "no answer yet";
    if (f.matrix) {
      for (const std::string& h : f.matrix->hosts) AddOnce(out.hosts, h);
      for (const MatrixCell& c : f.matrix->cells) transports.insert(c.transport);
    }
    out.sources.push_back(std::move(s));
  }

  std::set<std::tuple<std::string, std::string, std::string>> seen;
  auto add = [&](MatrixCell c) {
    if (!seen.emplace(c.from, c.to, c.transport).second) return;
    AddOnce(out.hosts, c.to);
    out.cells.push_back(std::move(c));
  };
  // A daemon without a name in its list sends "from": "": its row is named
  // by its URL.
  auto from_of = [](const MatrixCell& c, const SourceState& s) {
    return c.from.empty() ? SourceRowName(s) : c.from;
  };
  for (size_t i = 0; i < sources.size(); ++i) {
    if (!out.sources[i].reachable) continue;
    for (const MatrixCell& c : sources[i].matrix->cells) {
      MatrixCell copy = c;
      copy.from = from_of(c, out.sources[i]);
      // Its age was counted to the fetch; count it to now.
      if (copy.age_s && sources[i].fetched_ns != 0) {
        copy.age_s = *copy.age_s + static_cast<double>(now_ns - sources[i].fetched_ns) / kNsPerSec;
      }
      add(std::move(copy));
    }
  }
  for (size_t i = 0; i < sources.size(); ++i) {
    const SourceState& s = out.sources[i];
    if (s.reachable) continue;
    const std::string row = SourceRowName(s);
    auto unreachable = [&](const std::string& to, const std::string& transport) {
      MatrixCell c;
      c.from = row;
      c.to = to;
      c.transport = transport;
      c.state = std::string(kCellUnreachable);
      return c;
    };
    const std::optional<DaemonMatrix>& last = sources[i].matrix;
    bool any = false;
    if (last) {
      for (const MatrixCell& old : last->cells) {
        if (from_of(old, s) != row) continue;
        MatrixCell c = unreachable(old.to, old.transport);
        // Its last answer is as old as it was then, and older by now.
        if (old.age_s && s.fetched_ns != 0) {
          c.age_s = *old.age_s + static_cast<double>(now_ns - s.fetched_ns) / kNsPerSec;
        }
        add(std::move(c));
        any = true;
      }
    }
    if (any) continue;
    const std::vector<std::string> hosts = out.hosts;
    for (const std::string& transport : transports) {
      for (const std::string& host : hosts) {
        if (host != row) add(unreachable(host, transport));
      }
    }
  }
  return out;
}

std::string RenderClusterMatrixJson(const ClusterMatrix& m) {
  Json doc{{"self", nullptr},
           {"pinglist_version", CommonVersion(m)},
           {"window", m.window},
           {"hosts", m.hosts}};
  Json cells = Json::array();
  for (const MatrixCell& c : m.cells) cells.push_back(CellJson(c));
  doc["cells"] = std::move(cells);
  doc["sources"] = SourcesJson(m);
  return Dump(doc);
}

std::string RenderSourcesJson(const ClusterMatrix& m) {
  return Dump(Json{{"window", m.window}, {"sources", SourcesJson(m)}});
}

std::string RenderClusterPinglistJson(const ClusterMatrix& m) {
  return Dump(Json{{"path", nullptr},
                   {"version", CommonVersion(m)},
                   {"self", nullptr},
                   {"hosts", m.hosts},
                   {"last_error", nullptr},
                   {"loaded_age_s", nullptr}});
}

}  // namespace wharf::mesh
