// mesh/testing/promtool.h: `promtool check metrics` (Debian package
// `prometheus`, the Prometheus project's own parser and linter) run on an
// exposition, for the tests of what wharfd serves on /metrics. Test code
// only.
#pragma once

#include <string>
#include <string_view>

#include "wharf/result.h"

namespace wharf::mesh::testing {

struct ToolRun {
  int exit_code = -1;  // 128 + signal number if a signal ended it
  std::string output;  // stdout and stderr, interleaved
};

// Runs `promtool check metrics` (found in PATH; a fixed argv, no shell) with
// `input` on stdin; NotFound naming the package when it is not installed,
// DeadlineExceeded if it runs past 30 s (it is killed).
Result<ToolRun> RunPromtool(std::string_view input);

// promtool parsed `exposition` and had nothing at all to say about it.
void ExpectPromtoolSilent(const std::string& exposition);

}  // namespace wharf::mesh::testing
