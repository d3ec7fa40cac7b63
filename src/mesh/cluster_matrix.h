// mesh/cluster_matrix.h: the whole mesh's source x destination matrix, made
// of the rows many wharfds serve (each serves its own at /api/v1/matrix,
// api_json.h): reading one daemon's document (ParseMatrixJson), merging the
// documents of many, with the sources that did not answer (Merge), and
// writing the result out in the daemon's shape plus "sources"
// (RenderClusterMatrixJson), which the dashboard and `wharf mesh --json`
// show. The terminal table is matrix_text.h's; fetching is the caller's
// (http_client.h, collector.h). nlohmann-json is used only in the .cc.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "wharf/result.h"

namespace wharf::mesh {

// The cell states a daemon sends (probe_series.h's SeriesState names), and
// the one Merge adds for a source that did not answer.
inline constexpr std::string_view kCellOk = "ok";
inline constexpr std::string_view kCellNoData = "no_data";
inline constexpr std::string_view kCellAllFailed = "all_failed";
inline constexpr std::string_view kCellUnreachable = "unreachable";

// One cell: `from` probed `to` over `transport` in the matrix's window.
// Figures there was no data for are empty (null in the JSON), never 0.
struct MatrixCell {
  std::string from;
  std::string to;
  std::string transport;  // "homa", "tcp"
  // One of the kCell* states, or whatever a newer wharfd sends (kept, shown
  // as unknown).
  std::string state;
  std::optional<double> p50_us;  // round trip, microseconds
  std::optional<double> p99_us;
  std::optional<double> network_p50_us;  // round trip less the answerer's own time
  std::optional<double> network_p99_us;
  std::optional<double> loss_ratio;  // unanswered / (answered + unanswered), 0..1
  uint64_t answered = 0;             // probes answered in the window
  uint64_t unanswered = 0;           // probes lost in the window
  std::optional<double> age_s;       // since the last answer, seconds
  // The applications' own calls and messages on the pair (passive).
  std::optional<double> app_p50_us;
  std::optional<double> app_p99_us;
  uint64_t app_answered = 0;
  uint64_t app_unanswered = 0;
};

// One daemon's /api/v1/matrix?window=W document.
struct DaemonMatrix {
  std::string self;                // the daemon's name in its pinglist; "" for null
  std::string pinglist_version;    // "" for null
  std::string window;              // "10s", "1m", "10m" as it says
  std::vector<std::string> hosts;  // its pinglist's hosts, in its order
  std::vector<MatrixCell> cells;
};

// What one source said, as the table and the JSON show it.
struct SourceState {
  std::string url;         // as fetched: "http://127.0.0.1:4002"
  std::string name;        // "self" from its JSON (this fetch's or the last good one's), or ""
  bool reachable = false;  // its last fetch gave a matrix
  std::string error;       // why not, when !reachable
  // When the matrix its row shows (reachable) or last showed (not) was
  // fetched, on the merger's clock; 0: never.
  TimeNs fetched_ns = 0;
  std::string pinglist_version;  // of that matrix; "" for none
};

// The merged matrix. Rows are sources (SourceRowName), columns hosts.
struct ClusterMatrix {
  std::string window;   // the window asked of every source
  TimeNs taken_ns = 0;  // when merged, on the merger's clock: ages count to it
  // Every source's hosts, then any destination no list names, each once,
  // in first-seen order.
  std::vector<std::string> hosts;
  std::vector<SourceState> sources;  // in the order given to Merge
  // The answering sources' cells (the first source to give a (from, to,
  // transport) wins; ages counted to taken_ns), then a kCellUnreachable cell for every pair each
  // silent source probed (from its last good matrix) or, with none, for
  // every host and transport seen.
  std::vector<MatrixCell> cells;
};

// Parses a daemon's /api/v1/matrix document. Never throws: bad JSON or a
// field of the wrong type is InvalidArgument naming it ("cells[2].p50_us:
// expected a number or null, got string"). Unknown fields are ignored; a
// missing figure is null.
Result<DaemonMatrix> ParseMatrixJson(std::string_view json);

// One source as Merge gets it.
struct SourceFetch {
  std::string url;
  bool reachable = false;  // `matrix` is this fetch's
  std::string error;       // why not, when !reachable
  TimeNs fetched_ns = 0;   // when `matrix` was fetched; 0: never
  // This fetch's matrix when reachable; otherwise the last good one, if any
  // (its names and pairs label the source's row).
  std::optional<DaemonMatrix> matrix;
};

// Merges the sources' matrices for `window` at `now_ns` (see ClusterMatrix).
ClusterMatrix Merge(std::string_view window, const std::vector<SourceFetch>& sources,
                    TimeNs now_ns);

// The name of a source's row: its self name, else its URL without
// "http://".
std::string SourceRowName(const SourceState& source);

// The merged matrix as a daemon's /api/v1/matrix document ("self": null,
// "pinglist_version": the sources' one when they agree, else null) plus
// "sources": [{"url", "name", "reachable", "error", "age_s",
// "pinglist_version"}] (age_s since fetched_ns; null for never).
std::string RenderClusterMatrixJson(const ClusterMatrix& m);

// Just the sources, as /api/v1/sources: {"window", "sources": [...]}.
std::string RenderSourcesJson(const ClusterMatrix& m);

// The merged pinglist summary, as a collector's /api/v1/pinglist (what the
// dashboard reads for its header): {"path": null, "version", "self": null,
// "hosts", "last_error": null, "loaded_age_s": null}.
std::string RenderClusterPinglistJson(const ClusterMatrix& m);

}  // namespace wharf::mesh
