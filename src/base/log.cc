// The logging back end: the threshold, the test sink, and the spdlog logger
// that writes to stderr. The only file in wharf that includes spdlog.
#include "base/log.h"

#include <spdlog/logger.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <memory>
#include <string>

namespace wharf {
namespace log_internal {
std::atomic<int> g_min_level{static_cast<int>(LogLevel::kInfo)};
}  // namespace log_internal

namespace {

constexpr std::array<std::string_view, 6> kLevelNames = {"trace", "debug", "info",
                                                         "warn",  "error", "off"};

spdlog::level::level_enum ToSpdlog(LogLevel level) {
  switch (level) {
    case LogLevel::kTrace:
      return spdlog::level::trace;
    case LogLevel::kDebug:
      return spdlog::level::debug;
    case LogLevel::kInfo:
      return spdlog::level::info;
    case LogLevel::kWarn:
      return spdlog::level::warn;
    case LogLevel::kError:
      return spdlog::level::err;
    case LogLevel::kOff:
      break;
  }
  return spdlog::level::off;
}

// Process-wide output state. Leaked on purpose: threads and static
// destructors may log during exit, after a static object would be gone.
struct Output {
  Mutex mu;
  LogSink sink ABSL_GUARDED_BY(mu);  // empty means stderr
  // Our own logger rather than spdlog's default one, so that whatever else in
  // the process configures spdlog (a library, a test) cannot change our format.
  // A shared_ptr because that is how spdlog's API hands loggers around.
  // Set once, before GetOutput returns; the logger is spdlog's thread-safe
  // kind (stderr_sink_mt), written under mu all the same.
  std::shared_ptr<spdlog::logger> stderr_logger;
};

Output& GetOutput() {
  static Output* output = [] {
    auto* o = new Output;
    o->stderr_logger = std::make_shared<spdlog::logger>(
        "wharf", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    // Compact: date, time to the microsecond, one-letter level, message.
    o->stderr_logger->set_pattern("%Y-%m-%d %H:%M:%S.%f %L %v");
    // Filtering happens in LogEnabled; spdlog passes everything through.
    o->stderr_logger->set_level(spdlog::level::trace);
    return o;
  }();
  return *output;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  });
}

}  // namespace

std::string_view LogLevelName(LogLevel level) {
  const auto i = static_cast<size_t>(level);
  return i < kLevelNames.size() ? kLevelNames[i] : "unknown";
}

Result<LogLevel> ParseLogLevel(std::string_view text) {
  for (size_t i = 0; i < kLevelNames.size(); ++i) {
    if (EqualsIgnoreCase(text, kLevelNames[i])) return static_cast<LogLevel>(i);
  }
  return InvalidArgumentError(fmt::format(
      "unknown log level '{}': expected one of trace, debug, info, warn, error, off", text));
}

void SetLogLevel(LogLevel level) {
  log_internal::g_min_level.store(static_cast<int>(level), std::memory_order_relaxed);
}

LogLevel GetLogLevel() {
  return static_cast<LogLevel>(log_internal::g_min_level.load(std::memory_order_relaxed));
}

void LogLine(LogLevel level, std::string_view message) {
  if (!LogEnabled(level)) return;
  Output& out = GetOutput();
  MutexLock lock(out.mu);
  if (out.sink) {
    out.sink(level, message);
  } else {
    out.stderr_logger->log(ToSpdlog(level), message);
  }
}

LogSink SetLogSink(LogSink sink) {
  Output& out = GetOutput();
  MutexLock lock(out.mu);
  std::swap(out.sink, sink);
  return sink;
}

ScopedLogCapture::ScopedLogCapture(LogLevel level) : previous_level_(GetLogLevel()) {
  previous_sink_ = SetLogSink([this](LogLevel line_level, std::string_view message) {
    MutexLock lock(mu_);
    lines_.push_back(fmt::format("{}: {}", LogLevelName(line_level), message));
  });
  SetLogLevel(level);
}

ScopedLogCapture::~ScopedLogCapture() {
  SetLogLevel(previous_level_);
  SetLogSink(std::move(previous_sink_));
}

std::vector<std::string> ScopedLogCapture::Lines() const {
  MutexLock lock(mu_);
  return lines_;
}

bool ScopedLogCapture::Contains(std::string_view needle) const {
  MutexLock lock(mu_);
  return std::any_of(lines_.begin(), lines_.end(), [&](const std::string& line) {
    return line.find(needle) != std::string::npos;
  });
}

void ScopedLogCapture::Clear() {
  MutexLock lock(mu_);
  lines_.clear();
}

bool RateLimitedLogger::Allow(LogLevel level) {
  if (!LogEnabled(level)) return false;
  const TimeNs now = clock_.NowNs();
  if (!window_open_ || now - window_start_ns_ >= period_ns_) {
    window_open_ = true;
    window_start_ns_ = now;
    emitted_in_window_ = 0;
  }
  if (emitted_in_window_ < burst_) {
    ++emitted_in_window_;
    return true;
  }
  ++suppressed_pending_;
  ++suppressed_total_;
  return false;
}

void RateLimitedLogger::Emit(LogLevel level, std::string_view message) {
  if (suppressed_pending_ == 0) {
    LogLine(level, message);
    return;
  }
  LogLine(level, fmt::format("{} [{} similar line{} suppressed]", message, suppressed_pending_,
                             suppressed_pending_ == 1 ? "" : "s"));
  suppressed_pending_ = 0;
}

}  // namespace wharf
