// RemoteMemory through the public API, embedded: two endpoints at ucx://
// on loopback, over UCX's tcp and over its shared memory. The lender is
// driven only by its own endpoint loop (a ServerThread), as an idle
// application's would be: over UCX's tcp a one-sided operation is served
// by the target's progress, so this proves the engine's loop provides it.
#include "wharf/remote_memory.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "client/testing/region_events.h"
#include "client/testing/server_thread.h"

namespace wharf {
namespace {

using namespace std::chrono_literals;
using Settings = std::vector<std::pair<std::string, std::string>>;

struct Path {
  const char* name;
  Settings settings;
  bool reports_death;
};

Buffer Pattern(size_t n, size_t seed) {
  Buffer b = Buffer::Allocate(n);
  for (size_t i = 0; i < n; ++i) b.data()[i] = static_cast<std::byte>((i * 131 + seed) % 251);
  return b;
}

bool SameBytes(std::span<const std::byte> a, std::span<const std::byte> b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}

class RemoteMemoryTest : public ::testing::TestWithParam<Path> {
 protected:
  void SetUp() override {
    lender_ = Open();
    holder_ = Open();
    ASSERT_TRUE(lender_ && holder_);
    lender_memory_ = std::make_unique<RemoteMemory>(*lender_);
    holder_memory_ = std::make_unique<RemoteMemory>(*holder_);
    lender_loop_ = std::make_unique<testing::ServerThread>(*lender_, 5ms);
  }
  void TearDown() override {
    lender_loop_.reset();
  }

  std::unique_ptr<Endpoint> Open() {
    Settings settings = GetParam().settings;
    settings.emplace_back("ucx.pool_bytes", "33554432");
    settings.emplace_back("ucx.max_regions", "16");
    auto ep = Endpoint::Open({.address = "ucx://127.0.0.1:0",
                              .settings = std::move(settings),
                              .hosting = Hosting::kEmbedded});
    EXPECT_TRUE(ep.ok()) << ep.status();
    return ep.ok() ? std::move(*ep) : nullptr;
  }

  static std::optional<RegionEvent> Next(RemoteMemory& memory, RegionEvent::Kind kind) {
    return testing::NextRegionEvent(memory, kind);
  }

  std::unique_ptr<Endpoint> lender_, holder_;
  std::unique_ptr<RemoteMemory> lender_memory_, holder_memory_;
  std::unique_ptr<testing::ServerThread> lender_loop_;
};

TEST_P(RemoteMemoryTest, AnAskedRegionIsWrittenReadAndAddedToByteForByte) {
  RemoteMemory& memory = *holder_memory_;
  auto region = memory.Ask(lender_->address(), {.size = 4 << 20, .alignment = 64});
  ASSERT_TRUE(region.ok()) << region.status();
  EXPECT_EQ(region->size, 4u << 20);
  EXPECT_GT(region->expires, std::chrono::steady_clock::now() + 50s);

  for (size_t size : {size_t{0}, size_t{1}, size_t{4095}, size_t{64 << 10}, size_t{3 << 20}}) {
    Buffer data = Pattern(size, size);
    Buffer copy = Buffer::Copy(data.span());
    ASSERT_TRUE(memory.Write(*region, 100, std::move(data)).ok()) << size;
    Result<Buffer> back = memory.Read(*region, 100, size);
    ASSERT_TRUE(back.ok()) << size << ": " << back.status();
    EXPECT_TRUE(SameBytes(back->span(), copy.span())) << size;
  }

  // Compare-and-swap, then fetch-add, on one word.
  auto was = memory.CompareAndSwap(*region, 8, 0, 5);
  ASSERT_TRUE(was.ok()) << was.status();
  EXPECT_EQ(*was, 0u);
  EXPECT_EQ(*memory.CompareAndSwap(*region, 8, 0, 9), 5u);  // not 0: unchanged
  EXPECT_EQ(*memory.FetchAdd(*region, 8, 10), 5u);
  EXPECT_EQ(*memory.FetchAdd(*region, 8, 0), 15u);

  // Write with immediate: the lender's event comes after the data, which
  // its application reads in its own memory.
  ASSERT_TRUE(memory.WriteWithImmediate(*region, 4096, Buffer::Copy("immediate!"), 77).ok());
  auto event = Next(*lender_memory_, RegionEvent::Kind::kImmediate);
  ASSERT_TRUE(event.has_value());
  EXPECT_EQ(event->value, 77u);
  EXPECT_EQ(event->offset, 4096u);
  EXPECT_EQ(event->length, 10u);
  std::span<std::byte> bytes = lender_memory_->LocalBytes(event->region);
  ASSERT_EQ(bytes.size(), 4u << 20);
  EXPECT_EQ(std::memcmp(bytes.data() + 4096, "immediate!", 10), 0);

  ASSERT_TRUE(memory.Release(*region).ok());
  auto returned = Next(*lender_memory_, RegionEvent::Kind::kReturned);
  ASSERT_TRUE(returned.has_value());
  EXPECT_EQ(returned->region, event->region);
  EXPECT_EQ(memory.Read(*region, 0, 8).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(memory.Release(*region).code(), StatusCode::kNotFound);
}

TEST_P(RemoteMemoryTest, ManyWritesInFlightAllLand) {
  RemoteMemory& memory = *holder_memory_;
  auto region = memory.Ask(lender_->address(), {.size = 1 << 20});
  ASSERT_TRUE(region.ok()) << region.status();
  constexpr size_t kChunk = 64 << 10;
  std::vector<Completion> writes;
  for (size_t i = 0; i < 16; ++i) {
    writes.push_back(memory.IWrite(*region, i * kChunk, Pattern(kChunk, i)));
  }
  for (Completion& c : writes) ASSERT_TRUE(c.Wait(10s).ok()) << c.status();
  Completion read = memory.IRead(*region, 0, holder_->AllocateBuffer(16 * kChunk));
  ASSERT_TRUE(read.Wait(10s).ok()) << read.status();
  Buffer all = read.TakeMessage();
  for (size_t i = 0; i < 16; ++i) {
    Buffer want = Pattern(kChunk, i);
    EXPECT_TRUE(SameBytes(all.span().subspan(i * kChunk, kChunk), want.span())) << i;
  }
}

TEST_P(RemoteMemoryTest, RightsBoundsAndHandlesAreCheckedBeforeAnythingMoves) {
  RemoteMemory& memory = *holder_memory_;
  auto region = memory.Ask(lender_->address(), {.size = 4096, .access = kRegionRead});
  ASSERT_TRUE(region.ok()) << region.status();
  Status write = memory.Write(*region, 0, Buffer::Copy("no"));
  EXPECT_EQ(write.code(), StatusCode::kPermissionDenied) << write;
  EXPECT_EQ(memory.FetchAdd(*region, 0, 1).status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(memory.Read(*region, 4090, 7).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(memory.Read(*region, UINT64_MAX, 2).status().code(), StatusCode::kOutOfRange);
  ASSERT_TRUE(memory.Read(*region, 4088, 8).ok());

  auto atomic = memory.Ask(lender_->address(), {.size = 64});
  ASSERT_TRUE(atomic.ok()) << atomic.status();
  EXPECT_EQ(memory.FetchAdd(*atomic, 4, 1).status().code(), StatusCode::kInvalidArgument);

  RemoteRegion forged = *region;
  forged.handle += 1000;
  EXPECT_EQ(memory.Read(forged, 0, 8).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(memory.Write(forged, 0, Buffer::Copy("x")).code(), StatusCode::kNotFound);

  // Asks the lender cannot take.
  EXPECT_EQ(memory.Ask(lender_->address(), {.size = 64 << 20}).status().code(),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(memory.Ask(lender_->address(), {.size = 64, .alignment = 1 << 16}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(memory.Ask(lender_->address(), {.size = 64, .lifetime = 0ms}).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_P(RemoteMemoryTest, AnExpiredRegionRefusesEverythingAndBothSidesHear) {
  RemoteMemory& memory = *holder_memory_;
  auto region = memory.Ask(lender_->address(), {.size = 4096, .lifetime = 300ms});
  ASSERT_TRUE(region.ok()) << region.status();
  ASSERT_TRUE(memory.Write(*region, 0, Buffer::Copy("before")).ok());
  auto released = Next(memory, RegionEvent::Kind::kReleased);
  ASSERT_TRUE(released.has_value());
  EXPECT_EQ(released->region, region->handle);
  EXPECT_TRUE(Next(*lender_memory_, RegionEvent::Kind::kReturned).has_value());
  const StatusCode after = memory.Write(*region, 0, Buffer::Copy("after")).code();
  EXPECT_TRUE(after == StatusCode::kNotFound || after == StatusCode::kDeadlineExceeded) << StatusCodeName(after);
  EXPECT_FALSE(memory.Read(*region, 0, 6).ok());
}

TEST_P(RemoteMemoryTest, ARegionLentUnaskedArrivesAsAnEventAndEndsOnRevoke) {
  auto lent = lender_memory_->Lend(holder_->address(),
                                   {.size = 8192, .access = kRegionRead | kRegionWrite});
  ASSERT_TRUE(lent.ok()) << lent.status();
  ASSERT_EQ(lent->bytes.size(), 8192u);
  auto got = Next(*holder_memory_, RegionEvent::Kind::kLent);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->lent.size, 8192u);
  EXPECT_EQ(got->lent.access, kRegionRead | kRegionWrite);
  Buffer data = Pattern(8192, 3);
  Buffer copy = Buffer::Copy(data.span());
  ASSERT_TRUE(holder_memory_->Write(got->lent, 0, std::move(data)).ok());
  EXPECT_TRUE(SameBytes(lent->bytes, copy.span()));

  ASSERT_TRUE(lender_memory_->Revoke(lent->id).ok());
  EXPECT_EQ(lender_memory_->Revoke(lent->id).code(), StatusCode::kNotFound);
  EXPECT_TRUE(lender_memory_->LocalBytes(lent->id).empty());
  auto released = Next(*holder_memory_, RegionEvent::Kind::kReleased);
  ASSERT_TRUE(released.has_value());
  EXPECT_EQ(released->region, got->lent.handle);
  EXPECT_EQ(holder_memory_->Write(got->lent, 0, Buffer::Copy("x")).code(), StatusCode::kNotFound);
}

TEST_P(RemoteMemoryTest, TheApplicationsOwnMemoryLentIsWrittenInPlace) {
  std::vector<std::byte> mine(4096, std::byte{0});
  auto lent = lender_memory_->LendMemory(holder_->address(), mine, kRegionWrite | kRegionAtomic);
  ASSERT_TRUE(lent.ok()) << lent.status();
  EXPECT_EQ(lent->bytes.data(), mine.data());
  auto got = Next(*holder_memory_, RegionEvent::Kind::kLent);
  ASSERT_TRUE(got.has_value());
  ASSERT_TRUE(holder_memory_->Write(got->lent, 10, Buffer::Copy("in place")).ok());
  EXPECT_EQ(std::memcmp(mine.data() + 10, "in place", 8), 0);
  EXPECT_EQ(*holder_memory_->FetchAdd(got->lent, 1024, 3), 0u);
  uint64_t word;
  std::memcpy(&word, mine.data() + 1024, 8);
  EXPECT_EQ(word, 3u);
  EXPECT_EQ(holder_memory_->Read(got->lent, 0, 8).status().code(), StatusCode::kPermissionDenied);
  ASSERT_TRUE(lender_memory_->Revoke(lent->id).ok());
  ASSERT_TRUE(Next(*holder_memory_, RegionEvent::Kind::kReleased).has_value());
}

TEST_P(RemoteMemoryTest, ALenderThatExitsEndsItsRegionsAtTheHolder) {
  if (!GetParam().reports_death) {
    GTEST_SKIP() << "UCX 1.13's shared memory does not report a peer's death";
  }
  RemoteMemory& memory = *holder_memory_;
  auto region = memory.Ask(lender_->address(), {.size = 4096});
  ASSERT_TRUE(region.ok()) << region.status();
  lender_loop_.reset();
  lender_memory_.reset();
  lender_.reset();
  auto released = Next(memory, RegionEvent::Kind::kReleased);
  ASSERT_TRUE(released.has_value());
  EXPECT_EQ(released->region, region->handle);
  EXPECT_EQ(memory.Read(*region, 0, 8).status().code(), StatusCode::kNotFound);
}

TEST_P(RemoteMemoryTest, OperationsAfterTheEndpointClosedFailCleanly) {
  auto region = holder_memory_->Ask(lender_->address(), {.size = 4096});
  ASSERT_TRUE(region.ok()) << region.status();
  holder_.reset();
  EXPECT_FALSE(holder_memory_->Read(*region, 0, 8).ok());
  EXPECT_FALSE(holder_memory_->Write(*region, 0, Buffer::Copy("x")).ok());
  EXPECT_FALSE(holder_memory_->Ask("ucx://127.0.0.1:1", {.size = 64}).ok());
  EXPECT_FALSE(holder_memory_->PollEvent().has_value());
}

INSTANTIATE_TEST_SUITE_P(
    Paths, RemoteMemoryTest,
    ::testing::Values(Path{"tcp", {{"ucx.tls", "tcp"}, {"ucx.devices", "lo"}}, true},
                      Path{"shm",
                           {{"ucx.tls", "sm,tcp"}, {"ucx.detect_peer_failure", "false"}},
                           false}),
    [](const ::testing::TestParamInfo<Path>& info) { return std::string(info.param.name); });

TEST(RemoteMemoryWithoutUcxTest, AHomaEndpointSaysRemoteMemoryNeedsUcx) {
  auto a = Endpoint::Open({.address = "homa://127.0.0.1:0", .hosting = Hosting::kEmbedded});
  ASSERT_TRUE(a.ok()) << a.status();
  RemoteMemory memory(**a);
  auto region = memory.Ask((*a)->address(), {.size = 64});
  EXPECT_EQ(region.status().code(), StatusCode::kUnimplemented) << region.status();
  EXPECT_EQ(memory.Read({.handle = 1, .size = 8}, 0, 8).status().code(),
            StatusCode::kUnimplemented);
  EXPECT_EQ(memory.Lend((*a)->address(), {.size = 64}).status().code(),
            StatusCode::kUnimplemented);
  EXPECT_EQ(memory.Ask((*a)->address(), {.size = 64, .lifetime = -1ms}).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace wharf
