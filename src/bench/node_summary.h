// bench/node_summary.h: how the `wharf bench cluster` controller reads
// what a node process reports: waits for it (bounded; NetnsProcess::WaitFor
// kills it at the timeout) and parses the last `summary {json}` line of its
// stdout. A node that failed, wrote no summary or wrote bad JSON is an
// error naming its host and its stderr.
#pragma once

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "netns/netns_process.h"
#include "netns/subprocess.h"
#include "wharf/result.h"

namespace wharf::bench {

Result<nlohmann::json> WaitForNodeSummary(netns::NetnsProcess& node, DurationNs timeout_ns);
// The same for a node started elsewhere (BenchHosts); `who` names it in errors.
Result<nlohmann::json> WaitForNodeSummary(netns::Subprocess& node, const std::string& who,
                                          DurationNs timeout_ns);

}  // namespace wharf::bench
