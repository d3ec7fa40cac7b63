// integration/rma_scenarios.h: remote memory between processes, shared by
// the loopback and the two-host tests (rpc_across_processes_test.cc,
// netns_rpc_test.cc) so both run the same checks. The lender is a `wharf
// serve --lend-bytes` child; each operation is a `wharf rma` child, which
// borrows the server's block, acts, and gives it back. Failures are
// reported through gtest's EXPECT/ADD_FAILURE.
#pragma once

#include <string>
#include <vector>

#include "integration/wharf_process.h"

namespace wharf::integration {

// How `wharf rma` runs: its --set settings and where.
struct RmaClient {
  std::vector<std::string> settings;
  netns::SubprocessOptions process;
};

// Bytes `wharf serve` must lend for CheckEverySizeRoundTrips.
inline constexpr uint64_t kRmaLendBytes = (uint64_t{64} << 20) + (uint64_t{64} << 10);

// Runs `wharf rma <args>` (bounded), with the client's settings.
Result<netns::CommandOutput> RunRma(const RmaClient& client, std::vector<std::string> args);

// Every size from 0 B to 64 MiB written at an unaligned offset and read
// back, each byte checked (the pattern of `wharf rma --pattern-bytes`),
// and a write with immediate the same way.
void CheckEverySizeRoundTrips(const std::string& server, const RmaClient& client);
// Two clients fetch-adding to one word at once lose no update, and
// compare-and-swap swaps only what it expected.
void CheckConcurrentAtomicsLoseNothing(const std::string& server, const RmaClient& client);
// Past the end, a misaligned word: refused with a clear error, exit 1.
void CheckBadAccessIsRefused(const std::string& server, const RmaClient& client);

}  // namespace wharf::integration
