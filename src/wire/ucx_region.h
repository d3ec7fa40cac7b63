// wire/ucx_region.h: the bodies of ucx://'s remote-memory messages
// (wire/ucx_header.h kinds REGION_ASK, REGION_GRANT, REGION_RELEASE and
// IMMEDIATE), and their encode/decode. Pure functions over bytes, big-endian
// like the header; reserved bytes must be zero. docs/transports.md ("Remote
// memory") says what each message does.
//
//   REGION_ASK      size u64 | alignment u32 | access u8 | reserved u8[3] |
//                   lifetime_ms u32                                (20 bytes)
//   REGION_GRANT    region u64 | address u64 | size u64 | access u8 |
//                   reserved u8[3] | lifetime_ms u32 | key_length u32 |
//                   key (key_length bytes, at most kMaxRegionKeyBytes)
//   REGION_RELEASE  region u64                                      (8 bytes)
//   IMMEDIATE       region u64 | offset u64 | length u64 | value u64 (32 bytes)
//
// The header's rpc_id pairs an ASK with its GRANT (or REFUSED); RELEASE and
// IMMEDIATE carry the region's id there too.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "wharf/result.h"

namespace wharf::wire {

// What a region's holder may do: bits.
inline constexpr uint8_t kRegionRead = 1;
inline constexpr uint8_t kRegionWrite = 2;
inline constexpr uint8_t kRegionAtomic = 4;
inline constexpr uint8_t kRegionAllAccess = kRegionRead | kRegionWrite | kRegionAtomic;
inline constexpr size_t kMaxRegionKeyBytes = 4096;

struct RegionAsk {
  uint64_t size = 0;
  uint32_t alignment = 8;
  uint8_t access = kRegionAllAccess;
  uint32_t lifetime_ms = 60'000;
  friend bool operator==(const RegionAsk&, const RegionAsk&) = default;
};

struct RegionGrant {
  uint64_t region = 0;
  uint64_t address = 0;
  uint64_t size = 0;
  uint8_t access = 0;
  uint32_t lifetime_ms = 0;
  std::string key;
  friend bool operator==(const RegionGrant&, const RegionGrant&) = default;
};

struct RegionImmediate {
  uint64_t region = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
  uint64_t value = 0;
  friend bool operator==(const RegionImmediate&, const RegionImmediate&) = default;
};

std::string EncodeRegionAsk(const RegionAsk& ask);
std::string EncodeRegionGrant(const RegionGrant& grant);
std::string EncodeRegionRelease(uint64_t region);
std::string EncodeRegionImmediate(const RegionImmediate& immediate);

// InvalidArgument naming what is wrong: the length, reserved bytes, access
// bits beyond kRegionAllAccess or none, a zero size or region, an alignment
// that is not a power of two, a key over kMaxRegionKeyBytes.
Result<RegionAsk> DecodeRegionAsk(std::string_view bytes);
Result<RegionGrant> DecodeRegionGrant(std::string_view bytes);
Result<uint64_t> DecodeRegionRelease(std::string_view bytes);
Result<RegionImmediate> DecodeRegionImmediate(std::string_view bytes);

}  // namespace wharf::wire
