#include "base/log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/sim_clock.h"

namespace wharf {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;

TEST(LogLevelTest, NamesRoundTrip) {
  for (LogLevel level : {LogLevel::kTrace, LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn,
                         LogLevel::kError, LogLevel::kOff}) {
    Result<LogLevel> parsed = ParseLogLevel(LogLevelName(level));
    ASSERT_TRUE(parsed.ok()) << LogLevelName(level);
    EXPECT_EQ(*parsed, level);
  }
}

TEST(LogLevelTest, ParseIgnoresCase) {
  EXPECT_EQ(*ParseLogLevel("WARN"), LogLevel::kWarn);
  EXPECT_EQ(*ParseLogLevel("Debug"), LogLevel::kDebug);
}

TEST(LogLevelTest, ParseErrorListsAllowedValues) {
  for (std::string_view bad : {"verbose", "", "warning", "info "}) {
    Result<LogLevel> parsed = ParseLogLevel(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(parsed.status().message(),
                HasSubstr("expected one of trace, debug, info, warn, error, off"));
    EXPECT_THAT(parsed.status().message(), HasSubstr(fmt::format("'{}'", bad)));
  }
}

TEST(LogTest, CaptureReceivesFormattedLines) {
  ScopedLogCapture capture;
  WHARF_LOG(kInfo, "bound {} on {}", "udp", 4000);
  WHARF_LOG(kError, "plain");
  EXPECT_THAT(capture.Lines(), ElementsAre("info: bound udp on 4000", "error: plain"));
  EXPECT_TRUE(capture.Contains("udp on"));
  capture.Clear();
  EXPECT_TRUE(capture.Lines().empty());
}

TEST(LogTest, LinesBelowTheThresholdAreDropped) {
  ScopedLogCapture capture(LogLevel::kWarn);
  WHARF_LOG(kDebug, "debug");
  WHARF_LOG(kInfo, "info");
  WHARF_LOG(kWarn, "warn");
  LogLine(LogLevel::kInfo, "direct info");
  LogLine(LogLevel::kError, "direct error");
  EXPECT_THAT(capture.Lines(), ElementsAre("warn: warn", "error: direct error"));
}

TEST(LogTest, OffDisablesEverything) {
  ScopedLogCapture capture(LogLevel::kOff);
  WHARF_LOG(kError, "error");
  LogLine(LogLevel::kOff, "off is a threshold, not a level to log at");
  EXPECT_TRUE(capture.Lines().empty());
  SetLogLevel(LogLevel::kTrace);
  LogLine(LogLevel::kOff, "still not a level to log at");
  EXPECT_TRUE(capture.Lines().empty());
}

TEST(LogTest, DisabledLevelDoesNotEvaluateArguments) {
  ScopedLogCapture capture(LogLevel::kInfo);
  int evaluated = 0;
  auto expensive = [&] { return ++evaluated; };
  WHARF_LOG(kDebug, "value {}", expensive());
  EXPECT_EQ(evaluated, 0);
  WHARF_LOG(kInfo, "value {}", expensive());
  EXPECT_EQ(evaluated, 1);
}

TEST(LogTest, CaptureRestoresLevelAndSink) {
  SetLogLevel(LogLevel::kError);
  std::vector<std::string> outer;
  LogSink before = SetLogSink([&](LogLevel, std::string_view m) { outer.emplace_back(m); });
  {
    ScopedLogCapture capture(LogLevel::kDebug);
    EXPECT_EQ(GetLogLevel(), LogLevel::kDebug);
    WHARF_LOG(kDebug, "inner");
    EXPECT_EQ(capture.Lines().size(), 1u);
  }
  EXPECT_EQ(GetLogLevel(), LogLevel::kError);
  WHARF_LOG(kError, "outer");
  EXPECT_THAT(outer, ElementsAre("outer"));
  SetLogSink(std::move(before));
  SetLogLevel(LogLevel::kInfo);
}

TEST(LogTest, StderrLineIsCompact) {
  SetLogLevel(LogLevel::kInfo);
  ::testing::internal::CaptureStderr();
  WHARF_LOG(kWarn, "dropped {} packets", 42);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(
      err, MatchesRegex("[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8}\\.[0-9]{6} W dropped 42 packets\n"));
}

TEST(RateLimitedLoggerTest, AllowsOneLinePerPeriodAndReportsSuppressed) {
  ScopedLogCapture capture(LogLevel::kInfo);
  SimClock clock;
  RateLimitedLogger limiter(clock, kNsPerSec);
  for (int i = 0; i < 100; ++i) WHARF_LOG_RATE_LIMITED(limiter, kWarn, "bad packet {}", i);
  EXPECT_THAT(capture.Lines(), ElementsAre("warn: bad packet 0"));
  EXPECT_EQ(limiter.SuppressedTotal(), 99u);

  clock.AdvanceBy(kNsPerSec - 1);  // still inside the first window
  WHARF_LOG_RATE_LIMITED(limiter, kWarn, "bad packet {}", 100);
  EXPECT_EQ(capture.Lines().size(), 1u);

  clock.AdvanceBy(1);
  WHARF_LOG_RATE_LIMITED(limiter, kWarn, "bad packet {}", 101);
  WHARF_LOG_RATE_LIMITED(limiter, kWarn, "bad packet {}", 102);
  EXPECT_THAT(capture.Lines(), ElementsAre("warn: bad packet 0",
                                           "warn: bad packet 101 [100 similar lines suppressed]"));

  clock.AdvanceBy(5 * kNsPerSec);
  WHARF_LOG_RATE_LIMITED(limiter, kWarn, "bad packet {}", 103);
  EXPECT_EQ(capture.Lines().back(), "warn: bad packet 103 [1 similar line suppressed]");
  EXPECT_EQ(limiter.SuppressedTotal(), 101u);
}

TEST(RateLimitedLoggerTest, BurstLetsSeveralLinesPerWindow) {
  ScopedLogCapture capture(LogLevel::kInfo);
  SimClock clock;
  RateLimitedLogger limiter(clock, 10 * kNsPerMs, /*burst=*/3);
  for (int i = 0; i < 10; ++i) WHARF_LOG_RATE_LIMITED(limiter, kWarn, "{}", i);
  EXPECT_THAT(capture.Lines(), ElementsAre("warn: 0", "warn: 1", "warn: 2"));
  clock.AdvanceBy(10 * kNsPerMs);
  for (int i = 10; i < 20; ++i) WHARF_LOG_RATE_LIMITED(limiter, kWarn, "{}", i);
  EXPECT_EQ(capture.Lines().size(), 6u);
  EXPECT_EQ(capture.Lines()[3], "warn: 10 [7 similar lines suppressed]");
}

TEST(RateLimitedLoggerTest, DisabledLevelIsNeitherLoggedNorCounted) {
  ScopedLogCapture capture(LogLevel::kError);
  SimClock clock;
  RateLimitedLogger limiter(clock, kNsPerSec);
  int evaluated = 0;
  for (int i = 0; i < 5; ++i) WHARF_LOG_RATE_LIMITED(limiter, kWarn, "{}", ++evaluated);
  EXPECT_TRUE(capture.Lines().empty());
  EXPECT_EQ(limiter.SuppressedTotal(), 0u);
  EXPECT_EQ(evaluated, 0);
  // The window was never opened, so the first enabled line goes through.
  WHARF_LOG_RATE_LIMITED(limiter, kError, "first");
  EXPECT_THAT(capture.Lines(), ElementsAre("error: first"));
}

TEST(RateLimitedLoggerTest, SuppressedLinesDoNotEvaluateArguments) {
  ScopedLogCapture capture(LogLevel::kInfo);
  SimClock clock;
  RateLimitedLogger limiter(clock, kNsPerSec);
  int evaluated = 0;
  for (int i = 0; i < 5; ++i) WHARF_LOG_RATE_LIMITED(limiter, kWarn, "{}", ++evaluated);
  EXPECT_EQ(evaluated, 1);
}

}  // namespace
}  // namespace wharf
