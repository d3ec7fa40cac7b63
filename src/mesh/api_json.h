// mesh/api_json.h: the JSON documents of wharfd's /api/v1 (docs/mesh.md
// shows each), rendered from a MeshSnapshot. Latencies are in microseconds
// (fields ending in _us), ages in seconds; a figure there is no data for is
// null, never 0, and each target says its state ("no_data", "ok",
// "all_failed") per window. nlohmann-json is used only in api_json.cc.
#pragma once

#include <string>
#include <string_view>

#include "mesh/mesh_snapshot.h"
#include "mesh/window_histogram.h"
#include "wharf/result.h"

namespace wharf::mesh {

// /api/v1/targets: every target with its class, counters and, per window,
// state and round-trip and network percentiles; "passive": the
// applications' own traffic to the same address and transport (or null).
std::string RenderTargetsJson(const MeshSnapshot& s);
// /api/v1/peers: every peer and transport the attached applications' own
// calls and messages measured (passive, no probes), targets or not, with
// its pinglist host when it is one, counters and windows.
std::string RenderPeersJson(const MeshSnapshot& s);
// /api/v1/matrix?window=W: this host's row of the source x destination
// matrix (one cell per target host and transport) in window `w`, and the
// list's hosts as the axis; the dashboard and `wharf mesh collect` read it.
std::string RenderMatrixJson(const MeshSnapshot& s, Window w);
// /api/v1/pinglist: the list in use (path, version, this host, hosts, the
// targets' classes) and the last reload's outcome.
std::string RenderPinglistJson(const MeshSnapshot& s);
// /api/v1/pair?host=H&transport=T: one target with its 10-minute history;
// NotFound naming what was asked when there is no such target.
Result<std::string> RenderPairJson(const MeshSnapshot& s, std::string_view host,
                                   std::string_view transport);
// "10s", "1m", "10m" -> Window; InvalidArgument listing them otherwise.
Result<Window> ParseWindow(std::string_view text);

}  // namespace wharf::mesh
