// client/testing/region_events.h: waiting for one kind of remote-memory
// event in the tests (RegionEvent, wharf/remote_memory.h).
#pragma once

#include <chrono>
#include <optional>

#include "wharf/remote_memory.h"

namespace wharf::testing {

// The next event of `kind` at `memory`, skipping others; nullopt after
// `limit` (a bound reached only on failure).
inline std::optional<RegionEvent> NextRegionEvent(
    RemoteMemory& memory, RegionEvent::Kind kind,
    std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    Result<RegionEvent> e = memory.WaitEvent(std::chrono::milliseconds(100));
    if (e.ok() && e->kind == kind) return *e;
  }
  return std::nullopt;
}

}  // namespace wharf::testing
