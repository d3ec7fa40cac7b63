// base/clock.h: injected time. Code never reads the wall clock directly: it is
// handed a Clock& (or a `now` argument), so tests can drive time with SimClock.
#pragma once

#include <cstdint>

namespace wharf {

// Nanoseconds on a monotonic timeline whose origin is the clock's own.
using TimeNs = int64_t;
// A span of time in nanoseconds.
using DurationNs = int64_t;

inline constexpr DurationNs kNsPerUs = 1000;
inline constexpr DurationNs kNsPerMs = 1000 * kNsPerUs;
inline constexpr DurationNs kNsPerSec = 1000 * kNsPerMs;
// "No deadline": later than any real time.
inline constexpr TimeNs kNever = INT64_MAX;

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic now. Thread-safe for SystemClock; SimClock is single-threaded.
  virtual TimeNs NowNs() const = 0;
  // Wall-clock time in ns since the Unix epoch, for things that must differ
  // across process restarts (e.g. seeding RPC ids), never for measuring.
  virtual int64_t WallNs() const = 0;
};

// CLOCK_MONOTONIC / CLOCK_REALTIME. Stateless; one shared instance.
class SystemClock final : public Clock {
 public:
  static SystemClock& Get();
  TimeNs NowNs() const override;
  int64_t WallNs() const override;
};

}  // namespace wharf
