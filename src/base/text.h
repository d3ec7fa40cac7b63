// base/text.h: checks and cuts for text that comes from outside (an
// application's hello, a heap range, a config value): is it UTF-8 without
// control characters, where may it be cut without splitting a character,
// and how to show it safely when it is not. Pure functions; no locale, no
// allocation beyond the returned string.
//
// Why here: nlohmann-json throws on invalid UTF-8 and a terminal obeys the
// escape sequences a name may carry, so a daemon that passes an
// application's bytes to either can be stopped or spoofed by them. Text is
// checked or made printable where it enters (docs/security.md).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "wharf/status.h"

namespace wharf {

// Whether `text` is well-formed UTF-8 (no overlong forms, no surrogates, no
// code point above U+10FFFF).
bool IsValidUtf8(std::string_view text);

// The longest prefix of `text` of at most `max_bytes` bytes that does not
// end inside a UTF-8 sequence. Bytes that are not UTF-8 count as one
// character each, so invalid input is cut too, just never mid-sequence.
std::string_view Utf8Prefix(std::string_view text, size_t max_bytes);

// `text` made safe to log, print and put in JSON: well-formed characters
// other than controls are kept; every byte that is not part of well-formed
// UTF-8, every C0 control and DEL becomes "\xNN", and a C1 control
// (U+0080-U+009F, which some terminals obey as escapes) becomes "\u00NN".
// The result has at most `max_bytes` bytes and is cut between characters or
// escapes, never inside one.
std::string PrintableText(std::string_view text, size_t max_bytes = std::string::npos);

// OkStatus if `text` is well-formed UTF-8 of at most `max_bytes` bytes
// without control characters (C0, DEL, C1); otherwise kInvalidArgument
// naming `what` and the first offending byte's offset.
Status CheckText(std::string_view text, std::string_view what, size_t max_bytes);

}  // namespace wharf
