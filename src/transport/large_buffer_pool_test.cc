// Tests of LargeBufferPool: a released block is taken again (same memory), only
// by a message it fits without waste, the limits free the oldest, the pool
// outlives the transport's reference while Buffers hold it, and Release from
// another thread is safe.
#include "transport/large_buffer_pool.h"

#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

namespace wharf::transport {
namespace {

constexpr size_t kMiB = 1u << 20;

// Whether the page holding `p` is still mapped in this process.
bool Mapped(const std::byte* p) {
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  unsigned char resident = 0;
  void* start = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(p) / page * page);
  return ::mincore(start, page, &resident) == 0 || errno != ENOMEM;
}

TEST(LargeBufferPoolTest, TakeGivesExactSizeWithHeadroomAndAnOwner) {
  auto pool = LargeBufferPool::Create({});
  Buffer b = pool->Take(kMiB + 32);
  EXPECT_EQ(b.size(), kMiB + 32);
  EXPECT_EQ(b.owner(), pool.get());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 64, 0u);
  std::memset(b.data(), 7, b.size());  // all of it is writable
  EXPECT_TRUE(b.Prepend(Buffer::kHeadroom)) << "the engine's frame goes in front";
  EXPECT_EQ(pool->stats().allocated, 1u);
}

TEST(LargeBufferPoolTest, ReleasedBlockIsReusedForTheNextMessage) {
  auto pool = LargeBufferPool::Create({});
  std::byte* first = nullptr;
  {
    Buffer b = pool->Take(kMiB);
    first = b.data();
  }
  EXPECT_EQ(pool->stats().kept_blocks, 1u);
  EXPECT_EQ(pool->stats().kept_bytes, kMiB);
  Buffer again = pool->Take(kMiB - 100);  // a nearby size shares the block
  EXPECT_EQ(again.data(), first);
  EXPECT_EQ(again.size(), kMiB - 100);
  LargeBufferPool::Stats s = pool->stats();
  EXPECT_EQ(s.reused, 1u);
  EXPECT_EQ(s.allocated, 1u);
  EXPECT_EQ(s.kept_blocks, 0u);
}

TEST(LargeBufferPoolTest, ASmallMessageDoesNotPinALargeBlockNorALargeOneASmallBlock) {
  auto pool = LargeBufferPool::Create({});
  { Buffer big = pool->Take(4 * kMiB); }
  {
    Buffer small = pool->Take(LargeBufferPool::kMinBytes);
    EXPECT_EQ(pool->stats().reused, 0u) << "a 4 MiB block for 64 KiB wastes too much";
  }
  Buffer big_again = pool->Take(4 * kMiB);
  EXPECT_EQ(pool->stats().reused, 1u) << "the 4 MiB block is still kept";
  Buffer bigger = pool->Take(4 * kMiB + 1);
  EXPECT_EQ(pool->stats().reused, 1u) << "the 64 KiB block cannot hold it";
}

TEST(LargeBufferPoolTest, LimitsFreeTheOldestBlocks) {
  auto pool = LargeBufferPool::Create({.max_blocks = 2, .max_bytes = 3 * kMiB});
  std::vector<Buffer> held;
  for (int i = 0; i < 4; ++i) held.push_back(pool->Take(kMiB));
  std::byte* newest = held.back().data();
  held.clear();  // released in order: the last two released are kept
  LargeBufferPool::Stats s = pool->stats();
  EXPECT_EQ(s.kept_blocks, 2u);
  EXPECT_EQ(s.freed, 2u);
  EXPECT_EQ(s.kept_bytes, 2 * kMiB);
  Buffer a = pool->Take(kMiB);
  Buffer b = pool->Take(kMiB);
  EXPECT_TRUE(a.data() == newest || b.data() == newest);
  EXPECT_EQ(pool->stats().reused, 2u);
  // Byte limit: 2 MiB + 1 MiB + 1 MiB passes 3 MiB; the oldest goes.
  { Buffer two = pool->Take(2 * kMiB); }
  a = Buffer();
  b = Buffer();
  s = pool->stats();
  EXPECT_LE(s.kept_bytes, 3 * kMiB);
  EXPECT_EQ(s.freed, 3u);
}

TEST(LargeBufferPoolTest, BuffersKeepThePoolAliveAfterItsOwnerLetsGo) {
  auto pool = LargeBufferPool::Create({});
  std::weak_ptr<LargeBufferPool> weak = pool;
  Buffer b = pool->Take(kMiB);
  pool.reset();  // the transport is gone
  EXPECT_FALSE(weak.expired());
  std::memset(b.data(), 1, b.size());
  b = Buffer();
  EXPECT_TRUE(weak.expired()) << "the last Buffer's release ends the pool (no leak)";
}

TEST(LargeBufferPoolTest, ReleaseFromAnotherThread) {
  auto pool = LargeBufferPool::Create({});
  for (int round = 0; round < 50; ++round) {
    std::vector<Buffer> batch;
    for (int i = 0; i < 4; ++i) batch.push_back(pool->Take(kMiB));
    std::thread app([moved = std::move(batch)]() mutable { moved.clear(); });
    app.join();
  }
  LargeBufferPool::Stats s = pool->stats();
  EXPECT_EQ(s.allocated + s.reused, 200u);
  EXPECT_LE(s.allocated, 4u) << "after the first round every message reuses a block";
}

TEST(LargeBufferPoolTest, ReleaseIdle__FreesBlocksUnusedForAnInterval) {
  auto pool = LargeBufferPool::Create({});
  const std::byte* data;
  {
    Buffer b = pool->Take(kMiB);
    std::memset(b.data(), 1, b.size());
    data = b.data();
  }
  ASSERT_EQ(pool->stats().kept_blocks, 1u);
  ASSERT_TRUE(Mapped(data));
  TimeNs now = 5 * kNsPerSec;
  EXPECT_EQ(pool->ReleaseIdle(now), 0u) << "kept since this epoch: not idle yet";
  EXPECT_EQ(pool->ReleaseIdle(now + LargeBufferPool::kIdleIntervalNs / 2), 0u)
      << "no sweep before the interval is up";
  now += LargeBufferPool::kIdleIntervalNs;
  EXPECT_EQ(pool->ReleaseIdle(now), 1u);
  LargeBufferPool::Stats s = pool->stats();
  EXPECT_EQ(s.kept_blocks, 0u);
  EXPECT_EQ(s.kept_bytes, 0u);
  EXPECT_EQ(s.freed_idle, 1u);
  EXPECT_FALSE(Mapped(data)) << "the block went back to the system, not to the heap";
  EXPECT_FALSE(pool->HasKeptBlocks());
}

TEST(LargeBufferPoolTest, ReleaseIdle__KeepsBlocksInUse) {
  auto pool = LargeBufferPool::Create({});
  TimeNs now = kNsPerSec;
  { Buffer b = pool->Take(kMiB); }
  (void)pool->ReleaseIdle(now);
  for (int i = 0; i < 5; ++i) {
    now += LargeBufferPool::kIdleIntervalNs;
    { Buffer again = pool->Take(kMiB); }  // used every interval
    EXPECT_EQ(pool->ReleaseIdle(now), 0u) << i;
  }
  EXPECT_EQ(pool->stats().allocated, 1u);
}

TEST(LargeBufferPoolTest, Release__OverTheLimitsUnmapsAtOnce) {
  auto pool = LargeBufferPool::Create({.max_blocks = 1, .max_bytes = 64ull << 20});
  Buffer first = pool->Take(kMiB);
  Buffer second = pool->Take(kMiB);
  std::memset(first.data(), 1, first.size());
  const std::byte* first_data = first.data();
  first = Buffer();
  second = Buffer();  // the newest stays; the oldest goes
  EXPECT_EQ(pool->stats().kept_blocks, 1u);
  EXPECT_FALSE(Mapped(first_data));
}

}  // namespace
}  // namespace wharf::transport
