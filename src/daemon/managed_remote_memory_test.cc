// daemon/managed_remote_memory_test.cc: remote memory through wharfd. A
// managed endpoint holds regions of an embedded peer's memory: its writes
// leave from its shared heap and its reads land there (a Buffer from
// elsewhere takes one copy, counted); rights and handles are refused with
// the engine's own errors. And a managed endpoint's asked regions come from
// its heap: a holder's write with immediate shows in the application's
// memory, in place, and the regions end (holders told) when it exits.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/testing/counter_of.h"
#include "client/testing/region_events.h"
#include "client/testing/server_thread.h"
#include "daemon/testing/daemon_thread.h"
#include "wharf/endpoint.h"
#include "wharf/remote_memory.h"

namespace wharf {
namespace {

using namespace std::chrono_literals;
using testing_support::CounterOf;

Buffer Pattern(Buffer b, size_t seed) {
  for (size_t i = 0; i < b.size(); ++i) b.data()[i] = static_cast<std::byte>((i * 131 + seed) % 251);
  return b;
}

bool Same(const Buffer& a, const Buffer& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size()) == 0;
}

std::optional<RegionEvent> Next(RemoteMemory& memory, RegionEvent::Kind kind) {
  return testing::NextRegionEvent(memory, kind);
}

class ManagedRemoteMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = daemon::testing::DaemonThread::Start({{"limits.heap_bytes", "64MiB"}});
    ASSERT_TRUE(d.ok()) << d.status();
    daemon_ = std::move(*d);
  }
  std::unique_ptr<Endpoint> OpenManaged() {
    auto ep = Endpoint::Open({.address = "ucx://127.0.0.1:0",
                              .hosting = Hosting::kManaged,
                              .daemon_socket = daemon_->socket()});
    EXPECT_TRUE(ep.ok()) << ep.status();
    return ep.ok() ? std::move(*ep) : nullptr;
  }
  // A managed lender and an embedded holder driven by its own thread.
  bool OpenManagedLenderAndHolder() {
    lender_ = OpenManaged();
    holder_ = OpenEmbedded();
    if (lender_ == nullptr || holder_ == nullptr) return false;
    lender_memory_ = std::make_unique<RemoteMemory>(*lender_);
    holder_memory_ = std::make_unique<RemoteMemory>(*holder_);
    holder_loop_ = std::make_unique<testing::ServerThread>(*holder_, 5ms);
    return true;
  }
  static std::unique_ptr<Endpoint> OpenEmbedded() {
    auto ep = Endpoint::Open({.address = "ucx://127.0.0.1:0", .hosting = Hosting::kEmbedded});
    EXPECT_TRUE(ep.ok()) << ep.status();
    return ep.ok() ? std::move(*ep) : nullptr;
  }

  std::unique_ptr<daemon::testing::DaemonThread> daemon_;
  std::unique_ptr<Endpoint> lender_, holder_;
  std::unique_ptr<RemoteMemory> lender_memory_, holder_memory_;
  std::unique_ptr<testing::ServerThread> holder_loop_;  // destroyed first
};

TEST_F(ManagedRemoteMemoryTest, AManagedHolderMovesDataBetweenItsHeapAndTheRegion) {
  auto lender = OpenEmbedded();
  ASSERT_NE(lender, nullptr);
  RemoteMemory lender_memory(*lender);
  testing::ServerThread lender_loop(*lender, 5ms);
  auto holder = OpenManaged();
  ASSERT_NE(holder, nullptr);
  RemoteMemory memory(*holder);

  auto region = memory.Ask(lender->address(), {.size = 8 << 20});
  ASSERT_TRUE(region.ok()) << region.status();
  const uint64_t copies_before = CounterOf(holder->Stats(), "managed.copied_sends");
  for (size_t size : {size_t{1}, size_t{4096}, size_t{65537}, size_t{4} << 20}) {
    // From the heap (AllocateBuffer), back into the heap (Read's Buffer).
    Buffer data = Pattern(holder->AllocateBuffer(size), size);
    Buffer want = Buffer::Copy(data.span());
    ASSERT_TRUE(memory.Write(*region, 8, std::move(data)).ok()) << size;
    Result<Buffer> back = memory.Read(*region, 8, size);
    ASSERT_TRUE(back.ok()) << size << ": " << back.status();
    EXPECT_TRUE(Same(*back, want)) << size;
  }
  // Neither direction copied anything on this side.
  EXPECT_EQ(CounterOf(holder->Stats(), "managed.copied_sends"), copies_before);

  // A Buffer of the application's own (not in the heap) still works, with
  // one copy each way.
  Buffer mine = Pattern(Buffer::Allocate(1000), 5);
  Buffer mine_copy = Buffer::Copy(mine.span());
  ASSERT_TRUE(memory.Write(*region, 1 << 20, std::move(mine)).ok());
  Completion read = memory.IRead(*region, 1 << 20, Buffer::Allocate(1000));
  ASSERT_TRUE(read.Wait(10s).ok()) << read.status();
  EXPECT_TRUE(Same(read.TakeMessage(), mine_copy));
  EXPECT_EQ(CounterOf(holder->Stats(), "managed.copied_sends"), copies_before + 2);

  EXPECT_EQ(*memory.CompareAndSwap(*region, 0, 0, 41), 0u);
  EXPECT_EQ(*memory.FetchAdd(*region, 0, 1), 41u);
  EXPECT_EQ(*memory.FetchAdd(*region, 0, 0), 42u);
  EXPECT_EQ(memory.FetchAdd(*region, 3, 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(memory.Read(*region, (8 << 20) - 2, 4).status().code(), StatusCode::kOutOfRange);

  ASSERT_TRUE(memory.WriteWithImmediate(*region, 64, Buffer::Copy("ping"), 9).ok());
  auto imm = Next(lender_memory, RegionEvent::Kind::kImmediate);
  ASSERT_TRUE(imm.has_value());
  EXPECT_EQ(imm->value, 9u);
  EXPECT_EQ(std::memcmp(lender_memory.LocalBytes(imm->region).data() + 64, "ping", 4), 0);

  ASSERT_TRUE(memory.Release(*region).ok());
  EXPECT_TRUE(Next(lender_memory, RegionEvent::Kind::kReturned).has_value());
  EXPECT_EQ(memory.Read(*region, 0, 8).status().code(), StatusCode::kNotFound);

  auto read_only = memory.Ask(lender->address(), {.size = 64, .access = kRegionRead});
  ASSERT_TRUE(read_only.ok()) << read_only.status();
  EXPECT_EQ(memory.Write(*read_only, 0, Buffer::Copy("x")).code(), StatusCode::kPermissionDenied);
}

TEST_F(ManagedRemoteMemoryTest, AManagedApplicationLendsFromItsHeap) {
  ASSERT_TRUE(OpenManagedLenderAndHolder());
  Endpoint* lender = lender_.get();
  Endpoint* holder = holder_.get();
  RemoteMemory& lender_memory = *lender_memory_;
  RemoteMemory& memory = *holder_memory_;

  // From the pool, which is the heap: zeroed, aligned as asked.
  auto lent = lender_memory.Lend(holder->address(),
                                 {.size = 8192, .alignment = 4096,
                                  .access = kRegionRead | kRegionWrite});
  ASSERT_TRUE(lent.ok()) << lent.status();
  ASSERT_EQ(lent->bytes.size(), 8192u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(lent->bytes.data()) % 4096, 0u);
  auto got = Next(memory, RegionEvent::Kind::kLent);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->lent.size, 8192u);
  Buffer data = Pattern(Buffer::Allocate(8192), 11);
  ASSERT_TRUE(memory.Write(got->lent, 0, Buffer::Copy(data.span())).ok());
  EXPECT_EQ(std::memcmp(lent->bytes.data(), data.data(), 8192), 0);
  EXPECT_EQ(lender_memory.LocalBytes(lent->id).data(), lent->bytes.data());
  ASSERT_TRUE(lender_memory.Revoke(lent->id).ok());
  auto released = Next(memory, RegionEvent::Kind::kReleased);
  ASSERT_TRUE(released.has_value());
  EXPECT_EQ(memory.Write(got->lent, 0, Buffer::Copy("x")).code(), StatusCode::kNotFound);

  // Its own memory, in place: from the heap only.
  Buffer mine = lender->AllocateBuffer(4096);
  std::memset(mine.data(), 0, mine.size());
  auto own = lender_memory.LendMemory(holder->address(), mine.span(), kRegionAtomic);
  ASSERT_TRUE(own.ok()) << own.status();
  auto got_own = Next(memory, RegionEvent::Kind::kLent);
  ASSERT_TRUE(got_own.has_value());
  EXPECT_EQ(*memory.FetchAdd(got_own->lent, 16, 7), 0u);
  uint64_t word;
  std::memcpy(&word, mine.data() + 16, 8);
  EXPECT_EQ(word, 7u);
  // Over wharfd's message limit: refused here, the session intact.
  EXPECT_EQ(lender_memory.Lend(holder->address(), {.size = (64 << 20) + 1}).status().code(),
            StatusCode::kInvalidArgument);
  std::vector<std::byte> elsewhere(64);
  EXPECT_EQ(lender_memory.LendMemory(holder->address(), elsewhere).status().code(),
            StatusCode::kInvalidArgument);
  // The holder gives it back: the lender hears.
  ASSERT_TRUE(memory.Release(got_own->lent).ok());
  auto returned = Next(lender_memory, RegionEvent::Kind::kReturned);
  ASSERT_TRUE(returned.has_value());
  EXPECT_EQ(returned->region, own->id);
}

TEST_F(ManagedRemoteMemoryTest, AManagedLendersRegionsComeFromItsHeap) {
  ASSERT_TRUE(OpenManagedLenderAndHolder());
  Endpoint* lender = lender_.get();
  RemoteMemory& lender_memory = *lender_memory_;
  RemoteMemory& memory = *holder_memory_;
  // The managed lender's application only waits for events: wharfd's loop
  // serves the holder's operations.
  auto region = memory.Ask(lender->address(), {.size = 1 << 20, .alignment = 4096});
  ASSERT_TRUE(region.ok()) << region.status();
  Buffer data = Pattern(Buffer::Allocate(1 << 20), 3);
  Buffer want = Buffer::Copy(data.span());
  ASSERT_TRUE(memory.WriteWithImmediate(*region, 0, std::move(data), 77).ok());
  auto imm = Next(lender_memory, RegionEvent::Kind::kImmediate);
  ASSERT_TRUE(imm.has_value());
  EXPECT_EQ(imm->value, 77u);
  EXPECT_EQ(imm->length, 1u << 20);
  // The holder's bytes, in place in the application's heap.
  std::span<std::byte> bytes = lender_memory.LocalBytes(imm->region);
  ASSERT_EQ(bytes.size(), 1u << 20);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(bytes.data()) % 4096, 0u);
  EXPECT_EQ(std::memcmp(bytes.data(), want.data(), want.size()), 0);
  EXPECT_EQ(*memory.FetchAdd(*region, 8, 5), static_cast<uint64_t>(
                                                  [&] { uint64_t w; std::memcpy(&w, want.data() + 8, 8); return w; }()));

  ASSERT_TRUE(memory.Release(*region).ok());
  auto returned = Next(lender_memory, RegionEvent::Kind::kReturned);
  ASSERT_TRUE(returned.has_value());
  EXPECT_EQ(returned->region, imm->region);
  EXPECT_TRUE(lender_memory.LocalBytes(imm->region).empty());

  // Regions take at most half the receive area (16 of 32 MiB here).
  EXPECT_EQ(memory.Ask(lender->address(), {.size = 20 << 20}).status().code(),
            StatusCode::kResourceExhausted);

  // The application exits holding nothing, lending one: its holder hears.
  auto kept = memory.Ask(lender->address(), {.size = 4096});
  ASSERT_TRUE(kept.ok()) << kept.status();
  lender_memory_.reset();
  lender_.reset();
  auto released = Next(memory, RegionEvent::Kind::kReleased);
  ASSERT_TRUE(released.has_value());
  EXPECT_EQ(released->region, kept->handle);
}

}  // namespace
}  // namespace wharf
