// Text-to-value parsers for settings. Numbers go through std::from_chars or
// exact integer arithmetic: no locale, no strtod rounding surprises, and a
// value that does not fit is an error rather than a wrap or a clamp.
#include "base/config_value.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>
#include <span>

namespace wharf {
namespace {

constexpr size_t kMaxQuotedChars = 64;

Status Expected(std::string_view what, std::string_view text, std::string_view reason = "") {
  return InvalidArgumentError(
      fmt::format("expected {}, got {}{}", what, QuoteForError(text), reason));
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// from_chars does not take a leading '+', which people write ("+5") and YAML
// allows; strip it only when a digit follows so "+-5" stays invalid.
std::string_view StripPlus(std::string_view text) {
  if (text.size() >= 2 && text[0] == '+' && IsDigit(text[1])) text.remove_prefix(1);
  return text;
}

// A unit suffix and what one of it is worth in the base unit.
struct Unit {
  std::string_view suffix;
  uint64_t multiplier;
};

constexpr uint64_t kKilo = 1000;
// Microseconds also as U+00B5 (micro sign) and U+03BC (Greek mu), which
// look the same and which people paste from documents.
constexpr std::array<Unit, 6> kDurationUnits = {{{"ns", 1},
                                                 {"us", kKilo},
                                                 {"\u00b5s", kKilo},
                                                 {"\u03bcs", kKilo},
                                                 {"ms", kKilo* kKilo},
                                                 {"s", kKilo* kKilo* kKilo}}};
constexpr std::array<Unit, 9> kByteUnits = {{{"B", 1},
                                             {"KB", kKilo},
                                             {"MB", kKilo* kKilo},
                                             {"GB", kKilo* kKilo* kKilo},
                                             {"TB", kKilo* kKilo* kKilo* kKilo},
                                             {"KiB", uint64_t{1} << 10},
                                             {"MiB", uint64_t{1} << 20},
                                             {"GiB", uint64_t{1} << 30},
                                             {"TiB", uint64_t{1} << 40}}};
constexpr std::array<Unit, 6> kRateUnits = {{{"bps", 1},
                                             {"Kbps", kKilo},
                                             {"kbps", kKilo},
                                             {"Mbps", kKilo* kKilo},
                                             {"Gbps", kKilo* kKilo* kKilo},
                                             {"Tbps", kKilo* kKilo* kKilo* kKilo}}};

// How to read one kind of quantity.
struct QuantitySpec {
  std::string_view what;  // for messages: "a duration like '5ms' (...)"
  std::span<const Unit> units;
  std::optional<uint64_t> bare;  // multiplier for a number without a unit, if allowed
  uint64_t max;                  // largest value in the base unit
  std::string_view base_unit;    // "ns", "bytes", "bps"
};

// Parses "<digits>[.<digits>][ ]<unit>" exactly: the integer and fraction are
// scaled in 128-bit arithmetic (at most 2^64 * 2^40), so "1.5GiB" is exact
// and anything that does not fit `max` is reported, never rounded.
Result<uint64_t> ParseQuantity(std::string_view text, const QuantitySpec& spec) {
  if (!text.empty() && text[0] == '-') return Expected(spec.what, text, " (negative)");
  std::string_view rest = StripPlus(text);
  size_t int_end = 0;
  while (int_end < rest.size() && IsDigit(rest[int_end])) ++int_end;
  std::string_view int_digits = rest.substr(0, int_end);
  std::string_view frac_digits;
  size_t number_end = int_end;
  if (number_end < rest.size() && rest[number_end] == '.') {
    size_t frac_end = number_end + 1;
    while (frac_end < rest.size() && IsDigit(rest[frac_end])) ++frac_end;
    frac_digits = rest.substr(number_end + 1, frac_end - number_end - 1);
    if (frac_digits.empty()) return Expected(spec.what, text);
    number_end = frac_end;
  }
  if (int_digits.empty()) return Expected(spec.what, text);
  std::string_view unit_text = rest.substr(number_end);
  while (!unit_text.empty() && unit_text.front() == ' ') unit_text.remove_prefix(1);

  std::optional<uint64_t> multiplier;
  if (unit_text.empty()) {
    multiplier = spec.bare;
  } else {
    for (const Unit& unit : spec.units) {
      if (unit.suffix == unit_text) multiplier = unit.multiplier;
    }
    if (!multiplier) return Expected(spec.what, text);
  }

  using U128 = unsigned __int128;
  constexpr U128 kTooBig = U128{1} << 64;
  U128 int_part = 0;
  for (char c : int_digits) {
    int_part = int_part * 10 + static_cast<unsigned>(c - '0');
    if (int_part >= kTooBig)
      return Expected(spec.what, text,
                      fmt::format(" (too large: at most {} {})", spec.max, spec.base_unit));
  }
  // 18 fraction digits keep 10^digits and frac * multiplier within 128 bits.
  if (frac_digits.size() > 18) return Expected(spec.what, text, " (too many decimal places)");
  U128 frac_part = 0;
  U128 frac_scale = 1;
  for (char c : frac_digits) {
    frac_part = frac_part * 10 + static_cast<unsigned>(c - '0');
    frac_scale *= 10;
  }
  if (!multiplier) {
    // Only zero needs no unit: it is zero in every unit.
    if (int_part == 0 && frac_part == 0) return uint64_t{0};
    return Expected(spec.what, text, " (missing unit)");
  }
  const U128 frac_scaled = frac_part * *multiplier;
  if (frac_scaled % frac_scale != 0) {
    return Expected(spec.what, text, fmt::format(" (not a whole number of {})", spec.base_unit));
  }
  const U128 value = int_part * *multiplier + frac_scaled / frac_scale;
  if (value > spec.max) {
    return Expected(spec.what, text,
                    fmt::format(" (too large: at most {} {})", spec.max, spec.base_unit));
  }
  return static_cast<uint64_t>(value);
}

}  // namespace

std::string QuoteForError(std::string_view text) {
  if (text.size() <= kMaxQuotedChars) return fmt::format("'{}'", text);
  return fmt::format("'{}...' ({} chars)", text.substr(0, kMaxQuotedChars), text.size());
}

Result<int64_t> ParseInt(std::string_view text, int64_t min, int64_t max) {
  const bool full_range = min == INT64_MIN && max == INT64_MAX;
  const std::string what =
      full_range ? "an integer" : fmt::format("an integer in [{}, {}]", min, max);
  std::string_view digits = StripPlus(text);
  int64_t value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec == std::errc::result_out_of_range) return Expected(what, text, " (out of 64-bit range)");
  if (ec != std::errc() || end != digits.data() + digits.size()) return Expected(what, text);
  if (value < min || value > max) return Expected(what, text);
  return value;
}

Result<uint64_t> ParseUint(std::string_view text, uint64_t max) {
  const std::string what =
      max == UINT64_MAX ? "a non-negative integer" : fmt::format("an integer in [0, {}]", max);
  // from_chars for unsigned rejects '-', so "-1" cannot wrap to 2^64 - 1.
  std::string_view digits = StripPlus(text);
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec == std::errc::result_out_of_range) return Expected(what, text, " (out of 64-bit range)");
  if (ec != std::errc() || end != digits.data() + digits.size()) return Expected(what, text);
  if (value > max) return Expected(what, text);
  return value;
}

Result<bool> ParseBool(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "true" || lower == "yes" || lower == "on") return true;
  if (lower == "false" || lower == "no" || lower == "off") return false;
  return Expected("true or false", text);
}

Result<double> ParseDouble(std::string_view text) {
  std::string_view digits = StripPlus(text);
  double value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size() || !std::isfinite(value)) {
    return Expected("a number", text);
  }
  return value;
}

Result<DurationNs> ParseDuration(std::string_view text) {
  static constexpr QuantitySpec kSpec = {"a duration like '5ms' (units: ns, us, ms, s)",
                                         kDurationUnits, std::nullopt, INT64_MAX, "ns"};
  WHARF_ASSIGN_OR_RETURN(uint64_t ns, ParseQuantity(text, kSpec));
  return static_cast<DurationNs>(ns);
}

Result<uint64_t> ParseBytes(std::string_view text) {
  static constexpr QuantitySpec kSpec = {
      "a size like '64MiB' or '1500' (units: B, KB, MB, GB, TB = 1000^n; KiB, MiB, GiB, TiB = "
      "1024^n)",
      kByteUnits, uint64_t{1}, UINT64_MAX, "bytes"};
  return ParseQuantity(text, kSpec);
}

Result<uint64_t> ParseRate(std::string_view text) {
  static constexpr QuantitySpec kSpec = {
      "a rate like '10Gbps' (units: bps, Kbps, Mbps, Gbps, Tbps)", kRateUnits, std::nullopt,
      UINT64_MAX, "bps"};
  return ParseQuantity(text, kSpec);
}

}  // namespace wharf
