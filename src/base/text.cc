// UTF-8 checks, cuts and the printable form (text.h).
#include "base/text.h"

#include <algorithm>
#include <cstdint>

namespace wharf {
namespace {

// One character at `text[pos]`: its length in bytes and code point, or a
// length of 0 when the bytes there are not a well-formed sequence (RFC 3629:
// shortest form only, no surrogates, nothing above U+10FFFF).
struct Char {
  size_t bytes;
  char32_t code;
};

Char DecodeAt(std::string_view text, size_t pos) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[pos + i]); };
  const uint8_t lead = byte(0);
  if (lead < 0x80) return {1, lead};
  size_t length;
  char32_t code;
  char32_t min;
  if ((lead & 0xE0) == 0xC0) {
    length = 2, code = lead & 0x1F, min = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, code = lead & 0x0F, min = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, code = lead & 0x07, min = 0x10000;
  } else {
    return {0, 0};  // a continuation byte or 0xF8..0xFF as a lead
  }
  if (pos + length > text.size()) return {0, 0};
  for (size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xC0) != 0x80) return {0, 0};
    code = (code << 6) | (byte(i) & 0x3F);
  }
  if (code < min || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return {0, 0};
  return {length, code};
}

bool IsControl(char32_t code) { return code < 0x20 || (code >= 0x7F && code <= 0x9F); }

constexpr char kHex[] = "0123456789abcdef";

}  // namespace

bool IsValidUtf8(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    const Char c = DecodeAt(text, pos);
    if (c.bytes == 0) return false;
    pos += c.bytes;
  }
  return true;
}

std::string_view Utf8Prefix(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  size_t end = 0;
  while (end < text.size()) {
    const Char c = DecodeAt(text, end);
    const size_t step = c.bytes == 0 ? 1 : c.bytes;
    if (end + step > max_bytes) break;
    end += step;
  }
  return text.substr(0, end);
}

std::string PrintableText(std::string_view text, size_t max_bytes) {
  std::string out;
  out.reserve(std::min(text.size(), max_bytes));
  for (size_t pos = 0; pos < text.size();) {
    const Char c = DecodeAt(text, pos);
    char piece[8];
    size_t piece_bytes;
    if (c.bytes == 0 || (c.bytes == 1 && IsControl(c.code))) {
      const auto b = static_cast<uint8_t>(text[pos]);
      piece[0] = '\\', piece[1] = 'x', piece[2] = kHex[b >> 4], piece[3] = kHex[b & 0xF];
      piece_bytes = 4;
      pos += 1;
    } else if (IsControl(c.code)) {
      piece[0] = '\\', piece[1] = 'u', piece[2] = '0', piece[3] = '0';
      piece[4] = kHex[c.code >> 4], piece[5] = kHex[c.code & 0xF];
      piece_bytes = 6;
      pos += c.bytes;
    } else {
      for (size_t i = 0; i < c.bytes; ++i) piece[i] = text[pos + i];
      piece_bytes = c.bytes;
      pos += c.bytes;
    }
    if (out.size() + piece_bytes > max_bytes) break;
    out.append(piece, piece_bytes);
  }
  return out;
}

Status CheckText(std::string_view text, std::string_view what, size_t max_bytes) {
  if (text.size() > max_bytes) {
    return InvalidArgumentError(std::string(what) + " is " + std::to_string(text.size()) +
                                " bytes, over the limit of " + std::to_string(max_bytes));
  }
  for (size_t pos = 0; pos < text.size();) {
    const Char c = DecodeAt(text, pos);
    if (c.bytes == 0) {
      return InvalidArgumentError(std::string(what) + " is not UTF-8 (byte " +
                                  std::to_string(pos) + ": \"" +
                                  PrintableText(text.substr(pos, 4)) + "\")");
    }
    if (IsControl(c.code)) {
      return InvalidArgumentError(std::string(what) + " holds a control character (byte " +
                                  std::to_string(pos) + ")");
    }
    pos += c.bytes;
  }
  return OkStatus();
}

}  // namespace wharf
