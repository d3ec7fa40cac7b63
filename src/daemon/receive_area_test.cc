// daemon/receive_area_test.cc: the receive area alone, over a real region:
// placing (and its quarter cap), handing over and copying in, and the
// application's releases.
#include "daemon/receive_area.h"

#include <gtest/gtest.h>

#include <string>

#include "daemon/testing/region_parts.h"

namespace wharf::daemon {
namespace {

using testing::RegionParts;

constexpr uint64_t kHeap = 65536;  // a receive area of 32 KiB at offset 32 KiB

TEST(ReceiveArea, Take__RegionsAreAlignedCappedAtHalfAndNeverReleasedByTheApplication) {
  RegionParts parts(kHeap);
  ReceiveArea& area = *parts.area;
  std::span<std::byte> a = area.Take(4096, 4096);
  ASSERT_EQ(a.size(), 4096u);
  const uint64_t at = area.HeapOffsetOf(a);
  EXPECT_EQ(at % 4096, 0u);
  EXPECT_GE(at, kHeap / 2);
  EXPECT_TRUE(area.HoldsRegion(a));
  // At most half the area (16 KiB) in regions, whatever the room.
  EXPECT_TRUE(area.Take(16384, 64).empty());
  std::span<std::byte> b = area.Take(8192, 64);
  ASSERT_EQ(b.size(), 8192u);
  EXPECT_TRUE(area.Take(1, 0).empty());  // not a power of two
  // The application cannot free a region's memory as if it were a buffer
  // it was given, by its start or as one of the extra offsets.
  const uint64_t b_at = area.HeapOffsetOf(b);
  EXPECT_EQ(area.Release(b_at, 8192, {}).code(), StatusCode::kInvalidArgument);
  const uint64_t more[3] = {b_at, 0, 0};
  EXPECT_EQ(area.Release(kHeap / 2 + 1, 1, more).code(), StatusCode::kInvalidArgument);
  area.Give(a);
  area.Give(b);
  EXPECT_FALSE(area.HoldsRegion(a));
  EXPECT_EQ(area.region_bytes(), 0u);
  EXPECT_EQ(area.bytes_in_use(), 0u);
}

TEST(ReceiveArea, AllocateReceive__NothingUnlessPlacing) {
  RegionParts parts(kHeap);
  ReceiveArea& area = *parts.area;
  EXPECT_TRUE(area.AllocateReceive(100).empty());
  area.StartPlacing();
  Buffer placed = area.AllocateReceive(100);
  ASSERT_EQ(placed.size(), 100u);
  EXPECT_GE(parts.OffsetOf(placed), kHeap / 2);
  EXPECT_EQ(area.placed_bytes(), 100u);
  area.StopPlacing();
  EXPECT_TRUE(area.AllocateReceive(100).empty());
  EXPECT_EQ(area.placed_bytes(), 100u);
}

TEST(ReceiveArea, AllocateReceive__PlacedBytesStopAtAQuarterOfTheArea) {
  RegionParts parts(kHeap);
  ReceiveArea& area = *parts.area;
  area.StartPlacing();
  Buffer a = area.AllocateReceive(8000);
  ASSERT_FALSE(a.empty());
  EXPECT_TRUE(area.AllocateReceive(200).empty());  // 8200 > 32768 / 4
  Buffer b = area.AllocateReceive(192);
  ASSERT_FALSE(b.empty());
  EXPECT_EQ(area.placed_bytes(), 8192u);
  // A placed Buffer dropped before it is handed over gives its range back.
  a = Buffer();
  EXPECT_EQ(area.placed_bytes(), 192u);
  EXPECT_EQ(area.bytes_in_use(), 192u);
  b = Buffer();
  EXPECT_EQ(area.bytes_in_use(), 0u);
}

TEST(ReceiveArea, Deliver__PlacedPayloadIsHandedOverWhereItLies) {
  RegionParts parts(kHeap);
  ReceiveArea& area = *parts.area;
  area.StartPlacing();
  Buffer message = area.AllocateReceive(132);
  const uint64_t block = parts.OffsetOf(message);
  std::memcpy(message.data() + 32, "payload", 7);
  message.RemovePrefix(32);  // the engine's frame header
  shm::Descriptor entry{};
  ASSERT_TRUE(area.Deliver(entry, message));
  EXPECT_TRUE(message.empty());
  EXPECT_EQ(entry.heap_offset, block + 32);
  EXPECT_EQ(entry.length, 100u);
  EXPECT_EQ(parts.Text(entry).substr(0, 7), "payload");
  EXPECT_EQ(area.received_in_place(), 1u);
  EXPECT_EQ(area.bytes_received(), 100u);
  EXPECT_EQ(area.placed_bytes(), 0u);
  // The range stays the application's until it releases it by the
  // payload's offset.
  EXPECT_EQ(area.bytes_in_use(), 192u);
  EXPECT_TRUE(area.Release(entry.heap_offset, 100, {}).ok());
  EXPECT_EQ(area.bytes_in_use(), 0u);
}

TEST(ReceiveArea, Deliver__OtherPayloadsAreCopiedIn) {
  RegionParts parts(kHeap);
  ReceiveArea& area = *parts.area;
  Buffer payload = Buffer::Copy("hello");
  shm::Descriptor entry{};
  ASSERT_TRUE(area.Deliver(entry, payload));
  EXPECT_TRUE(payload.empty());
  EXPECT_GE(entry.heap_offset, kHeap / 2);
  EXPECT_EQ(parts.Text(entry), "hello");
  EXPECT_EQ(area.bytes_received(), 5u);
  EXPECT_EQ(area.received_in_place(), 0u);
}

TEST(ReceiveArea, Deliver__FalseWhenTheAreaIsFull) {
  RegionParts parts(kHeap);
  ReceiveArea& area = *parts.area;
  Buffer whole = Buffer::Allocate(kHeap / 2);
  shm::Descriptor first{};
  ASSERT_TRUE(area.Deliver(first, whole));
  Buffer more = Buffer::Copy("x");
  shm::Descriptor second{};
  EXPECT_FALSE(area.Deliver(second, more));
  EXPECT_EQ(more.AsStringView(), "x");
  EXPECT_EQ(second.length, 0u);
  EXPECT_TRUE(area.Release(first.heap_offset, first.length, {}).ok());
  EXPECT_TRUE(area.Deliver(second, more));
}

TEST(ReceiveArea, Release__WrongLengthOrTwiceIsRefused) {
  RegionParts parts(kHeap);
  ReceiveArea& area = *parts.area;
  Buffer payload = Buffer::Copy("hello");
  shm::Descriptor entry{};
  ASSERT_TRUE(area.Deliver(entry, payload));
  const std::string at = std::to_string(entry.heap_offset);
  Status wrong = area.Release(entry.heap_offset, 4, {});
  EXPECT_EQ(wrong.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(wrong.message(), "buffer at " + at + " has 5 bytes, not 4");
  EXPECT_TRUE(area.Release(entry.heap_offset, 5, {}).ok());
  Status twice = area.Release(entry.heap_offset, 5, {});
  EXPECT_EQ(twice.message(),
            "offset " + at + " is not a buffer wharfd delivered (released twice?)");
}

TEST(ReceiveArea, Release__MoreRangesGoByTheirStartUntilABadOne) {
  RegionParts parts(kHeap);
  ReceiveArea& area = *parts.area;
  shm::Descriptor e[3] = {};
  for (shm::Descriptor& d : e) {
    Buffer payload = Buffer::Copy("message");
    ASSERT_TRUE(area.Deliver(d, payload));
  }
  const uint64_t more[] = {e[1].heap_offset, 12345, e[2].heap_offset};
  Status bad = area.Release(e[0].heap_offset, e[0].length, more);
  EXPECT_EQ(bad.message(), "offset 12345 is not a buffer wharfd delivered (released twice?)");
  // The two before the bad offset went; the one after it did not.
  EXPECT_EQ(area.bytes_in_use(), 64u);
  const uint64_t last[] = {0, 0, 0};
  EXPECT_TRUE(area.Release(e[2].heap_offset, e[2].length, last).ok());
  EXPECT_EQ(area.bytes_in_use(), 0u);
}

TEST(ReceiveArea, Destructor__APlacedBufferOutlivingTheAreaGivesNothingBack) {
  RegionParts parts(kHeap);
  parts.area->StartPlacing();
  Buffer placed = parts.area->AllocateReceive(64);
  ASSERT_FALSE(placed.empty());
  parts.outbox.reset();  // borrows the area
  parts.area.reset();
  std::memcpy(placed.data(), "still mapped", 12);  // the Buffer holds the region
  placed = Buffer();  // tells nobody (ASan would see a use after free)
}

}  // namespace
}  // namespace wharf::daemon
