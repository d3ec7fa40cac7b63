// base/config_value.h: parsers from a setting's text to a typed value, shared
// by the YAML config (base/config.h) and command-line flags, so that "10Gbps"
// means the same thing in wharfd.yaml and in `wharf bench --rate`.
// No YAML here: these see one scalar string at a time.
//
// Every parser returns the value or kInvalidArgument with a message of the
// form "expected <what>, got '<text>'"; callers prepend where the text came
// from ("wharfd.yaml:12: policy.rate: " or "--rate: ").
//
// Units are explicit and case-sensitive, because guessing is how a 1000x
// misconfiguration ships:
//   durations  ns, us (or µs, μs), ms, s               "250ns" "100us" "1.5ms"
//   sizes      B; KB MB GB TB = 10^3..10^12;           "1500" "40KB" "64MiB"
//              KiB MiB GiB TiB = 2^10..2^40; a bare number is bytes
//   rates      bps, Kbps (or kbps), Mbps, Gbps, Tbps   "500Mbps" "10Gbps"
//              = bits per second, powers of 1000
// A number may have a decimal fraction ("1.5GiB") if the result is a whole
// number of the base unit. A bare "0" is accepted for durations and rates.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "wharf/result.h"

namespace wharf {

// Decimal integers with an optional sign, within [min, max].
Result<int64_t> ParseInt(std::string_view text, int64_t min = INT64_MIN, int64_t max = INT64_MAX);
// Decimal non-negative integers up to max; "-1" is an error, never a wrap.
Result<uint64_t> ParseUint(std::string_view text, uint64_t max = UINT64_MAX);
// true/false, yes/no, on/off in any case (the YAML 1.1 spellings people use).
Result<bool> ParseBool(std::string_view text);
// A finite decimal or scientific-notation number.
Result<double> ParseDouble(std::string_view text);
// A non-negative duration in ns, at most INT64_MAX ns (about 292 years).
Result<DurationNs> ParseDuration(std::string_view text);
// A size in bytes.
Result<uint64_t> ParseBytes(std::string_view text);
// A rate in bits per second.
Result<uint64_t> ParseRate(std::string_view text);

// `text` quoted for an error message, cut to a readable length: 'fast'.
std::string QuoteForError(std::string_view text);

}  // namespace wharf
