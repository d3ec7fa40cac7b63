// Tests for HeapAllocator: setup checks, best fit, splitting and coalescing,
// exhaustion, every kind of bad Free, the quick lists of small freed blocks,
// a randomized run checked step by step against a simple (linear-time)
// best-fit reference model, and a randomized run that leaves blocks on the
// quick lists, checked against the invariants.
#include "shm/heap_allocator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <vector>

namespace wharf::shm {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kBase = 1 << 20;  // a non-zero start catches offset/index mix-ups

HeapAllocator Make(uint64_t bytes, uint64_t alignment = 64,
                   size_t quick_list_depth = HeapAllocator::kDefaultQuickListDepth) {
  return HeapAllocator::Create(kBase, bytes, alignment, quick_list_depth).value();
}

// Create

TEST(HeapAllocatorTest, CreateRejectsBadGeometry) {
  struct Case {
    uint64_t first, bytes, alignment;
    const char* message;
  };
  for (const Case& c : std::vector<Case>{
           {0, 4096, 0, "alignment 0"},
           {0, 4096, 48, "alignment 48"},
           {0, 1 << 22, uint64_t{1} << 22, "alignment 4194304"},
           {0, 0, 64, "length 0"},
           {32, 4096, 64, "range start 32"},
           {0, 4000, 64, "length 4000"},
           {UINT64_MAX - 63, 128, 64, "overflows"},
       }) {
    Result<HeapAllocator> a = HeapAllocator::Create(c.first, c.bytes, c.alignment);
    ASSERT_FALSE(a.ok()) << c.message;
    EXPECT_EQ(a.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(a.status().message(), HasSubstr(c.message));
  }
}

TEST(HeapAllocatorTest, StartsWithOneFreeBlock) {
  HeapAllocator a = Make(4096);
  EXPECT_EQ(a.first(), kBase);
  EXPECT_EQ(a.capacity(), 4096u);
  EXPECT_EQ(a.alignment(), 64u);
  EXPECT_EQ(a.bytes_in_use(), 0u);
  EXPECT_EQ(a.live_allocations(), 0u);
  EXPECT_EQ(a.free_blocks(), 1u);
  EXPECT_EQ(a.largest_free_block(), 4096u);
}

// Allocate

TEST(HeapAllocatorTest, AllocatesAlignedFromTheStartAndRoundsUp) {
  HeapAllocator a = Make(4096);
  EXPECT_EQ(a.Allocate(1).value(), kBase);
  EXPECT_EQ(a.Allocate(64).value(), kBase + 64);
  EXPECT_EQ(a.Allocate(65).value(), kBase + 128);
  EXPECT_EQ(a.Allocate(0).value(), kBase + 256);  // 0 bytes still takes a unit
  EXPECT_EQ(a.Allocate(10).value(), kBase + 320);
  EXPECT_EQ(a.bytes_in_use(), 384u);
  EXPECT_EQ(a.live_allocations(), 5u);
  EXPECT_EQ(a.Size(kBase).value(), 1u);
  EXPECT_EQ(a.Size(kBase + 128).value(), 65u);
  EXPECT_EQ(a.Size(kBase + 256).value(), 0u);
  EXPECT_EQ(a.largest_free_block(), 4096u - 384);
}

TEST(HeapAllocatorTest, OtherAlignments) {
  HeapAllocator a = Make(8192, 4096);
  EXPECT_EQ(a.Allocate(1).value(), kBase);
  EXPECT_EQ(a.Allocate(4097).status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(a.Allocate(4096).value(), kBase + 4096);
  HeapAllocator b = HeapAllocator::Create(3, 10, 1).value();
  EXPECT_EQ(b.Allocate(3).value(), 3u);
  EXPECT_EQ(b.Allocate(7).value(), 6u);
  EXPECT_EQ(b.bytes_in_use(), 10u);
}

TEST(HeapAllocatorTest, FillExactlyThenExhausted) {
  HeapAllocator a = Make(64 * 16);
  for (int i = 0; i < 16; ++i) ASSERT_EQ(a.Allocate(64).value(), kBase + 64u * i);
  EXPECT_EQ(a.bytes_in_use(), a.capacity());
  EXPECT_EQ(a.free_blocks(), 0u);
  EXPECT_EQ(a.largest_free_block(), 0u);
  Result<uint64_t> more = a.Allocate(0);
  EXPECT_EQ(more.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(more.status().message(),
              HasSubstr("no free block for 0 bytes (largest free block 0 of 0 free bytes"));
}

TEST(HeapAllocatorTest, ExhaustionNamesRequestAndLargestBlock) {
  HeapAllocator a = Make(4096);
  ASSERT_TRUE(a.Allocate(1000).ok());  // 1024 taken
  Result<uint64_t> r = a.Allocate(3073);
  ASSERT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(r.status().message(),
            "heap allocator: no free block for 3073 bytes (largest free block 3072 of 3072 free "
            "bytes in [1048576, 1052672))");
  EXPECT_EQ(a.Allocate(3072).value(), kBase + 1024);  // the failure changed nothing
}

TEST(HeapAllocatorTest, HugeRequestsDoNotWrap) {
  HeapAllocator a = Make(4096);
  for (uint64_t size : {uint64_t{4097}, UINT64_MAX, UINT64_MAX - 62, uint64_t{1} << 63}) {
    EXPECT_EQ(a.Allocate(size).status().code(), StatusCode::kResourceExhausted) << size;
  }
  EXPECT_EQ(a.bytes_in_use(), 0u);
}

TEST(HeapAllocatorTest, BestFitPicksTheSmallestBlockThenTheLowestOffset) {
  HeapAllocator a = Make(64 * 20);
  // Carve holes of 3, 1, 2 and 1 units separated by live units.
  std::vector<uint64_t> offsets;
  for (uint64_t units : {3, 1, 1, 1, 2, 1, 1, 1}) offsets.push_back(a.Allocate(units * 64).value());
  // offsets: 0(3u) 3 4 5 6(2u) 8 9 10; rest [11, 20) free (9 units).
  ASSERT_TRUE(a.Free(offsets[0]).ok());  // hole of 3 at 0
  ASSERT_TRUE(a.Free(offsets[2]).ok());  // hole of 1 at 4
  ASSERT_TRUE(a.Free(offsets[4]).ok());  // hole of 2 at 6
  ASSERT_TRUE(a.Free(offsets[6]).ok());  // hole of 1 at 9
  EXPECT_EQ(a.free_blocks(), 5u);
  EXPECT_EQ(a.Allocate(64).value(), kBase + 4 * 64);   // a 1-unit hole, the lower one
  EXPECT_EQ(a.Allocate(64).value(), kBase + 9 * 64);   // the other 1-unit hole
  EXPECT_EQ(a.Allocate(100).value(), kBase + 6 * 64);  // 2 units: the 2-unit hole
  EXPECT_EQ(a.Allocate(64).value(), kBase + 0);        // 1 unit, only 3+ holes left: split 3
  EXPECT_EQ(a.Allocate(128).value(), kBase + 64);      // the 2 units left of it
  EXPECT_EQ(a.Allocate(64 * 9).value(), kBase + 11 * 64);
  EXPECT_EQ(a.bytes_in_use(), a.capacity());
}

// Free

TEST(HeapAllocatorTest, FreeReturnsTheRequestedSize) {
  HeapAllocator a = Make(4096);
  const uint64_t x = a.Allocate(100).value();
  const uint64_t y = a.Allocate(0).value();
  EXPECT_EQ(a.Free(x).value(), 100u);
  EXPECT_EQ(a.Free(y).value(), 0u);
  EXPECT_EQ(a.bytes_in_use(), 0u);
  EXPECT_EQ(a.live_allocations(), 0u);
}

TEST(HeapAllocatorTest, FreeCoalescesWithBothNeighbours) {
  HeapAllocator a = Make(64 * 5);
  std::vector<uint64_t> o;
  for (int i = 0; i < 5; ++i) o.push_back(a.Allocate(64).value());
  ASSERT_TRUE(a.Free(o[1]).ok());
  ASSERT_TRUE(a.Free(o[3]).ok());
  EXPECT_EQ(a.free_blocks(), 2u);
  EXPECT_EQ(a.largest_free_block(), 64u);
  ASSERT_TRUE(a.Free(o[2]).ok());  // merges with 1 (before) and 3 (after)
  EXPECT_EQ(a.free_blocks(), 1u);
  EXPECT_EQ(a.largest_free_block(), 192u);
  ASSERT_TRUE(a.Free(o[0]).ok());  // merges after only
  EXPECT_EQ(a.free_blocks(), 1u);
  EXPECT_EQ(a.largest_free_block(), 256u);
  ASSERT_TRUE(a.Free(o[4]).ok());  // merges before only
  EXPECT_EQ(a.free_blocks(), 1u);
  EXPECT_EQ(a.largest_free_block(), 320u);
  EXPECT_EQ(a.Allocate(320).value(), kBase);
}

TEST(HeapAllocatorTest, FragmentationLeavesRoomButNoBlock) {
  HeapAllocator a = Make(64 * 64);
  std::vector<uint64_t> o;
  for (int i = 0; i < 64; ++i) o.push_back(a.Allocate(64).value());
  for (int i = 0; i < 64; i += 2) ASSERT_TRUE(a.Free(o[i]).ok());
  EXPECT_EQ(a.bytes_in_use(), 32u * 64);
  EXPECT_EQ(a.free_blocks(), 32u);
  EXPECT_EQ(a.largest_free_block(), 64u);
  Result<uint64_t> r = a.Allocate(65);
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(r.status().message(), HasSubstr("largest free block 64 of 2048 free bytes"));
  // Freeing the odd ones too puts everything back into one block.
  for (int i = 1; i < 64; i += 2) ASSERT_TRUE(a.Free(o[i]).ok());
  EXPECT_EQ(a.free_blocks(), 1u);
  EXPECT_EQ(a.Allocate(64 * 64).value(), kBase);
}

// Snapshot of everything observable, to show that a bad Free changed nothing.
struct State {
  uint64_t in_use;
  size_t live, free_blocks;
  uint64_t largest;
  friend bool operator==(const State&, const State&) = default;
};
State Observe(const HeapAllocator& a) {
  return {a.bytes_in_use(), a.live_allocations(), a.free_blocks(), a.largest_free_block()};
}

TEST(HeapAllocatorTest, EveryBadFreeIsAnErrorAndChangesNothing) {
  HeapAllocator a = Make(4096);
  const uint64_t x = a.Allocate(200).value();  // [0, 256)
  const uint64_t y = a.Allocate(64).value();   // [256, 320)
  const uint64_t z = a.Allocate(64).value();   // [320, 384)
  ASSERT_TRUE(a.Free(y).ok());                 // [256, 320) free again
  const State before = Observe(a);
  struct Case {
    uint64_t offset;
    const char* message;
  };
  for (const Case& c : std::vector<Case>{
           {y, "is not the start of a live allocation"},  // double free
           {x + 1, "is inside the allocation at 1048576 (200 bytes)"},
           {x + 64, "is inside the allocation at 1048576 (200 bytes)"},
           {x + 255, "is inside the allocation at 1048576 (200 bytes)"},
           {z + 63, "is inside the allocation at 1048896 (64 bytes)"},
           {kBase + 1024, "is not the start of a live allocation"},  // never allocated
           {kBase - 64, "is outside [1048576, 1052672)"},
           {0, "is outside"},
           {kBase + 4096, "is outside"},
           {UINT64_MAX, "is outside"},
       }) {
    Result<uint64_t> r = a.Free(c.offset);
    ASSERT_FALSE(r.ok()) << c.offset;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr("heap free: offset " + std::to_string(c.offset)));
    EXPECT_THAT(r.status().message(), HasSubstr(c.message));
    EXPECT_EQ(Observe(a), before) << c.offset;
    Result<uint64_t> s = a.Size(c.offset);
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(s.status().message(), HasSubstr("heap size: offset"));
  }
  // The good allocations are still intact and free normally.
  EXPECT_EQ(a.Free(x).value(), 200u);
  EXPECT_EQ(a.Free(z).value(), 64u);
  EXPECT_EQ(a.Free(x).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(a.free_blocks(), 1u);
}

TEST(HeapAllocatorTest, SteadyStateRecyclesNodes) {
  // Not a malloc counter (the test cannot see malloc), but the property it
  // relies on: churn with a constant number of blocks keeps working and
  // leaves the allocator exactly as it found it.
  HeapAllocator a = Make(1 << 16);
  std::vector<uint64_t> ring;
  for (int i = 0; i < 32; ++i) ring.push_back(a.Allocate(100 + i).value());
  for (int round = 0; round < 10'000; ++round) {
    const size_t k = static_cast<size_t>(round) % ring.size();
    ASSERT_TRUE(a.Free(ring[k]).ok());
    ring[k] = a.Allocate(100 + k).value();
  }
  for (uint64_t o : ring) ASSERT_TRUE(a.Free(o).ok());
  EXPECT_EQ(Observe(a), (State{0, 0, 1, 1 << 16}));
}

// Narrow

TEST(HeapAllocatorTest, NarrowRenamesTheAllocationAndFreeReturnsTheWholeBlock) {
  HeapAllocator a = Make(4096);
  const uint64_t block = a.Allocate(200).value();  // 256 bytes taken
  const uint64_t other = a.Allocate(64).value();
  ASSERT_TRUE(a.Narrow(block, block + 32, 168).ok());
  EXPECT_EQ(a.Size(block + 32).value(), 168u);
  EXPECT_THAT(a.Size(block).status().message(), HasSubstr("inside the allocation at"));
  EXPECT_EQ(a.Free(block).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(a.bytes_in_use(), 256u + 64u);
  EXPECT_EQ(a.Free(block + 32).value(), 168u);
  EXPECT_EQ(a.bytes_in_use(), 64u);
  EXPECT_EQ(a.Free(block + 32).status().code(), StatusCode::kInvalidArgument) << "freed twice";
  ASSERT_TRUE(a.Free(other).ok());
  EXPECT_EQ(Observe(a), (State{0, 0, 1, 4096}));
  // The block is whole again: the same size comes back at the same place.
  EXPECT_EQ(a.Allocate(200).value(), block);
}

TEST(HeapAllocatorTest, NarrowOutsideTheBlockOrOfANonLiveOffsetChangesNothing) {
  HeapAllocator a = Make(4096);
  const uint64_t block = a.Allocate(100).value();  // 128 bytes taken
  const uint64_t next = a.Allocate(64).value();
  EXPECT_EQ(a.Narrow(block, block + 128, 0).code(), StatusCode::kInvalidArgument)
      << "the block's end is the next block's start";
  EXPECT_EQ(a.Narrow(block, block + 64, 65).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(a.Narrow(block, block - 64, 10).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(a.Narrow(block + 64, block + 64, 1).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(a.Size(block).value(), 100u);
  EXPECT_EQ(a.Size(next).value(), 64u);
  ASSERT_TRUE(a.Narrow(block, block, 7).ok());  // the same start: a new size only
  EXPECT_EQ(a.Free(block).value(), 7u);
  ASSERT_TRUE(a.Free(next).ok());
  EXPECT_EQ(Observe(a), (State{0, 0, 1, 4096}));
}

// Quick lists

TEST(HeapAllocatorTest, QuickListReusesTheLastFreedBlockOfTheSameSize) {
  HeapAllocator a = Make(4096);
  const uint64_t x = a.Allocate(100).value();  // 2 units at 0
  const uint64_t y = a.Allocate(64).value();   // 1 unit at 128
  const uint64_t z = a.Allocate(128).value();  // 2 units at 192
  ASSERT_TRUE(a.Free(x).ok());
  ASSERT_TRUE(a.Free(z).ok());
  EXPECT_EQ(a.quick_listed_blocks(), 2u);
  EXPECT_EQ(a.bytes_in_use(), 64u);
  // LIFO: the last freed 2-unit block, where best fit would take x (lower).
  EXPECT_EQ(a.Allocate(65).value(), z);
  EXPECT_EQ(a.Allocate(128).value(), x);
  EXPECT_EQ(a.quick_listed_blocks(), 0u);
  EXPECT_EQ(a.Size(z).value(), 65u);  // the new request's size, not the old one's
  EXPECT_EQ(a.Free(z).value(), 65u);
  // A size with an empty quick list takes best fit from the free maps.
  EXPECT_EQ(a.Allocate(64 * 3).value(), kBase + 320);
  EXPECT_EQ(a.Free(y).value(), 64u);
}

TEST(HeapAllocatorTest, QuickListedBlocksMergeWhenALargeAllocateNeedsTheRoom) {
  HeapAllocator a = Make(64 * 64);
  std::vector<uint64_t> o;
  for (int i = 0; i < 64; ++i) o.push_back(a.Allocate(64).value());
  for (uint64_t x : o) ASSERT_TRUE(a.Free(x).ok());
  EXPECT_EQ(a.quick_listed_blocks(), 64u);
  EXPECT_EQ(a.bytes_in_use(), 0u);
  Result<uint64_t> all = a.Allocate(64 * 64);  // merged, not exhausted
  ASSERT_TRUE(all.ok()) << all.status().message();
  EXPECT_EQ(*all, kBase);
  EXPECT_EQ(a.quick_listed_blocks(), 0u);
  EXPECT_EQ(a.bytes_in_use(), a.capacity());
}

TEST(HeapAllocatorTest, ExhaustionIsReportedOnlyAfterMergingTheQuickLists) {
  HeapAllocator a = Make(64 * 64);
  std::vector<uint64_t> o;
  for (int i = 0; i < 64; ++i) o.push_back(a.Allocate(64).value());
  for (int i = 0; i < 64; i += 2) ASSERT_TRUE(a.Free(o[i]).ok());  // 1-unit holes
  ASSERT_TRUE(a.Free(o[1]).ok());  // [0, 3) once merged
  EXPECT_EQ(a.quick_listed_blocks(), 33u);
  Result<uint64_t> r = a.Allocate(64 * 4);
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(r.status().message(), HasSubstr("largest free block 192 of 2112 free bytes"));
  EXPECT_EQ(a.Allocate(64 * 3).value(), kBase);  // the merged block, best fit
}

TEST(HeapAllocatorTest, DoubleFreeOfAQuickListedBlockIsAnErrorAndChangesNothing) {
  HeapAllocator a = Make(4096);
  const uint64_t x = a.Allocate(128).value();
  const uint64_t keep = a.Allocate(64).value();
  ASSERT_TRUE(a.Free(x).ok());
  ASSERT_EQ(a.quick_listed_blocks(), 1u);
  for (uint64_t offset : {x, x + 64}) {
    Result<uint64_t> r = a.Free(offset);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr("is not the start of a live allocation"));
    EXPECT_EQ(a.Size(offset).status().code(), StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(a.quick_listed_blocks(), 1u);  // not listed twice
  EXPECT_EQ(a.bytes_in_use(), 64u);
  EXPECT_EQ(a.live_allocations(), 1u);
  EXPECT_EQ(a.Allocate(128).value(), x);
  EXPECT_NE(a.Allocate(128).value(), x);  // only one copy was on the list
  EXPECT_EQ(a.Free(keep).value(), 64u);
}

TEST(HeapAllocatorTest, ObservablesAreExactWithBlocksOnQuickLists) {
  HeapAllocator a = Make(64 * 8);
  std::vector<uint64_t> o;
  for (int i = 0; i < 8; ++i) o.push_back(a.Allocate(64).value());
  for (int i : {1, 2, 5}) ASSERT_TRUE(a.Free(o[i]).ok());
  ASSERT_EQ(a.quick_listed_blocks(), 3u);
  EXPECT_EQ(a.bytes_in_use(), 5u * 64);
  EXPECT_EQ(a.live_allocations(), 5u);
  EXPECT_EQ(a.free_blocks(), 2u);  // [1, 3) and [5, 6), as if merged
  EXPECT_EQ(a.largest_free_block(), 128u);
  EXPECT_EQ(a.quick_listed_blocks(), 0u);  // the accessors merged them
  EXPECT_EQ(a.Allocate(128).value(), kBase + 64);
}

TEST(HeapAllocatorTest, QuickListDepthIsBounded) {
  HeapAllocator a = Make(64 * 256);
  std::vector<uint64_t> o;
  for (int i = 0; i < 70; ++i) o.push_back(a.Allocate(64).value());
  for (uint64_t x : o) ASSERT_TRUE(a.Free(x).ok());
  // 64 listed; the last 6 merged with each other and the free tail.
  EXPECT_EQ(a.quick_listed_blocks(), HeapAllocator::kDefaultQuickListDepth);
  EXPECT_EQ(a.bytes_in_use(), 0u);
  EXPECT_EQ(Observe(a), (State{0, 0, 1, 64 * 256}));

  // Only blocks of up to kQuickUnits units are listed, and depth 0 lists none.
  const uint64_t big = a.Allocate(64 * (HeapAllocator::kQuickUnits + 1)).value();
  const uint64_t small = a.Allocate(64 * HeapAllocator::kQuickUnits).value();
  ASSERT_TRUE(a.Free(big).ok());
  EXPECT_EQ(a.quick_listed_blocks(), 0u);
  ASSERT_TRUE(a.Free(small).ok());
  EXPECT_EQ(a.quick_listed_blocks(), 1u);
  HeapAllocator b = Make(4096, 64, 0);
  ASSERT_TRUE(b.Free(b.Allocate(64).value()).ok());
  EXPECT_EQ(b.quick_listed_blocks(), 0u);
}

// The reference: the same policy (best fit, lowest offset on ties, merge on
// free) written as plainly as possible, in linear time.
class ReferenceAllocator {
 public:
  ReferenceAllocator(uint64_t first, uint64_t bytes, uint64_t alignment)
      : first_(first), end_(first + bytes), alignment_(alignment) {
    free_[first] = bytes;
  }

  std::optional<uint64_t> Allocate(uint64_t size) {
    if (size > end_ - first_) return std::nullopt;
    const uint64_t need =
        std::max<uint64_t>(alignment_, (size + alignment_ - 1) / alignment_ * alignment_);
    std::optional<std::pair<uint64_t, uint64_t>> best;  // offset, bytes
    for (auto [offset, bytes] : free_) {
      if (bytes >= need && (!best || bytes < best->second)) best = {offset, bytes};
    }
    if (!best) return std::nullopt;
    free_.erase(best->first);
    if (best->second > need) free_[best->first + need] = best->second - need;
    live_[best->first] = {need, size};
    return best->first;
  }

  std::optional<uint64_t> Free(uint64_t offset) {
    auto it = live_.find(offset);
    if (it == live_.end()) return std::nullopt;
    const auto [bytes, requested] = it->second;
    live_.erase(it);
    free_[offset] = bytes;
    // Merge every pair of touching free blocks.
    for (auto f = free_.begin(); f != free_.end();) {
      auto n = std::next(f);
      if (n != free_.end() && f->first + f->second == n->first) {
        f->second += n->second;
        free_.erase(n);
      } else {
        f = n;
      }
    }
    return requested;
  }

  uint64_t InUse() const {
    uint64_t sum = 0;
    for (const auto& [o, l] : live_) sum += l.first;
    return sum;
  }
  uint64_t Largest() const {
    uint64_t m = 0;
    for (const auto& [o, b] : free_) m = std::max(m, b);
    return m;
  }
  size_t FreeBlocks() const { return free_.size(); }
  size_t Live() const { return live_.size(); }
  std::vector<uint64_t> LiveOffsets() const {
    std::vector<uint64_t> v;
    for (const auto& [o, l] : live_) v.push_back(o);
    return v;
  }

 private:
  uint64_t first_, end_, alignment_;
  std::map<uint64_t, uint64_t> free_;                       // offset -> bytes
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> live_;  // offset -> (block, requested)
};

TEST(HeapAllocatorTest, RandomizedAgainstReferenceModel) {
  for (uint32_t seed : {1u, 2u, 3u, 42u}) {
    std::mt19937_64 rng(seed);
    const uint64_t alignment = uint64_t{1} << (seed % 4 * 2 + 3);  // 8, 32, 128, 512
    const uint64_t bytes = alignment * 500;
    HeapAllocator a = HeapAllocator::Create(kBase, bytes, alignment).value();
    ReferenceAllocator ref(kBase, bytes, alignment);
    for (int step = 0; step < 20'000; ++step) {
      const uint64_t op = rng() % 100;
      std::vector<uint64_t> live = ref.LiveOffsets();
      if (op < 50 || live.empty()) {
        // Mostly small sizes, now and then one that may not fit.
        const uint64_t size = rng() % 8 == 0 ? rng() % (bytes / 2) : rng() % (alignment * 6);
        Result<uint64_t> got = a.Allocate(size);
        std::optional<uint64_t> want = ref.Allocate(size);
        ASSERT_EQ(got.ok(), want.has_value()) << "seed " << seed << " step " << step;
        if (want) {
          ASSERT_EQ(*got, *want) << "seed " << seed << " step " << step;
        } else {
          ASSERT_EQ(got.status().code(), StatusCode::kResourceExhausted);
        }
      } else if (op < 90) {
        const uint64_t offset = live[rng() % live.size()];
        ASSERT_EQ(a.Free(offset).value(), ref.Free(offset).value()) << "seed " << seed;
      } else {
        // Garbage: a random offset near the range, mostly not a live start.
        const uint64_t offset = kBase - alignment + rng() % (bytes + 2 * alignment);
        Result<uint64_t> got = a.Free(offset);
        std::optional<uint64_t> want = ref.Free(offset);
        ASSERT_EQ(got.ok(), want.has_value()) << "seed " << seed << " offset " << offset;
        if (want) {
          ASSERT_EQ(*got, *want);
        }
      }
      ASSERT_EQ(a.bytes_in_use(), ref.InUse()) << "seed " << seed << " step " << step;
      ASSERT_EQ(a.live_allocations(), ref.Live());
      ASSERT_EQ(a.free_blocks(), ref.FreeBlocks()) << "seed " << seed << " step " << step;
      ASSERT_EQ(a.largest_free_block(), ref.Largest());
    }
  }
}

// With the quick lists in use (the accessors that merge them are called only
// now and then), offsets are not best fit, so this run checks the invariants
// instead: every block is aligned, inside the range and overlaps no other;
// Free returns the requested size; bytes_in_use is exact at every step; an
// Allocate fails exactly when no gap between live blocks is large enough; and
// free_blocks/largest_free_block are the gaps between live blocks.
TEST(HeapAllocatorTest, RandomizedWithQuickListsKeepsTheInvariants) {
  for (uint32_t seed : {5u, 6u, 7u, 43u}) {
    std::mt19937_64 rng(seed);
    const uint64_t alignment = uint64_t{1} << (seed % 4 * 2 + 3);  // 8, 32, 128, 512
    const uint64_t bytes = alignment * 500;
    HeapAllocator a = HeapAllocator::Create(kBase, bytes, alignment, 8).value();
    std::map<uint64_t, std::pair<uint64_t, uint64_t>> live;  // offset -> (block, requested)
    uint64_t in_use = 0;
    // The gaps between live blocks: (count, largest).
    auto gaps = [&] {
      size_t count = 0;
      uint64_t largest = 0, at = kBase;
      for (const auto& [o, l] : live) {
        if (o > at) {
          ++count;
          largest = std::max(largest, o - at);
        }
        at = o + l.first;
      }
      if (kBase + bytes > at) {
        ++count;
        largest = std::max(largest, kBase + bytes - at);
      }
      return std::pair{count, largest};
    };
    bool listed = false;
    for (int step = 0; step < 20'000; ++step) {
      const uint64_t op = rng() % 100;
      if (op < 50 || live.empty()) {
        const uint64_t size = rng() % 16 == 0 ? rng() % (bytes / 2) : rng() % (alignment * 6);
        const uint64_t need =
            std::max<uint64_t>(alignment, (size + alignment - 1) / alignment * alignment);
        const bool fits = gaps().second >= need;
        Result<uint64_t> got = a.Allocate(size);
        ASSERT_EQ(got.ok(), fits) << "seed " << seed << " step " << step;
        if (got.ok()) {
          const uint64_t o = *got;
          ASSERT_EQ(o % alignment, 0u);
          ASSERT_GE(o, kBase);
          ASSERT_LE(o + need, kBase + bytes);
          auto next = live.lower_bound(o);
          if (next != live.end()) {
            ASSERT_GE(next->first, o + need) << "seed " << seed;
          }
          if (next != live.begin()) {
            auto prev = std::prev(next);
            ASSERT_LE(prev->first + prev->second.first, o) << "seed " << seed;
          }
          live[o] = {need, size};
          in_use += need;
        } else {
          ASSERT_EQ(got.status().code(), StatusCode::kResourceExhausted);
        }
      } else if (op < 95) {
        auto it = live.begin();
        std::advance(it, static_cast<long>(rng() % live.size()));
        ASSERT_EQ(a.Free(it->first).value(), it->second.second) << "seed " << seed;
        in_use -= it->second.first;
        live.erase(it);
      } else {
        const uint64_t offset = kBase - alignment + rng() % (bytes + 2 * alignment);
        Result<uint64_t> got = a.Free(offset);
        auto it = live.find(offset);
        ASSERT_EQ(got.ok(), it != live.end()) << "seed " << seed << " offset " << offset;
        if (it != live.end()) {
          ASSERT_EQ(*got, it->second.second);
          in_use -= it->second.first;
          live.erase(it);
        }
      }
      listed = listed || a.quick_listed_blocks() > 0;
      ASSERT_EQ(a.bytes_in_use(), in_use) << "seed " << seed << " step " << step;
      ASSERT_EQ(a.live_allocations(), live.size());
      if (step % 97 == 0) {
        const auto [count, largest] = gaps();
        ASSERT_EQ(a.free_blocks(), count) << "seed " << seed << " step " << step;
        ASSERT_EQ(a.largest_free_block(), largest) << "seed " << seed << " step " << step;
      }
    }
    EXPECT_TRUE(listed) << "the run never used the quick lists";
  }
}

}  // namespace
}  // namespace wharf::shm
