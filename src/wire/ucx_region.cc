// ucx://'s remote-memory bodies: encode and checked decode.
#include "wire/ucx_region.h"

#include <bit>

#include "wire/byte_order.h"

namespace wharf::wire {
namespace {

constexpr size_t kAskBytes = 20;
constexpr size_t kGrantFixedBytes = 36;
constexpr size_t kReleaseBytes = 8;
constexpr size_t kImmediateBytes = 32;

std::byte* At(std::string& s, size_t offset) { return reinterpret_cast<std::byte*>(s.data()) + offset; }
const std::byte* At(std::string_view s, size_t offset) {
  return reinterpret_cast<const std::byte*>(s.data()) + offset;
}

Status Length(std::string_view what, std::string_view bytes, size_t expected) {
  if (bytes.size() == expected) return OkStatus();
  return InvalidArgumentError(std::string(what) + ": expected " + std::to_string(expected) +
                              " bytes, got " + std::to_string(bytes.size()));
}

Status Access(std::string_view what, uint8_t access) {
  if (access != 0 && (access & ~kRegionAllAccess) == 0) return OkStatus();
  return InvalidArgumentError(std::string(what) + ": access bits " + std::to_string(access) +
                              " (expected read 1, write 2, atomic 4, at least one)");
}

}  // namespace

std::string EncodeRegionAsk(const RegionAsk& ask) {
  std::string out(kAskBytes, '\0');
  StoreU64(At(out, 0), ask.size);
  StoreU32(At(out, 8), ask.alignment);
  StoreU8(At(out, 12), ask.access);
  StoreU32(At(out, 16), ask.lifetime_ms);
  return out;
}

Result<RegionAsk> DecodeRegionAsk(std::string_view bytes) {
  WHARF_RETURN_IF_ERROR(Length("region ask", bytes, kAskBytes));
  RegionAsk ask;
  ask.size = LoadU64(At(bytes, 0));
  ask.alignment = LoadU32(At(bytes, 8));
  ask.access = LoadU8(At(bytes, 12));
  ask.lifetime_ms = LoadU32(At(bytes, 16));
  if (LoadU8(At(bytes, 13)) != 0 || LoadU16(At(bytes, 14)) != 0) {
    return InvalidArgumentError("region ask: reserved bytes not zero");
  }
  if (ask.size == 0) return InvalidArgumentError("region ask: size 0");
  if (ask.alignment == 0 || !std::has_single_bit(ask.alignment)) {
    return InvalidArgumentError("region ask: alignment " + std::to_string(ask.alignment) +
                                " is not a power of two");
  }
  WHARF_RETURN_IF_ERROR(Access("region ask", ask.access));
  return ask;
}

std::string EncodeRegionGrant(const RegionGrant& grant) {
  std::string out(kGrantFixedBytes, '\0');
  StoreU64(At(out, 0), grant.region);
  StoreU64(At(out, 8), grant.address);
  StoreU64(At(out, 16), grant.size);
  StoreU8(At(out, 24), grant.access);
  StoreU32(At(out, 28), grant.lifetime_ms);
  StoreU32(At(out, 32), static_cast<uint32_t>(grant.key.size()));
  return out + grant.key;
}

Result<RegionGrant> DecodeRegionGrant(std::string_view bytes) {
  if (bytes.size() < kGrantFixedBytes) {
    return InvalidArgumentError("region grant: " + std::to_string(bytes.size()) +
                                " bytes, shorter than its fixed part");
  }
  RegionGrant g;
  g.region = LoadU64(At(bytes, 0));
  g.address = LoadU64(At(bytes, 8));
  g.size = LoadU64(At(bytes, 16));
  g.access = LoadU8(At(bytes, 24));
  g.lifetime_ms = LoadU32(At(bytes, 28));
  const uint32_t key_length = LoadU32(At(bytes, 32));
  if (LoadU8(At(bytes, 25)) != 0 || LoadU16(At(bytes, 26)) != 0) {
    return InvalidArgumentError("region grant: reserved bytes not zero");
  }
  if (key_length == 0 || key_length > kMaxRegionKeyBytes) {
    return InvalidArgumentError("region grant: key of " + std::to_string(key_length) +
                                " bytes (expected 1 to " + std::to_string(kMaxRegionKeyBytes) + ")");
  }
  WHARF_RETURN_IF_ERROR(Length("region grant", bytes, kGrantFixedBytes + key_length));
  if (g.region == 0 || g.size == 0) return InvalidArgumentError("region grant: region or size 0");
  if (g.address + g.size < g.address) return InvalidArgumentError("region grant: wraps around");
  WHARF_RETURN_IF_ERROR(Access("region grant", g.access));
  g.key = std::string(bytes.substr(kGrantFixedBytes));
  return g;
}

std::string EncodeRegionRelease(uint64_t region) {
  std::string out(kReleaseBytes, '\0');
  StoreU64(At(out, 0), region);
  return out;
}

Result<uint64_t> DecodeRegionRelease(std::string_view bytes) {
  WHARF_RETURN_IF_ERROR(Length("region release", bytes, kReleaseBytes));
  const uint64_t region = LoadU64(At(bytes, 0));
  if (region == 0) return InvalidArgumentError("region release: region 0");
  return region;
}

std::string EncodeRegionImmediate(const RegionImmediate& immediate) {
  std::string out(kImmediateBytes, '\0');
  StoreU64(At(out, 0), immediate.region);
  StoreU64(At(out, 8), immediate.offset);
  StoreU64(At(out, 16), immediate.length);
  StoreU64(At(out, 24), immediate.value);
  return out;
}

Result<RegionImmediate> DecodeRegionImmediate(std::string_view bytes) {
  WHARF_RETURN_IF_ERROR(Length("immediate", bytes, kImmediateBytes));
  RegionImmediate i{LoadU64(At(bytes, 0)), LoadU64(At(bytes, 8)), LoadU64(At(bytes, 16)),
                    LoadU64(At(bytes, 24))};
  if (i.region == 0) return InvalidArgumentError("immediate: region 0");
  return i;
}

}  // namespace wharf::wire
