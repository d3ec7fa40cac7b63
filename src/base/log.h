// base/log.h: wharf's logging front end. Macros format with fmt and hand a
// finished line to log.cc, the only file that knows spdlog is underneath.
//
//   WHARF_LOG(kInfo, "bound {} on {}", transport, address);
//   WHARF_LOG_RATE_LIMITED(malformed_log_, kWarn, "bad packet from {}", peer);
//
// A disabled level costs one relaxed atomic load: the arguments are neither
// formatted nor evaluated. Lines go to stderr as
//   "2024-05-01 12:00:00.123456 W dropped malformed packet from 10.0.0.2:4000"
// unless a test installed a sink (SetLogSink, ScopedLogCapture).
#pragma once

#include <fmt/format.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "wharf/result.h"

namespace wharf {

// In increasing severity; a threshold of kOff disables everything.
enum class LogLevel : int { kTrace = 0, kDebug, kInfo, kWarn, kError, kOff };

// "trace", "debug", "info", "warn", "error", "off".
std::string_view LogLevelName(LogLevel level);

// Parses a LogLevelName (as given on the command line or in wharfd.yaml).
// Anything else is kInvalidArgument naming the allowed values.
Result<LogLevel> ParseLogLevel(std::string_view text);

// The threshold: lines below it are dropped before formatting. Thread-safe;
// the default is kInfo.
void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();

namespace log_internal {
// The threshold as an int, readable inline by WHARF_LOG.
extern std::atomic<int> g_min_level;
}  // namespace log_internal

inline bool LogEnabled(LogLevel level) {
  return level != LogLevel::kOff &&
         static_cast<int>(level) >= log_internal::g_min_level.load(std::memory_order_relaxed);
}

// Emits a preformatted line at `level` if enabled. Thread-safe: lines from
// different threads never interleave. The line must not end in '\n'.
void LogLine(LogLevel level, std::string_view message);

// Receives every enabled line instead of stderr. Called with an internal
// mutex held, so a sink must not log.
using LogSink = std::function<void(LogLevel level, std::string_view message)>;

// Routes lines to `sink`, or back to stderr when `sink` is empty. Returns the
// sink that was installed before, so callers can restore it.
LogSink SetLogSink(LogSink sink);

// For tests: captures lines (formatted "<level name>: <message>") for its
// lifetime and sets the threshold to `level`; restores both on destruction.
// Not for concurrent use by two tests in one process.
class ScopedLogCapture {
 public:
  explicit ScopedLogCapture(LogLevel level = LogLevel::kTrace);
  ~ScopedLogCapture();
  ScopedLogCapture(const ScopedLogCapture&) = delete;
  ScopedLogCapture& operator=(const ScopedLogCapture&) = delete;

  // A copy, so that it stays valid while other threads keep logging.
  std::vector<std::string> Lines() const;
  // True if any captured line contains `needle`.
  bool Contains(std::string_view needle) const;
  void Clear();

 private:
  // The installed sink writes lines_ from whichever thread logs; the
  // destructor uninstalls it (under log.cc's mutex) before members die.
  mutable Mutex mu_;
  std::vector<std::string> lines_ ABSL_GUARDED_BY(mu_);
  LogSink previous_sink_;
  LogLevel previous_level_;
};

// Caps how often one call site may log, for paths an outsider can drive: a
// flood of malformed packets must cost a counter, not a disk. Allows `burst`
// lines per window of `period_ns` (windows start at the first line after the
// previous one ended); the next line let through after a suppression reports
// how many were dropped. Owned by the component that logs (e.g. one per
// receive path); not thread-safe, like the engine that owns it.
class RateLimitedLogger {
 public:
  RateLimitedLogger(const Clock& clock, DurationNs period_ns, int burst = 1)
      : clock_(clock), period_ns_(period_ns), burst_(burst) {}

  // True if a line at `level` may be emitted now. A line that is enabled but
  // over the limit is counted as suppressed; a disabled one is not counted.
  bool Allow(LogLevel level);
  // Emits `message`, plus " [N similar lines suppressed]" if Allow refused
  // any since the last emitted line.
  void Emit(LogLevel level, std::string_view message);

  // Lines refused since construction, for a stats counter.
  uint64_t SuppressedTotal() const { return suppressed_total_; }

 private:
  const Clock& clock_;
  const DurationNs period_ns_;
  const int burst_;
  TimeNs window_start_ns_ = 0;
  bool window_open_ = false;         // false until the first allowed line
  int emitted_in_window_ = 0;        // lines let through since window_start_ns_
  uint64_t suppressed_pending_ = 0;  // refused since the last emitted line
  uint64_t suppressed_total_ = 0;
};

}  // namespace wharf

// WHARF_LOG(kWarn, "fmt {} string", args...): formats and emits if kWarn is
// enabled. The format string is checked at compile time.
#define WHARF_LOG(level, ...)                                                 \
  do {                                                                        \
    if (::wharf::LogEnabled(::wharf::LogLevel::level)) {                      \
      ::wharf::LogLine(::wharf::LogLevel::level, ::fmt::format(__VA_ARGS__)); \
    }                                                                         \
  } while (0)

// WHARF_LOG_RATE_LIMITED(limiter, kWarn, "fmt {}", args...): like WHARF_LOG,
// but only when `limiter` (a RateLimitedLogger) allows; arguments are not
// evaluated for suppressed lines.
#define WHARF_LOG_RATE_LIMITED(limiter, level, ...)                         \
  do {                                                                      \
    if ((limiter).Allow(::wharf::LogLevel::level)) {                        \
      (limiter).Emit(::wharf::LogLevel::level, ::fmt::format(__VA_ARGS__)); \
    }                                                                       \
  } while (0)
