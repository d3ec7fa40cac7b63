// fuzz/matrix_json_fuzzer.cc: arbitrary bytes as a daemon's /api/v1/matrix
// document, which `wharf mesh` and the collector read from other hosts;
// errors are fine, crashes and hangs are not.
//
// Beyond not crashing: an error is kInvalidArgument; a parsed document goes
// through Merge with a second, unreachable source, and then through both
// renderers (the cluster JSON and the terminal table, every metric), whose
// JSON must parse back with the same cells.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_fail.h"
#include "mesh/cluster_matrix.h"
#include "mesh/matrix_text.h"

using wharf::fuzz::Fail;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace wharf;
  using namespace wharf::mesh;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Result<DaemonMatrix> parsed = ParseMatrixJson(text);
  if (!parsed.ok()) {
    if (parsed.status().code() != StatusCode::kInvalidArgument) Fail("an error other than InvalidArgument");
    return 0;
  }
  std::vector<SourceFetch> sources(2);
  sources[0].url = "http://198.18.0.1:4002";
  sources[0].reachable = true;
  sources[0].fetched_ns = 1;
  sources[0].matrix = *parsed;
  sources[1].url = "http://198.18.0.2:4002";
  sources[1].error = "connection refused";
  const ClusterMatrix merged = Merge("1m", sources, 2);
  const std::string json = RenderClusterMatrixJson(merged);
  Result<DaemonMatrix> again = ParseMatrixJson(json);
  if (!again.ok()) Fail("the merged document does not parse back");
  if (again->cells.size() != merged.cells.size()) Fail("cells lost in the merged document");
  for (Metric m : {Metric::kP50, Metric::kP99, Metric::kLoss, Metric::kNetworkP50,
                   Metric::kNetworkP99, Metric::kAppP50, Metric::kAppP99}) {
    for (bool colour : {false, true}) {
      if (RenderMatrixText(merged, m, "", colour).empty()) Fail("an empty table");
    }
  }
  return 0;
}
