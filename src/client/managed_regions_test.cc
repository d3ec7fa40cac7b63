// ManagedRegions alone: a read's bytes come back in the Buffer wharfd
// filled (or copied once into the application's own), a lending becomes a
// lent region with its view, lent blocks outlive their region by the
// quarantine, events are capped, and a broken link forgets everything.
#include "client/managed_regions.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "shm/commands.h"

namespace wharf::internal {
namespace {

using transport::RegionEvent;

shm::Descriptor Event(uint32_t kind, uint64_t region) {
  shm::Descriptor e{};
  e.opcode = static_cast<uint16_t>(shm::Opcode::kRegionEvent);
  e.status = kind;
  e.handle = region;
  return e;
}

TEST(ManagedRegionsTest, AReadEndsInTheFilledBufferOrItsCopy) {
  ManagedRegions regions;
  Buffer area = Buffer::Copy("filled");
  const std::byte* where = area.data();
  regions.StartRead(1, std::move(area), std::nullopt);
  EXPECT_TRUE(regions.Owns(1));
  EXPECT_FALSE(regions.Owns(2));
  ManagedRegions::Outcome done = regions.Finish(1, OkStatus(), 0);
  ASSERT_TRUE(done.status.ok());
  EXPECT_EQ(done.message.data(), where);  // no copy
  EXPECT_FALSE(regions.Owns(1));

  // The application's own Buffer (not in the heap) gets the bytes copied.
  Buffer mine = Buffer::Allocate(6);
  const std::byte* its = mine.data();
  regions.StartRead(2, Buffer::Copy("copied"), std::move(mine));
  done = regions.Finish(2, OkStatus(), 0);
  EXPECT_EQ(done.message.data(), its);
  EXPECT_EQ(done.message.AsStringView(), "copied");

  regions.StartRead(3, Buffer::Copy("x"), std::nullopt);
  done = regions.Finish(3, NotFoundError("region 9: not held"), 0);
  EXPECT_EQ(done.status.code(), StatusCode::kNotFound);
  EXPECT_TRUE(done.message.empty());
}

TEST(ManagedRegionsTest, ALentBlockOutlivesItsRegionByTheQuarantine) {
  ManagedRegions regions;
  Buffer block = Buffer::Allocate(128);
  std::span<std::byte> bytes = block.span().subspan(64, 32);
  regions.StartLending(4, std::move(block), bytes);
  ManagedRegions::Outcome done = regions.Finish(4, OkStatus(), /*region=*/77);
  ASSERT_TRUE(done.status.ok());
  EXPECT_EQ(done.value, 77u);
  EXPECT_EQ(done.message.data(), bytes.data());  // a view: the block stays ours
  EXPECT_EQ(regions.LentBytes(77).data(), bytes.data());
  EXPECT_EQ(regions.blocks_kept(), 1u);

  // Its holder gives it back: the view goes, the block waits out the
  // quarantine and goes with the next region's end after it.
  const TimeNs t0 = 10 * kNsPerSec;
  regions.OnEvent(Event(shm::kRegionEventReturned, 77), {}, t0);
  EXPECT_TRUE(regions.LentBytes(77).empty());
  EXPECT_EQ(regions.blocks_kept(), 1u);
  regions.Revoked(78, t0 + ManagedRegions::kQuarantineNs);
  EXPECT_EQ(regions.blocks_kept(), 0u);

  // A refused lending keeps nothing.
  regions.StartLending(5, Buffer::Allocate(64), {});
  done = regions.Finish(5, InvalidArgumentError("no"), 0);
  EXPECT_EQ(done.status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(regions.blocks_kept(), 0u);
}

TEST(ManagedRegionsTest, EventsCarryTheirFieldsAndAreCapped) {
  ManagedRegions regions;
  std::vector<std::byte> lent(16);
  shm::Descriptor imm = Event(shm::kRegionEventImmediate, 3);
  imm.cookie = 42;
  imm.aux[0] = 4;
  imm.aux[1] = 8;
  regions.OnEvent(imm, lent, 0);
  shm::Descriptor got = Event(shm::kRegionEventLent, 9);
  got.aux[0] = 4096;
  got.aux[1] = transport::kRegionRead;
  got.aux[2] = 1000;
  regions.OnEvent(got, {}, 5 * kNsPerSec);
  regions.OnEvent(Event(99, 1), {}, 0);  // not a kind: ignored
  RegionEvent e;
  ASSERT_TRUE(regions.PopEvent(&e));
  EXPECT_EQ(e.kind, RegionEvent::Kind::kImmediate);
  EXPECT_EQ(e.value, 42u);
  EXPECT_EQ(e.offset, 4u);
  EXPECT_EQ(e.length, 8u);
  EXPECT_EQ(regions.LentBytes(3).data(), lent.data());
  ASSERT_TRUE(regions.PopEvent(&e));
  EXPECT_EQ(e.kind, RegionEvent::Kind::kLent);
  EXPECT_EQ(e.held.size, 4096u);
  EXPECT_EQ(e.held.expires_ns, 6 * kNsPerSec);
  EXPECT_FALSE(regions.PopEvent(&e));

  for (size_t i = 0; i < ManagedRegions::kMaxEvents + 5; ++i) {
    regions.OnEvent(Event(shm::kRegionEventReleased, i + 1), {}, 0);
  }
  EXPECT_EQ(regions.events_dropped(), 5u);
}

TEST(ManagedRegionsTest, ABrokenLinkForgetsEverything) {
  ManagedRegions regions;
  regions.StartRead(1, Buffer::Allocate(8), std::nullopt);
  regions.StartLending(2, Buffer::Allocate(8), {});
  regions.Clear();
  EXPECT_FALSE(regions.Owns(1));
  EXPECT_FALSE(regions.Owns(2));
  EXPECT_EQ(regions.blocks_kept(), 0u);
}

}  // namespace
}  // namespace wharf::internal
