// mesh/matrix_text.h: the merged mesh matrix (cluster_matrix.h) as a
// terminal table, what `wharf mesh` prints. Rows are sources, columns
// destinations, one transport and one metric at a time:
//
//   from \ to     a     b  c
//   a             .  52us  --
//   b          1.3ms     .  FAIL
//   c           DOWN  DOWN     .
//
// Cells: a latency ("52us", "1.3ms", "2.1s"), a loss ("0%", "0.5%", "12%"),
// "--" no data in the window (or none for this metric), "FAIL" every probe
// failed, "DOWN" the source did not answer, "." the diagonal, blank a pair
// not probed over the transport, "?" a state this build does not know.
// Names longer than a column (kMaxColumnName) are cut ("rack12-h~1") and
// listed under the table. A footer says the metric, transport and window,
// and each source's URL, pinglist version or error. Names from the network
// are made printable (base/text.h) before they reach a terminal.
//
// With colour, cells are coloured as the dashboard's (dashboard.html):
// latency green < 100 us, yellow < 1 ms, orange < 10 ms, red beyond; loss
// green 0, yellow < 1%, orange < 10%, red beyond; grey no data, magenta
// failed, bold red DOWN. Without it the text is plain, aligned and stable.
// Pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "mesh/cluster_matrix.h"
#include "wharf/result.h"

namespace wharf::mesh {

// What a table shows: a round-trip percentile, the loss ratio, a
// network-time percentile (round trip less the answerer's own time), or a
// percentile of the applications' own round trips on the pair (passive:
// "--" where they sent nothing, "FAIL" where nothing they sent was answered).
enum class Metric { kP50, kP99, kLoss, kNetworkP50, kNetworkP99, kAppP50, kAppP99 };

// "p50", "p99", "loss", "network_p50", "network_p99", "app_p50", "app_p99".
std::string_view MetricName(Metric m);
// The reverse; InvalidArgument listing the names otherwise.
Result<Metric> ParseMetric(std::string_view text);

// Column names (and row names in the table) longer than this are cut.
inline constexpr size_t kMaxColumnName = 10;
// Row names may be longer: a source named by its URL fits.
inline constexpr size_t kMaxRowName = 24;

// The table and its footer, ending in a newline. `transport` "" shows the
// first transport the cells have (in name order).
std::string RenderMatrixText(const ClusterMatrix& m, Metric metric, std::string_view transport,
                             bool colour);

}  // namespace wharf::mesh
