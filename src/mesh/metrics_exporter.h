// mesh/metrics_exporter.h: wharfd's /metrics, rendered from a MeshSnapshot
// in the Prometheus text format (prometheus_text.h writes it). The metric
// names and their labels are listed in docs/mesh.md with what bounds their
// number of series:
//   per target and transport (labels source, target, transport): two
//     latency histograms of 25 series each and ten more series;
//   per listen socket (listener, name): one series per transport counter;
//   per attached application (app, program, name): one per session
//     counter, and four gauges; at most limits.max_applications of them;
//   and a few dozen for the prober, the responder, the pinglist and the
//     daemon.
#pragma once

#include <string>

#include "mesh/mesh_snapshot.h"
#include "wharf/result.h"

namespace wharf::mesh {

// The exposition, or an internal error naming the metric the writer
// refused (a bug: the test suite runs promtool on it).
Result<std::string> RenderMetrics(const MeshSnapshot& s);

}  // namespace wharf::mesh
