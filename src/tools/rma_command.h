// `wharf rma read|write|cas|add ADDRESS`: one one-sided operation on the
// region a `wharf serve --lend-bytes N` lends, for trying remote memory by
// hand, embedded or through wharfd (--mode). It asks the server for a loan of its region (RPC method kLendMethod),
// waits for the grant, does the operation, prints what it found, and gives
// the region back.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "tools/common_flags.h"

namespace CLI {
class App;
}

namespace wharf::tools {

struct RmaOptions {
  std::string op;       // read | write | cas | add
  std::string address;  // the server: ucx://HOST:PORT
  std::string bind = "ucx://0.0.0.0:0";
  uint64_t offset = 0;
  uint64_t length = 64;         // read
  std::string data;             // write
  uint64_t pattern_bytes = 0;   // write: this many bytes of PatternByte instead of data
  bool verify = false;          // read: check the bytes are PatternByte's
  bool hex = false;             // read: always a hex dump
  std::optional<uint64_t> immediate;  // write
  uint64_t expected = 0, desired = 0;  // cas
  uint64_t value = 1;                  // add
  double timeout_s = 10;
  EndpointFlags endpoint;
};

void AddRmaFlags(CLI::App& app, RmaOptions& options);
int RunRma(const RmaOptions& options);

// How `wharf rma` shows bytes: text when every byte is printable (or a
// newline or tab), else (or with `hex`) a hex dump of 16 bytes a line with
// offsets from `base` and the printable ones beside.
std::string ShowBytes(std::span<const std::byte> bytes, uint64_t base, bool hex);

// The byte --pattern-bytes writes at `position` of the region (and --verify
// expects): a function of the position alone, so any part can be checked
// alone, and a shifted or mixed-up write shows.
inline std::byte PatternByte(uint64_t position) {
  return static_cast<std::byte>((position * 131 + 7) % 251);
}

}  // namespace wharf::tools
