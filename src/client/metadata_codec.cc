// Metadata on the wire: encoding, and decoding within the limits.
#include "client/metadata_codec.h"

#include <cstring>
#include <string>

#include "wire/byte_order.h"

namespace wharf::internal {

Status CheckMetadata(const Metadata& metadata) {
  size_t bytes = 0;
  for (const auto& [key, value] : metadata) bytes += key.size() + value.size();
  if (metadata.size() > kMaxMetadataEntries || bytes > kMaxMetadataBytes) {
    return InvalidArgumentError("metadata of " + std::to_string(metadata.size()) +
                                " entries and " + std::to_string(bytes) +
                                " bytes is over the limit (" +
                                std::to_string(kMaxMetadataEntries) + " entries, " +
                                std::to_string(kMaxMetadataBytes) + " bytes)");
  }
  return OkStatus();
}

size_t MetadataBytes(const Metadata& metadata) {
  size_t bytes = 2;
  for (const auto& [key, value] : metadata) bytes += 2 + key.size() + 4 + value.size();
  return bytes;
}

std::byte* EncodeMetadata(const Metadata& metadata, std::byte* out) {
  wire::StoreU16(out, static_cast<uint16_t>(metadata.size()));
  out += 2;
  for (const auto& [key, value] : metadata) {
    wire::StoreU16(out, static_cast<uint16_t>(key.size()));
    std::memcpy(out + 2, key.data(), key.size());
    out += 2 + key.size();
    wire::StoreU32(out, static_cast<uint32_t>(value.size()));
    std::memcpy(out + 4, value.data(), value.size());
    out += 4 + value.size();
  }
  return out;
}

Result<size_t> DecodeMetadata(std::span<const std::byte> bytes, Metadata* out) {
  out->clear();
  if (bytes.size() < 2) return InvalidArgumentError("metadata cut short");
  const size_t entries = wire::LoadU16(bytes.data());
  if (entries > kMaxMetadataEntries) {
    return InvalidArgumentError("metadata of " + std::to_string(entries) +
                                " entries (at most " + std::to_string(kMaxMetadataEntries) + ")");
  }
  size_t at = 2;
  size_t total = 0;
  for (size_t i = 0; i < entries; ++i) {
    if (bytes.size() - at < 2) return InvalidArgumentError("metadata cut short");
    const size_t key_size = wire::LoadU16(bytes.data() + at);
    if (bytes.size() - at - 2 < key_size + 4) return InvalidArgumentError("metadata cut short");
    const char* key = reinterpret_cast<const char*>(bytes.data() + at + 2);
    const size_t value_size = wire::LoadU32(bytes.data() + at + 2 + key_size);
    at += 6 + key_size;
    total += key_size + value_size;
    if (total > kMaxMetadataBytes) {
      return InvalidArgumentError("metadata over " + std::to_string(kMaxMetadataBytes) + " bytes");
    }
    if (bytes.size() - at < value_size) return InvalidArgumentError("metadata cut short");
    out->emplace_back(std::string(key, key_size),
                      std::string(reinterpret_cast<const char*>(bytes.data() + at), value_size));
    at += value_size;
  }
  return at;
}

}  // namespace wharf::internal
