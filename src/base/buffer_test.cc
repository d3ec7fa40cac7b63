// Tests for wharf::Buffer (include/wharf/buffer.h): wharf's own heap buffers
// (headroom, Prepend, RemovePrefix, moves) and buffers wrapped around memory a
// BufferOwner lends, whose owner must be told exactly once, with the whole
// range, whatever moves and trims happened in between.
#include "wharf/buffer.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/mutex.h"

namespace wharf {
namespace {

// Records every Release (thread-safe, for the threaded tests) and whether it
// has been destroyed, so tests can check it outlives its Buffers.
class RecordingOwner : public BufferOwner {
 public:
  struct Call {
    std::byte* data;
    size_t size;
    std::thread::id thread;
  };
  explicit RecordingOwner(bool* destroyed = nullptr) : destroyed_(destroyed) {}
  ~RecordingOwner() override {
    if (destroyed_ != nullptr) *destroyed_ = true;
  }
  void Release(std::span<std::byte> whole) noexcept override {
    MutexLock lock(mu_);
    calls_.push_back({whole.data(), whole.size(), std::this_thread::get_id()});
  }
  std::vector<Call> calls() {
    MutexLock lock(mu_);
    return calls_;
  }

 private:
  bool* destroyed_;
  Mutex mu_;
  std::vector<Call> calls_ ABSL_GUARDED_BY(mu_);
};

// A lent range: stands in for a slice of an application's shared-memory heap.
struct Slice {
  std::array<std::byte, 256> bytes{};
  std::span<std::byte> span() { return bytes; }
};

// --- wharf's own heap buffers: unchanged by owners --------------------------

TEST(BufferTest, AllocateKeepsHeadroomAndHasNoOwner) {
  Buffer b = Buffer::Allocate(10);
  EXPECT_EQ(b.size(), 10u);
  EXPECT_NE(b.data(), nullptr);
  EXPECT_EQ(b.owner(), nullptr);
  std::byte* data = b.data();
  EXPECT_TRUE(b.Prepend(Buffer::kHeadroom));
  EXPECT_EQ(b.data(), data - Buffer::kHeadroom);
  EXPECT_EQ(b.size(), 10u + Buffer::kHeadroom);
  EXPECT_FALSE(b.Prepend(1));
  EXPECT_EQ(b.size(), 10u + Buffer::kHeadroom);
}

TEST(BufferTest, CopyPrependAndRemovePrefixKeepTheBytes) {
  Buffer b = Buffer::Copy("payload");
  EXPECT_EQ(b.owner(), nullptr);
  ASSERT_TRUE(b.Prepend(4));
  std::memcpy(b.data(), "head", 4);
  EXPECT_EQ(b.AsStringView(), "headpayload");
  b.RemovePrefix(4);
  EXPECT_EQ(b.AsStringView(), "payload");
  // RemovePrefix gives the bytes back to the headroom.
  EXPECT_TRUE(b.Prepend(Buffer::kHeadroom));
}

TEST(BufferTest, MovedFromHeapBufferIsEmpty) {
  Buffer a = Buffer::Copy("abc");
  const std::byte* data = a.data();
  Buffer b(std::move(a));
  EXPECT_EQ(b.data(), data);
  EXPECT_EQ(b.AsStringView(), "abc");
  // NOLINTBEGIN(bugprone-use-after-move,clang-analyzer-cplusplus.Move): the moved-from state
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(a.owner(), nullptr);
  EXPECT_FALSE(a.Prepend(1));
  // NOLINTEND(bugprone-use-after-move,clang-analyzer-cplusplus.Move)
  Buffer c = Buffer::Copy("xyz");
  c = std::move(b);  // frees c's old block (ASan checks it is not leaked)
  EXPECT_EQ(c.AsStringView(), "abc");
}

TEST(BufferTest, DefaultBufferIsEmptyAndOwnsNothing) {
  Buffer b;
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.data(), nullptr);
  EXPECT_EQ(b.owner(), nullptr);
  EXPECT_FALSE(b.Prepend(1));
}

// --- Wrap: the view, and the owner told exactly once ------------------------

TEST(BufferTest, WrapViewsTheDataAfterTheGrantedHeadroom) {
  Slice s;
  auto owner = std::make_shared<RecordingOwner>();
  {
    Buffer b = Buffer::Wrap(s.span(), owner, 32);
    EXPECT_EQ(b.data(), s.bytes.data() + 32);
    EXPECT_EQ(b.size(), s.bytes.size() - 32);
    EXPECT_EQ(b.owner(), owner.get());
    EXPECT_TRUE(owner->calls().empty());
  }
  auto calls = owner->calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].data, s.bytes.data());
  EXPECT_EQ(calls[0].size, s.bytes.size());
}

TEST(BufferTest, PrependIntoGrantedHeadroomAndNoFurther) {
  Slice s;
  auto owner = std::make_shared<RecordingOwner>();
  Buffer b = Buffer::Wrap(s.span(), owner, 32);
  EXPECT_TRUE(b.Prepend(32));
  EXPECT_EQ(b.data(), s.bytes.data());
  EXPECT_EQ(b.size(), s.bytes.size());
  EXPECT_FALSE(b.Prepend(1));  // before the lent range: refused
  EXPECT_EQ(b.data(), s.bytes.data());

  Buffer none = Buffer::Wrap(s.span().subspan(0, 16), owner);
  EXPECT_FALSE(none.Prepend(1));  // no headroom granted
  EXPECT_EQ(none.size(), 16u);
}

TEST(BufferTest, ReleaseGetsTheWholeRangeAfterRemovePrefixAndPrepend) {
  Slice s;
  auto owner = std::make_shared<RecordingOwner>();
  {
    Buffer b = Buffer::Wrap(s.span(), owner, 8);
    b.RemovePrefix(100);
    ASSERT_TRUE(b.Prepend(40));
    b.RemovePrefix(3);
    EXPECT_EQ(b.data(), s.bytes.data() + 8 + 100 - 40 + 3);
  }
  auto calls = owner->calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].data, s.bytes.data());
  EXPECT_EQ(calls[0].size, s.bytes.size());
}

TEST(BufferTest, MovesDoNotCallTheOwnerAndTheLastHolderReleasesOnce) {
  Slice s;
  auto owner = std::make_shared<RecordingOwner>();
  {
    Buffer a = Buffer::Wrap(s.span(), owner, 16);
    Buffer b(std::move(a));
    Buffer c;
    c = std::move(b);
    EXPECT_TRUE(owner->calls().empty());
    // The moved-from Buffers are empty and own nothing.
    // NOLINTBEGIN(bugprone-use-after-move,clang-analyzer-cplusplus.Move)
    EXPECT_TRUE(a.empty());
    EXPECT_EQ(a.owner(), nullptr);
    EXPECT_EQ(a.data(), nullptr);
    EXPECT_TRUE(b.empty());
    EXPECT_EQ(b.owner(), nullptr);
    // NOLINTEND(bugprone-use-after-move,clang-analyzer-cplusplus.Move)
    EXPECT_EQ(c.owner(), owner.get());
    EXPECT_EQ(c.data(), s.bytes.data() + 16);
  }
  auto calls = owner->calls();
  ASSERT_EQ(calls.size(), 1u);  // c only; a and b were moved from
  EXPECT_EQ(calls[0].data, s.bytes.data());
  EXPECT_EQ(calls[0].size, s.bytes.size());
}

TEST(BufferTest, MoveAssignOverAnOwnedBufferReleasesTheOldRangeThere) {
  Slice s1, s2;
  auto owner1 = std::make_shared<RecordingOwner>();
  auto owner2 = std::make_shared<RecordingOwner>();
  Buffer a = Buffer::Wrap(s1.span(), owner1);
  Buffer b = Buffer::Wrap(s2.span(), owner2, 4);
  a = std::move(b);
  auto calls1 = owner1->calls();
  ASSERT_EQ(calls1.size(), 1u);  // at the assignment, not later
  EXPECT_EQ(calls1[0].data, s1.bytes.data());
  EXPECT_EQ(calls1[0].size, s1.bytes.size());
  EXPECT_TRUE(owner2->calls().empty());
  EXPECT_EQ(a.owner(), owner2.get());

  a = Buffer::Copy("heap");  // heap over owned: owner2 told, a is wharf's now
  auto calls2 = owner2->calls();
  ASSERT_EQ(calls2.size(), 1u);
  EXPECT_EQ(calls2[0].data, s2.bytes.data());
  EXPECT_EQ(calls2[0].size, s2.bytes.size());
  EXPECT_EQ(a.owner(), nullptr);
  EXPECT_EQ(a.AsStringView(), "heap");

  a = Buffer::Wrap(s1.span(), owner1);  // owned over heap: the heap block is freed
  EXPECT_EQ(owner1->calls().size(), 1u);
  a = Buffer();
  EXPECT_EQ(owner1->calls().size(), 2u);
}

TEST(BufferTest, SelfMoveAssignKeepsTheRange) {
  Slice s;
  auto owner = std::make_shared<RecordingOwner>();
  {
    Buffer a = Buffer::Wrap(s.span(), owner);
    Buffer& alias = a;  // through a reference, as generic code would
    a = std::move(alias);
    EXPECT_TRUE(owner->calls().empty());
    EXPECT_EQ(a.data(), s.bytes.data());
    EXPECT_EQ(a.owner(), owner.get());
  }
  EXPECT_EQ(owner->calls().size(), 1u);
}

TEST(BufferTest, MovingThroughAGrowingVectorNeverCallsTheOwner) {
  std::vector<Slice> slices(100);
  auto owner = std::make_shared<RecordingOwner>();
  std::vector<Buffer> buffers;
  // No reserve: the reallocations are the moves under test.
  for (Slice& s : slices) {
    // NOLINTNEXTLINE(performance-inefficient-vector-operation)
    buffers.push_back(Buffer::Wrap(s.span(), owner));
  }
  EXPECT_TRUE(owner->calls().empty());
  buffers.clear();
  auto calls = owner->calls();
  ASSERT_EQ(calls.size(), slices.size());
  for (size_t i = 0; i < slices.size(); ++i) {
    EXPECT_EQ(calls[i].data, slices[i].bytes.data());
    EXPECT_EQ(calls[i].size, slices[i].bytes.size());
  }
}

TEST(BufferTest, BuffersKeepTheirOwnerAliveUntilItsLastRelease) {
  Slice s;
  bool destroyed = false;
  auto owner = std::make_shared<RecordingOwner>(&destroyed);
  RecordingOwner* raw = owner.get();
  Buffer a = Buffer::Wrap(s.span().subspan(0, 128), owner);
  Buffer b = Buffer::Wrap(s.span().subspan(128), std::move(owner));
  a = Buffer();
  EXPECT_FALSE(destroyed);
  EXPECT_EQ(raw->calls().size(), 1u);
  EXPECT_EQ(b.owner(), raw);
  b = Buffer();
  EXPECT_TRUE(destroyed);
}

TEST(BufferTest, HeadroomPastTheRangeIsCutAndTheRangeStillReleased) {
  Slice s;
  auto owner = std::make_shared<RecordingOwner>();
  {
    Buffer b = Buffer::Wrap(s.span().subspan(0, 10), owner, 50);
    EXPECT_TRUE(b.empty());
    EXPECT_EQ(b.owner(), owner.get());
    EXPECT_TRUE(b.Prepend(10));
    EXPECT_FALSE(b.Prepend(1));
  }
  auto calls = owner->calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].data, s.bytes.data());
  EXPECT_EQ(calls[0].size, 10u);
}

TEST(BufferTest, EmptyLentRangeIsStillReleased) {
  auto owner = std::make_shared<RecordingOwner>();
  { Buffer b = Buffer::Wrap(std::span<std::byte>(), owner); }
  auto calls = owner->calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].size, 0u);
}

TEST(BufferTest, WrapWithACallableCallsItOnceWithTheWholeRange) {
  Slice s;
  std::vector<std::pair<std::byte*, size_t>> released;
  {
    Buffer a = Buffer::Wrap(
        s.span(),
        [&released](std::span<std::byte> whole) {
          released.emplace_back(whole.data(), whole.size());
        },
        24);
    EXPECT_NE(a.owner(), nullptr);  // not wharf's
    EXPECT_EQ(a.data(), s.bytes.data() + 24);
    a.RemovePrefix(5);
    Buffer b = std::move(a);
    EXPECT_TRUE(released.empty());
  }
  ASSERT_EQ(released.size(), 1u);
  EXPECT_EQ(released[0].first, s.bytes.data());
  EXPECT_EQ(released[0].second, s.bytes.size());
}

TEST(BufferTest, WrapTakesAMoveOnlyCallable) {
  Slice s;
  int released = 0;
  auto token = std::make_unique<int>(7);
  {
    Buffer b = Buffer::Wrap(
        s.span(), [&released, t = std::move(token)](std::span<std::byte>) { released += *t; });
  }
  EXPECT_EQ(released, 7);
}

TEST(BufferTest, NullOwnerIsToldNothingButIsNotWharfs) {
  // Static-like memory: the Buffer must neither free it nor call anyone.
  static std::array<std::byte, 16> fixed{};
  {
    Buffer b = Buffer::Wrap(fixed, nullptr, 4);
    EXPECT_NE(b.owner(), nullptr);
    EXPECT_EQ(b.data(), fixed.data() + 4);
    EXPECT_EQ(b.size(), 12u);
  }  // a delete[] of `fixed` here would crash (and ASan would name it)
}

// --- threads: Release runs where the Buffer is destroyed --------------------

TEST(BufferTest, ReleaseRunsOnTheThreadThatDestroysTheBuffer) {
  Slice s;
  auto owner = std::make_shared<RecordingOwner>();
  Buffer b = Buffer::Wrap(s.span(), owner, 16);
  std::thread::id worker_id;
  std::thread worker([&worker_id, moved = std::move(b)]() mutable {
    worker_id = std::this_thread::get_id();
    moved = Buffer();
  });
  worker.join();
  auto calls = owner->calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].thread, worker_id);
  EXPECT_NE(calls[0].thread, std::this_thread::get_id());
  EXPECT_EQ(calls[0].data, s.bytes.data());
  EXPECT_EQ(calls[0].size, s.bytes.size());
}

// Counts releases per slice in memory that outlives the owner, so the test
// can check them after the owner's last Release has destroyed it.
class SliceCountingOwner : public BufferOwner {
 public:
  SliceCountingOwner(std::byte* first, size_t slice_bytes, std::vector<std::atomic<int>>* counts,
                     std::atomic<bool>* destroyed)
      : first_(first), slice_bytes_(slice_bytes), counts_(counts), destroyed_(destroyed) {}
  ~SliceCountingOwner() override { destroyed_->store(true); }
  void Release(std::span<std::byte> whole) noexcept override {
    size_t index = static_cast<size_t>(whole.data() - first_) / slice_bytes_;
    if (whole.size() == slice_bytes_ && index < counts_->size()) (*counts_)[index]++;
  }

 private:
  std::byte* first_;
  size_t slice_bytes_;
  std::vector<std::atomic<int>>* counts_;
  std::atomic<bool>* destroyed_;
};

TEST(BufferTest, OneOwnerReleasedFromManyThreadsOncePerRange) {
  constexpr size_t kThreads = 4;
  constexpr size_t kPerThread = 64;
  constexpr size_t kSliceBytes = 32;
  std::vector<std::byte> heap(kThreads * kPerThread * kSliceBytes);
  std::vector<std::atomic<int>> counts(kThreads * kPerThread);
  std::atomic<bool> destroyed{false};
  auto owner = std::make_shared<SliceCountingOwner>(heap.data(), kSliceBytes, &counts, &destroyed);
  std::vector<std::vector<Buffer>> batches(kThreads);
  for (size_t i = 0; i < kThreads * kPerThread; ++i) {
    std::span<std::byte> slice(heap.data() + i * kSliceBytes, kSliceBytes);
    batches[i % kThreads].push_back(Buffer::Wrap(slice, owner, 8));
  }
  owner.reset();  // the Buffers alone keep it alive now
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (auto& batch : batches) {
    threads.emplace_back([moved = std::move(batch)]() mutable { moved.clear(); });
  }
  for (auto& t : threads) t.join();
  EXPECT_TRUE(destroyed.load());  // after the last Release, on whichever thread ran it
  for (size_t i = 0; i < counts.size(); ++i) EXPECT_EQ(counts[i].load(), 1) << "slice " << i;
}

}  // namespace
}  // namespace wharf
