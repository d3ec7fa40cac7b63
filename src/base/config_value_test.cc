#include "base/config_value.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace wharf {
namespace {

using ::testing::HasSubstr;

// The error message of a failed parse, or "ok" to make a surprise visible.
template <typename T>
std::string ErrorOf(const Result<T>& r) {
  if (r.ok()) return "ok";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  return r.status().message();
}

TEST(ParseIntTest, AcceptsSignedDecimal) {
  EXPECT_EQ(*ParseInt("42"), 42);
  EXPECT_EQ(*ParseInt("-42"), -42);
  EXPECT_EQ(*ParseInt("+7"), 7);
  EXPECT_EQ(*ParseInt("-9223372036854775808"), INT64_MIN);
}

TEST(ParseIntTest, RejectsJunkAndOutOfRange) {
  EXPECT_EQ(ErrorOf(ParseInt("12x")), "expected an integer, got '12x'");
  EXPECT_EQ(ErrorOf(ParseInt("")), "expected an integer, got ''");
  EXPECT_EQ(ErrorOf(ParseInt("1.5")), "expected an integer, got '1.5'");
  EXPECT_EQ(ErrorOf(ParseInt("+-5")), "expected an integer, got '+-5'");
  EXPECT_EQ(ErrorOf(ParseInt("9223372036854775808")),
            "expected an integer, got '9223372036854775808' (out of 64-bit range)");
  EXPECT_EQ(ErrorOf(ParseInt("70000", 1, 65535)), "expected an integer in [1, 65535], got '70000'");
  EXPECT_EQ(ErrorOf(ParseInt("0", 1, 65535)), "expected an integer in [1, 65535], got '0'");
}

TEST(ParseUintTest, RejectsNegativeInsteadOfWrapping) {
  EXPECT_EQ(*ParseUint("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(ErrorOf(ParseUint("-1")), "expected a non-negative integer, got '-1'");
  EXPECT_EQ(ErrorOf(ParseUint("18446744073709551616")),
            "expected a non-negative integer, got '18446744073709551616' (out of 64-bit range)");
  EXPECT_EQ(ErrorOf(ParseUint("256", 255)), "expected an integer in [0, 255], got '256'");
}

TEST(ParseBoolTest, AcceptsCommonSpellings) {
  for (auto t : {"true", "True", "TRUE", "yes", "on"}) EXPECT_TRUE(*ParseBool(t)) << t;
  for (auto f : {"false", "False", "no", "OFF"}) EXPECT_FALSE(*ParseBool(f)) << f;
  EXPECT_EQ(ErrorOf(ParseBool("maybe")), "expected true or false, got 'maybe'");
  EXPECT_EQ(ErrorOf(ParseBool("1")), "expected true or false, got '1'");
}

TEST(ParseDoubleTest, AcceptsFiniteNumbersOnly) {
  EXPECT_DOUBLE_EQ(*ParseDouble("0.05"), 0.05);
  EXPECT_DOUBLE_EQ(*ParseDouble("-1e3"), -1000.0);
  EXPECT_DOUBLE_EQ(*ParseDouble("+2"), 2.0);
  EXPECT_EQ(ErrorOf(ParseDouble("inf")), "expected a number, got 'inf'");
  EXPECT_EQ(ErrorOf(ParseDouble("nan")), "expected a number, got 'nan'");
  EXPECT_EQ(ErrorOf(ParseDouble("5%")), "expected a number, got '5%'");
}

TEST(ParseDurationTest, EachUnit) {
  EXPECT_EQ(*ParseDuration("250ns"), 250);
  EXPECT_EQ(*ParseDuration("100us"), 100 * kNsPerUs);
  EXPECT_EQ(*ParseDuration("100\u00b5s"), 100 * kNsPerUs);
  EXPECT_EQ(*ParseDuration("100\u03bcs"), 100 * kNsPerUs);
  EXPECT_EQ(*ParseDuration("5ms"), 5 * kNsPerMs);
  EXPECT_EQ(*ParseDuration("2s"), 2 * kNsPerSec);
  EXPECT_EQ(*ParseDuration("1.5ms"), 1'500'000);
  EXPECT_EQ(*ParseDuration("5 ms"), 5 * kNsPerMs);
  EXPECT_EQ(*ParseDuration("0"), 0);
  EXPECT_EQ(*ParseDuration("9223372036854775807ns"), INT64_MAX);
}

TEST(ParseDurationTest, Errors) {
  const std::string what = "expected a duration like '5ms' (units: ns, us, ms, s), got ";
  EXPECT_EQ(ErrorOf(ParseDuration("5")), what + "'5' (missing unit)");
  EXPECT_EQ(ErrorOf(ParseDuration("fast")), what + "'fast'");
  EXPECT_EQ(ErrorOf(ParseDuration("5min")), what + "'5min'");
  EXPECT_EQ(ErrorOf(ParseDuration("5MS")), what + "'5MS'");
  EXPECT_EQ(ErrorOf(ParseDuration("-5ms")), what + "'-5ms' (negative)");
  EXPECT_EQ(ErrorOf(ParseDuration("1.5ns")), what + "'1.5ns' (not a whole number of ns)");
  EXPECT_EQ(ErrorOf(ParseDuration("1.ms")), what + "'1.ms'");
  EXPECT_EQ(ErrorOf(ParseDuration(".5ms")), what + "'.5ms'");
  EXPECT_THAT(ErrorOf(ParseDuration("9223372037s")), HasSubstr("(too large: at most"));
  EXPECT_THAT(ErrorOf(ParseDuration("99999999999999999999999s")), HasSubstr("(too large"));
}

TEST(ParseBytesTest, DecimalAndBinaryUnitsAreDistinct) {
  EXPECT_EQ(*ParseBytes("1500"), 1500u);
  EXPECT_EQ(*ParseBytes("1500B"), 1500u);
  EXPECT_EQ(*ParseBytes("40KB"), 40'000u);
  EXPECT_EQ(*ParseBytes("40KiB"), 40u * 1024);
  EXPECT_EQ(*ParseBytes("2MB"), 2'000'000u);
  EXPECT_EQ(*ParseBytes("64MiB"), 64u << 20);
  EXPECT_EQ(*ParseBytes("3GB"), 3'000'000'000u);
  EXPECT_EQ(*ParseBytes("1GiB"), uint64_t{1} << 30);
  EXPECT_EQ(*ParseBytes("2TB"), 2'000'000'000'000u);
  EXPECT_EQ(*ParseBytes("1TiB"), uint64_t{1} << 40);
  EXPECT_EQ(*ParseBytes("1.5KiB"), 1536u);
  EXPECT_EQ(*ParseBytes("16777215TiB"), (uint64_t{1} << 40) * 16777215);
}

TEST(ParseBytesTest, Errors) {
  EXPECT_THAT(ErrorOf(ParseBytes("64M")), HasSubstr("got '64M'"));
  EXPECT_THAT(ErrorOf(ParseBytes("64M")), HasSubstr("KB, MB, GB, TB = 1000^n; KiB, MiB"));
  EXPECT_THAT(ErrorOf(ParseBytes("64mib")), HasSubstr("got '64mib'"));
  EXPECT_THAT(ErrorOf(ParseBytes("-1")), HasSubstr("got '-1' (negative)"));
  EXPECT_THAT(ErrorOf(ParseBytes("1.0001KB")), HasSubstr("(not a whole number of bytes)"));
  EXPECT_THAT(ErrorOf(ParseBytes("16777216TiB")), HasSubstr("(too large: at most"));
  EXPECT_THAT(ErrorOf(ParseBytes("1.0000000000000000001B")), HasSubstr("too many decimal places"));
}

TEST(ParseRateTest, EachUnit) {
  EXPECT_EQ(*ParseRate("800bps"), 800u);
  EXPECT_EQ(*ParseRate("64Kbps"), 64'000u);
  EXPECT_EQ(*ParseRate("64kbps"), 64'000u);
  EXPECT_EQ(*ParseRate("500Mbps"), 500'000'000u);
  EXPECT_EQ(*ParseRate("10Gbps"), 10'000'000'000u);
  EXPECT_EQ(*ParseRate("2.5Gbps"), 2'500'000'000u);
  EXPECT_EQ(*ParseRate("1Tbps"), 1'000'000'000'000u);
  EXPECT_EQ(*ParseRate("0"), 0u);
}

TEST(ParseRateTest, Errors) {
  const std::string what =
      "expected a rate like '10Gbps' (units: bps, Kbps, Mbps, Gbps, Tbps), got ";
  EXPECT_EQ(ErrorOf(ParseRate("fast")), what + "'fast'");
  EXPECT_EQ(ErrorOf(ParseRate("10")), what + "'10' (missing unit)");
  EXPECT_EQ(ErrorOf(ParseRate("10GB/s")), what + "'10GB/s'");
  EXPECT_EQ(ErrorOf(ParseRate("10gbps")), what + "'10gbps'");
}

TEST(QuoteForErrorTest, CutsLongText) {
  EXPECT_EQ(QuoteForError("fast"), "'fast'");
  std::string quoted = QuoteForError(std::string(100, 'x'));
  EXPECT_EQ(quoted, "'" + std::string(64, 'x') + "...' (100 chars)");
}

}  // namespace
}  // namespace wharf
