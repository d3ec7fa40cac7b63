#include "wire/byte_order.h"

#include <array>
#include <cstddef>
#include <cstdint>

#include <gtest/gtest.h>

namespace wharf::wire {
namespace {

template <size_t N>
std::array<std::byte, N> Bytes(const uint8_t (&values)[N]) {
  std::array<std::byte, N> out;
  for (size_t i = 0; i < N; ++i) out[i] = std::byte{values[i]};
  return out;
}

TEST(ByteOrderTest, LoadsAreBigEndian) {
  const auto b = Bytes({0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08});
  EXPECT_EQ(LoadU8(b.data()), 0x01u);
  EXPECT_EQ(LoadU16(b.data()), 0x0102u);
  EXPECT_EQ(LoadU32(b.data()), 0x01020304u);
  EXPECT_EQ(LoadU64(b.data()), 0x0102030405060708ull);
}

TEST(ByteOrderTest, StoresAreBigEndian) {
  std::array<std::byte, 8> b{};
  StoreU16(b.data(), 0xA1B2);
  EXPECT_EQ(b[0], std::byte{0xA1});
  EXPECT_EQ(b[1], std::byte{0xB2});
  StoreU32(b.data(), 0xA1B2C3D4);
  EXPECT_EQ(b, Bytes({0xA1, 0xB2, 0xC3, 0xD4, 0x00, 0x00, 0x00, 0x00}));
  StoreU64(b.data(), 0x1122334455667788ull);
  EXPECT_EQ(b, Bytes({0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88}));
}

// Packet fields sit at odd offsets inside receive buffers; every width must
// work at every alignment (UBSan would flag a misaligned pointer access).
TEST(ByteOrderTest, RoundTripsExtremesAtEveryAlignment) {
  std::array<std::byte, 16> buf{};
  for (size_t at = 0; at < 8; ++at) {
    std::byte* p = buf.data() + at;
    for (uint64_t v : {uint64_t{0}, uint64_t{1}, UINT64_MAX, uint64_t{0x8000000000000000}}) {
      StoreU64(p, v);
      EXPECT_EQ(LoadU64(p), v) << "at " << at;
      StoreU32(p, static_cast<uint32_t>(v));
      EXPECT_EQ(LoadU32(p), static_cast<uint32_t>(v)) << "at " << at;
      StoreU16(p, static_cast<uint16_t>(v));
      EXPECT_EQ(LoadU16(p), static_cast<uint16_t>(v)) << "at " << at;
      StoreU8(p, static_cast<uint8_t>(v));
      EXPECT_EQ(LoadU8(p), static_cast<uint8_t>(v)) << "at " << at;
    }
  }
}

TEST(ByteOrderTest, StoresTouchOnlyTheirWidth) {
  std::array<std::byte, 12> buf;
  buf.fill(std::byte{0xEE});
  StoreU32(buf.data() + 4, 0);
  EXPECT_EQ(buf, Bytes({0xEE, 0xEE, 0xEE, 0xEE, 0, 0, 0, 0, 0xEE, 0xEE, 0xEE, 0xEE}));
}

}  // namespace
}  // namespace wharf::wire
