// integration/liveness_scenarios.h: fault scenarios shared by the loopback
// and the two-host liveness tests (liveness_across_processes_test.cc,
// netns_liveness_test.cc), written once so both run the same checks.
// Failures are reported through gtest's EXPECT/ADD_FAILURE.
#pragma once

#include <chrono>
#include <string>

#include "integration/wharf_process.h"
#include "wharf/endpoint.h"

namespace wharf::integration {

// The endpoint's counters on one line, for failure messages.
std::string StatsText(const Endpoint& ep);

// Asks `wharf serve` at `address` how often it ran requests (method 2).
Result<ServerCounts> FetchServerCounts(Endpoint& client, const std::string& address);

// The project issue's fault 1: `client` keeps 4 echo calls in flight to
// `server`, which is stopped (SIGSTOP) for `pause` and resumed (SIGCONT),
// and the calls go on for a second more. Checks that no call failed, that
// the pause really held calls (the slowest took most of it), and that the
// server ran every call exactly once.
void CheckHeldPauseLosesNothing(Endpoint& client, ServeProcess& server,
                                std::chrono::milliseconds pause = std::chrono::seconds(1));

}  // namespace wharf::integration
