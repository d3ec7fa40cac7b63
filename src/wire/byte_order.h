// wire/byte_order.h: big-endian loads and stores of fixed-width integers at
// arbitrary byte offsets. Internal to the wire module (not part of its
// interface); packet.cc builds every field access on these.
//
// Each helper moves the bytes with std::memcpy into or out of a local
// integer, so it never dereferences a misaligned pointer and never violates
// strict aliasing, then swaps to or from network order on little-endian
// hosts. GCC and clang turn each into one (unaligned) load or store plus a
// bswap. Callers must have checked that `p` has room for the width: these do
// no bounds checks, which is why they take a raw pointer and not a span.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace wharf::wire {

// Network (big-endian) order <-> host order; the same swap both ways.
inline uint16_t NetworkOrder(uint16_t v) {
  if constexpr (std::endian::native == std::endian::little) return __builtin_bswap16(v);
  return v;
}
inline uint32_t NetworkOrder(uint32_t v) {
  if constexpr (std::endian::native == std::endian::little) return __builtin_bswap32(v);
  return v;
}
inline uint64_t NetworkOrder(uint64_t v) {
  if constexpr (std::endian::native == std::endian::little) return __builtin_bswap64(v);
  return v;
}

template <typename T>
inline T LoadBig(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(v));
  return NetworkOrder(v);
}

template <typename T>
inline void StoreBig(std::byte* p, T v) {
  v = NetworkOrder(v);
  std::memcpy(p, &v, sizeof(v));
}

inline uint8_t LoadU8(const std::byte* p) { return static_cast<uint8_t>(*p); }
inline uint16_t LoadU16(const std::byte* p) { return LoadBig<uint16_t>(p); }
inline uint32_t LoadU32(const std::byte* p) { return LoadBig<uint32_t>(p); }
inline uint64_t LoadU64(const std::byte* p) { return LoadBig<uint64_t>(p); }

inline void StoreU8(std::byte* p, uint8_t v) { *p = static_cast<std::byte>(v); }
inline void StoreU16(std::byte* p, uint16_t v) { StoreBig(p, v); }
inline void StoreU32(std::byte* p, uint32_t v) { StoreBig(p, v); }
inline void StoreU64(std::byte* p, uint64_t v) { StoreBig(p, v); }

}  // namespace wharf::wire
