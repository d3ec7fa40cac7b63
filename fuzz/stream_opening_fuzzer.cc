// fuzz/stream_opening_fuzzer.cc: arbitrary bytes as the first message of a
// typed stream (wharf/raw_stream.h, kOpen: deadline and metadata), parsed
// the way a server's RawStream parses what a client sent.
//
// What must hold, besides no crash or sanitizer report:
//   - the parse succeeds, or fails with kInvalidArgument;
//   - what parsed is within the limits (kMaxMetadataEntries entries,
//     kMaxMetadataBytes of keys and values);
//   - what parsed encodes (EncodeOpening) to exactly the input bytes.
// Seeds (fuzz/seeds/stream_opening_fuzzer/): an opening without a deadline
// or metadata, one with a deadline and two entries, one cut short.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "fuzz_fail.h"
#include "wharf/raw_stream.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace wharf;
  using wharf::fuzz::Fail;
  // The input in place (no copy): the sanitizers see any read outside it.
  std::span<std::byte> whole(reinterpret_cast<std::byte*>(const_cast<uint8_t*>(data)), size);
  const Buffer bytes = Buffer::Wrap(whole, nullptr);
  uint64_t deadline_ns = 0;
  rpc::Metadata metadata;
  const Status parsed = rpc::RawStream::ParseOpening(bytes, &deadline_ns, &metadata);
  if (!parsed.ok()) {
    if (parsed.code() != StatusCode::kInvalidArgument) Fail("a refused opening is not kInvalidArgument");
    return 0;
  }
  if (metadata.size() > rpc::kMaxMetadataEntries) Fail("an opening past the entry limit parsed");
  size_t total = 0;
  for (const auto& [key, value] : metadata) total += key.size() + value.size();
  if (total > rpc::kMaxMetadataBytes) Fail("an opening past the byte limit parsed");
  const Buffer again = rpc::RawStream::EncodeOpening(deadline_ns, metadata);
  if (again.size() != size || (size > 0 && std::memcmp(again.data(), data, size) != 0)) {
    Fail("a parsed opening does not encode to its bytes");
  }
  return 0;
}
