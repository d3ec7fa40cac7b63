// client/metadata_codec.h: Metadata (wharf/endpoint.h) on the wire, where a
// call carries it in front of its request and a stream in its opening:
//   u16 entries, then per entry u16 key length, key, u32 value length,
//   value; big-endian.
// Decoding refuses what encoding would not make: over kMaxMetadataEntries
// or kMaxMetadataBytes, or cut short.
#pragma once

#include <cstddef>
#include <span>

#include "wharf/endpoint.h"
#include "wharf/result.h"

namespace wharf::internal {

// kInvalidArgument, saying which limit, for metadata over one.
Status CheckMetadata(const Metadata& metadata);
// The encoding's size.
size_t MetadataBytes(const Metadata& metadata);
// Writes the encoding at `out` (MetadataBytes of room); returns its end.
std::byte* EncodeMetadata(const Metadata& metadata, std::byte* out);
// Parses the metadata at the start of `bytes` into `out`; returns the bytes
// it took.
Result<size_t> DecodeMetadata(std::span<const std::byte> bytes, Metadata* out);

}  // namespace wharf::internal
