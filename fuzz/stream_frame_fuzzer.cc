// fuzz/stream_frame_fuzzer.cc: libFuzzer target for the TCP stream frame
// codec (wire/stream_frame.h).
//
// Feeds arbitrary bytes to DecodeStreamHeader (under a small and the largest
// chunk limit) and DecodeStreamHello; neither may crash or read out of
// bounds. A header that decodes must re-encode to exactly the input bytes
// (the format has no don't-care bits: reserved and unused fields must be
// zero) and decode again to the same fields; likewise a HELLO body. A header
// accepted under the small limit must be accepted under the large one. Any
// violation aborts: it is a codec bug.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>

#include "fuzz_fail.h"
#include "wire/stream_frame.h"

namespace wharf::wire {
namespace {

using wharf::fuzz::Fail;

void Require(bool ok, const char* what) {
  if (!ok) Fail(what);
}

void CheckHeader(std::span<const std::byte> in) {
  constexpr uint32_t kSmallLimit = 64 << 10;
  Result<StreamFrameHeader> small = DecodeStreamHeader(in, kSmallLimit);
  Result<StreamFrameHeader> large = DecodeStreamHeader(in, kStreamMaxChunkLimit);
  if (small.ok()) Require(large.ok() && *small == *large, "a larger chunk limit rejected a header");
  if (!large.ok()) {
    Require(large.status().code() == StatusCode::kInvalidArgument, "decode error is not InvalidArgument");
    Require(!large.status().message().empty(), "decode error without a message");
    return;
  }
  (void)DescribeStreamHeader(*large);
  std::array<std::byte, kStreamHeaderBytes> out{};
  Require(EncodeStreamHeader(*large, out).ok(), "Encode rejected a decoded header");
  Require(std::memcmp(out.data(), in.data(), kStreamHeaderBytes) == 0,
          "re-encoded header differs from the input");
  Result<StreamFrameHeader> again = DecodeStreamHeader(out, kStreamMaxChunkLimit);
  Require(again.ok() && *again == *large, "header changed in a round trip");
}

void CheckHello(std::span<const std::byte> in) {
  Result<StreamHello> hello = DecodeStreamHello(in);
  if (!hello.ok()) return;
  Require(in.size() == kStreamHelloBytes, "HELLO body of the wrong size accepted");
  std::array<std::byte, kStreamHelloBytes> out{};
  Require(EncodeStreamHello(*hello, out).ok(), "Encode rejected a decoded HELLO");
  Require(std::memcmp(out.data(), in.data(), kStreamHelloBytes) == 0,
          "re-encoded HELLO differs from the input");
}

}  // namespace
}  // namespace wharf::wire

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data), size);
  wharf::wire::CheckHeader(in);
  if (size >= wharf::wire::kStreamHeaderBytes) {
    wharf::wire::CheckHello(in.subspan(wharf::wire::kStreamHeaderBytes));
  }
  wharf::wire::CheckHello(in);
  return 0;
}
