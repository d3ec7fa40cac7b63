// Remote memory between two ucx:// transports of this process, over UCX's
// tcp on loopback and over shared memory: a region asked for and used
// (read, write, write with immediate, compare-and-swap, fetch-add) with
// every byte checked on the target, a region lent unasked, rights refused,
// lifetimes ending on a simulated clock, a holder that dies, handles never
// granted, and asks the target refuses. Every wait is bounded.
#include "ucx/ucx_remote_memory.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/sim_clock.h"
#include "ucx/ucx_transport.h"

namespace wharf::ucx {
namespace {

using namespace std::chrono_literals;
using transport::NetAddress;
using Event = UcxRemoteMemory::Event;

struct Path {
  const char* name;
  UcxConfig config;
};

std::vector<std::byte> Pattern(size_t n, size_t seed) {
  std::vector<std::byte> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>((i * 131 + seed) % 251);
  return v;
}

class UcxRemoteMemoryTest : public ::testing::TestWithParam<Path> {
 protected:
  void SetUp() override {
    target_ = Open();
    holder_ = Open();
    ASSERT_TRUE(target_ && holder_);
  }

  std::unique_ptr<UcxMessageTransport> Open() {
    UcxConfig config = GetParam().config;
    config.bind = *NetAddress::Parse("127.0.0.1:0");
    config.max_message_bytes = 1 << 20;
    config.pool_bytes = 32 << 20;
    config.max_regions = 8;
    auto t = UcxMessageTransport::Open(config, clock_);
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? std::move(*t) : nullptr;
  }

  // Polls both transports until `done()` or 10 s.
  bool Drive(const std::function<bool()>& done) {
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (!done()) {
      if (std::chrono::steady_clock::now() > until) return false;
      if (target_) target_->Poll();
      if (holder_) holder_->Poll();
    }
    return true;
  }

  Result<UcxRemoteMemory::Held> Ask(transport::RegionSpec ask) {
    std::optional<Result<UcxRemoteMemory::Held>> got;
    holder_->ucx_memory().Ask(target_->LocalAddress(), ask,
                                 [&](Result<UcxRemoteMemory::Held> r) { got = std::move(r); });
    if (!Drive([&] { return got.has_value(); })) return DeadlineExceededError("no answer");
    return *got;
  }

  Status Run(const std::function<void(UcpWorker::RmaDone)>& op) {
    std::optional<Status> got;
    op([&](const Status& s) { got = s; });
    if (!Drive([&] { return got.has_value(); })) return DeadlineExceededError("not done");
    return *got;
  }

  Result<uint64_t> RunWord(const std::function<void(UcxRemoteMemory::WordDone)>& op) {
    std::optional<Result<uint64_t>> got;
    op([&](Result<uint64_t> r) { got = std::move(r); });
    if (!Drive([&] { return got.has_value(); })) return DeadlineExceededError("not done");
    return *got;
  }

  // The target's one lent region's bytes.
  std::span<std::byte> TargetBytes(uint64_t region) {
    return target_->ucx_memory().LentBytes(region);
  }

  bool TakeEvent(UcxMessageTransport& t, Event::Kind kind, Event* out) {
    Event e;
    while (t.ucx_memory().PopEvent(&e)) {
      if (e.kind == kind) {
        *out = e;
        return true;
      }
    }
    return false;
  }

  SimClock clock_{1 * kNsPerSec};
  std::unique_ptr<UcxMessageTransport> target_, holder_;
};

TEST_P(UcxRemoteMemoryTest, AnAskedRegionIsReadWrittenAndUpdatedAtomically) {
  auto held = Ask({.size = 4 << 20, .alignment = 64, .lifetime_ms = 60'000});
  ASSERT_TRUE(held.ok()) << held.status();
  EXPECT_EQ(held->size, 4u << 20);
  EXPECT_EQ(target_->ucx_memory().lent(), 1u);
  auto& rm = holder_->ucx_memory();
  const std::vector<std::byte> data = Pattern(4 << 20, 1);
  ASSERT_TRUE(Run([&](auto done) { rm.Write(held->handle, 0, data, done); }).ok());
  std::vector<std::byte> back(data.size());
  ASSERT_TRUE(Run([&](auto done) { rm.Read(held->handle, 0, back, done); }).ok());
  EXPECT_TRUE(back == data);
  // The target finds it there too: its region is the one it granted.
  Event lent_event;
  uint64_t region = 0;
  ASSERT_TRUE(Run([&](auto done) {
                const std::vector<std::byte> small = Pattern(100, 9);
                rm.WriteWithImmediate(held->handle, 4096, small, 0xfeed, done);
              }).ok());
  ASSERT_TRUE(Drive([&] { return TakeEvent(*target_, Event::Kind::kImmediate, &lent_event); }));
  EXPECT_EQ(lent_event.value, 0xfeedu);
  EXPECT_EQ(lent_event.offset, 4096u);
  EXPECT_EQ(lent_event.length, 100u);
  region = lent_event.region;
  std::span<std::byte> bytes = TargetBytes(region);
  ASSERT_EQ(bytes.size(), 4u << 20);
  EXPECT_EQ(std::memcmp(bytes.data() + 4096, Pattern(100, 9).data(), 100), 0)
      << "the value arrives after the data";
  EXPECT_EQ(std::memcmp(bytes.data(), data.data(), 4096), 0);
  // Atomics on the word at offset 8.
  auto cas = RunWord([&](auto done) { rm.CompareAndSwap(held->handle, 8, 0, 7, done); });
  ASSERT_TRUE(cas.ok()) << cas.status();
  uint64_t before;
  std::memcpy(&before, data.data() + 8, 8);
  EXPECT_EQ(*cas, before) << "the word as the write left it";
  std::memset(bytes.data() + 8, 0, 8);
  cas = RunWord([&](auto done) { rm.CompareAndSwap(held->handle, 8, 0, 7, done); });
  ASSERT_TRUE(cas.ok());
  EXPECT_EQ(*cas, 0u);
  auto add = RunWord([&](auto done) { rm.FetchAdd(held->handle, 8, 5, done); });
  ASSERT_TRUE(add.ok());
  EXPECT_EQ(*add, 7u);
  uint64_t word;
  std::memcpy(&word, bytes.data() + 8, 8);
  EXPECT_EQ(word, 12u);
  // Released: the target frees it, and the handle is gone.
  EXPECT_TRUE(rm.Release(held->handle).ok());
  EXPECT_EQ(rm.Release(held->handle).code(), StatusCode::kNotFound);
  ASSERT_TRUE(Drive([&] { return target_->ucx_memory().lent() == 0; }));
}

TEST_P(UcxRemoteMemoryTest, RightsBoundsAndUnknownHandlesAreRefusedBeforeAnythingMoves) {
  auto held = Ask({.size = 4096, .access = wire::kRegionRead});
  ASSERT_TRUE(held.ok()) << held.status();
  auto& rm = holder_->ucx_memory();
  const std::vector<std::byte> data = Pattern(64, 2);
  Status write = Run([&](auto done) { rm.Write(held->handle, 0, data, done); });
  EXPECT_EQ(write.code(), StatusCode::kPermissionDenied) << write;
  auto atomic = RunWord([&](auto done) { rm.FetchAdd(held->handle, 0, 1, done); });
  EXPECT_EQ(atomic.status().code(), StatusCode::kPermissionDenied);
  std::vector<std::byte> back(64);
  Status outside = Run([&](auto done) { rm.Read(held->handle, 4090, back, done); });
  EXPECT_EQ(outside.code(), StatusCode::kOutOfRange) << outside;
  Status unknown = Run([&](auto done) { rm.Read(held->handle + 1000, 0, back, done); });
  EXPECT_EQ(unknown.code(), StatusCode::kNotFound) << unknown;
  auto unaligned = RunWord([&](auto done) { rm.FetchAdd(held->handle, 4, 1, done); });
  EXPECT_EQ(unaligned.status().code(), StatusCode::kInvalidArgument);
}

TEST_P(UcxRemoteMemoryTest, AsksTheTargetCannotServeAreRefused) {
  auto too_big = Ask({.size = 64 << 20});
  EXPECT_EQ(too_big.status().code(), StatusCode::kResourceExhausted) << too_big.status();
  auto odd = Ask({.size = 64, .alignment = 1 << 20});
  EXPECT_EQ(odd.status().code(), StatusCode::kInvalidArgument) << odd.status();
  // The cap: 8 regions lent at most.
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(Ask({.size = 64}).ok()) << i;
  auto ninth = Ask({.size = 64});
  EXPECT_EQ(ninth.status().code(), StatusCode::kResourceExhausted);
}

TEST_P(UcxRemoteMemoryTest, ALifetimeThatEndsEndsTheRegionOnBothSides) {
  auto held = Ask({.size = 4096, .lifetime_ms = 2000});
  ASSERT_TRUE(held.ok()) << held.status();
  auto& rm = holder_->ucx_memory();
  std::vector<std::byte> back(8);
  ASSERT_TRUE(Run([&](auto done) { rm.Read(held->handle, 0, back, done); }).ok());
  clock_.AdvanceBy(2 * kNsPerSec);
  Status late = Run([&](auto done) { rm.Read(held->handle, 0, back, done); });
  EXPECT_EQ(late.code(), StatusCode::kDeadlineExceeded) << late;
  // The target expires it and tells the holder.
  Event released;
  ASSERT_TRUE(Drive([&] { return TakeEvent(*holder_, Event::Kind::kReleased, &released); }));
  EXPECT_EQ(released.region, held->handle);
  EXPECT_EQ(target_->ucx_memory().lent(), 0u);
  EXPECT_EQ(rm.held(), 0u);
  Status gone = Run([&](auto done) { rm.Read(held->handle, 0, back, done); });
  EXPECT_EQ(gone.code(), StatusCode::kNotFound);
}

TEST_P(UcxRemoteMemoryTest, ARegionLentUnaskedIsWrittenInTheLendersOwnMemory) {
  std::vector<std::byte> mine(8192, std::byte{0});
  auto lent = target_->ucx_memory().Lend(holder_->LocalAddress(), mine,
                                            wire::kRegionRead | wire::kRegionWrite, 10 * kNsPerSec);
  ASSERT_TRUE(lent.ok()) << lent.status();
  Event got;
  ASSERT_TRUE(Drive([&] { return TakeEvent(*holder_, Event::Kind::kLent, &got); }));
  EXPECT_EQ(got.held.size, 8192u);
  const std::vector<std::byte> data = Pattern(8192, 5);
  ASSERT_TRUE(Run([&](auto done) { holder_->ucx_memory().Write(got.held.handle, 0, data, done); })
                  .ok());
  EXPECT_TRUE(mine == data);
  // Revoked by the lender: the holder hears, and the handle is gone.
  ASSERT_TRUE(target_->ucx_memory().Revoke(*lent).ok());
  Event released;
  ASSERT_TRUE(Drive([&] { return TakeEvent(*holder_, Event::Kind::kReleased, &released); }));
  EXPECT_EQ(released.region, got.held.handle);
}

TEST_P(UcxRemoteMemoryTest, ARegionLentFromThePoolIsReturnedWhenItsHolderReleasesIt) {
  auto lent = target_->ucx_memory().LendFromPool(
      holder_->LocalAddress(), {.size = 4096, .access = wire::kRegionRead | wire::kRegionWrite});
  ASSERT_TRUE(lent.ok()) << lent.status();
  ASSERT_EQ(lent->bytes.size(), 4096u);
  EXPECT_TRUE(std::all_of(lent->bytes.begin(), lent->bytes.end(),
                          [](std::byte b) { return b == std::byte{0}; }));
  Event got;
  ASSERT_TRUE(Drive([&] { return TakeEvent(*holder_, Event::Kind::kLent, &got); }));
  EXPECT_EQ(got.held.access, wire::kRegionRead | wire::kRegionWrite);
  const std::vector<std::byte> data = Pattern(4096, 9);
  ASSERT_TRUE(Run([&](auto done) { holder_->ucx_memory().Write(got.held.handle, 0, data, done); })
                  .ok());
  EXPECT_TRUE(std::equal(data.begin(), data.end(), lent->bytes.begin()));
  // No atomic right was lent: refused on the holder, before anything moves.
  auto cas = RunWord([&](auto done) {
    holder_->ucx_memory().CompareAndSwap(got.held.handle, 0, 0, 1, done);
  });
  EXPECT_EQ(cas.status().code(), StatusCode::kPermissionDenied) << cas.status();
  ASSERT_TRUE(holder_->ucx_memory().Release(got.held.handle).ok());
  Event returned;
  ASSERT_TRUE(Drive([&] { return TakeEvent(*target_, Event::Kind::kReturned, &returned); }));
  EXPECT_EQ(returned.region, lent->id);
  EXPECT_TRUE(target_->ucx_memory().LentBytes(lent->id).empty());
}

// A host's pool (wharfd's: the application's heap), recording its blocks.
class RecordingPool final : public transport::RegionPool {
 public:
  std::span<std::byte> Take(uint64_t bytes, uint64_t /*alignment*/) override {
    if (used + bytes > sizeof memory) return {};
    std::span<std::byte> block(memory + used, bytes);
    used += bytes;
    ++taken;
    return block;
  }
  void Give(std::span<std::byte> block) override {
    EXPECT_GE(block.data(), memory);
    EXPECT_LE(block.data() + block.size(), memory + sizeof memory);
    ++given;
  }
  alignas(4096) std::byte memory[64 << 10] = {};
  uint64_t used = 0;
  int taken = 0, given = 0;
};

TEST_P(UcxRemoteMemoryTest, RegionsComeFromTheHostsPoolAndEndWhenItIsTakenAway) {
  RecordingPool pool;
  target_->ucx_memory().UsePool(&pool);
  auto held = Ask({.size = 4096});
  ASSERT_TRUE(held.ok()) << held.status();
  EXPECT_EQ(pool.taken, 1);
  const std::vector<std::byte> data = Pattern(4096, 3);
  ASSERT_TRUE(
      Run([&](auto done) { holder_->ucx_memory().WriteWithImmediate(held->handle, 0, data, 5, done); })
          .ok());
  // The holder's bytes are in the host's memory, and the event says where.
  EXPECT_TRUE(std::equal(data.begin(), data.end(), pool.memory));
  Event imm;
  ASSERT_TRUE(Drive([&] { return TakeEvent(*target_, Event::Kind::kImmediate, &imm); }));
  EXPECT_EQ(imm.bytes.data(), pool.memory);
  EXPECT_EQ(imm.bytes.size(), 4096u);
  // Taken away (wharfd's session closing): the region ends on both sides
  // and its block goes back at once, not after the quarantine.
  target_->ucx_memory().UsePool(nullptr);
  EXPECT_EQ(pool.given, 1);
  Event released;
  ASSERT_TRUE(Drive([&] { return TakeEvent(*holder_, Event::Kind::kReleased, &released); }));
  EXPECT_EQ(released.region, held->handle);
  // The transport's own pool serves the next ask.
  ASSERT_TRUE(Ask({.size = 4096}).ok());
  EXPECT_EQ(pool.taken, 1);
}

TEST_P(UcxRemoteMemoryTest, LendingFromThePoolRefusesWhatItCannotPlace) {
  auto& rm = target_->ucx_memory();
  const NetAddress to = holder_->LocalAddress();
  EXPECT_EQ(rm.LendFromPool(to, {.size = 0}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(rm.LendFromPool(to, {.size = 64, .alignment = 3}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(rm.LendFromPool(to, {.size = 64, .access = 0}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(rm.LendFromPool(to, {.size = 64, .lifetime_ms = 0}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(rm.LendFromPool(to, {.size = 64 << 20}).status().code(),
            StatusCode::kResourceExhausted);
}

// A peer that speaks UCX but not honestly: a raw UcpWorker sending the
// region messages a wharf engine would never send it.
TEST_P(UcxRemoteMemoryTest, ForgedRegionMessagesFromAnotherPeerChangeNothing) {
  auto held = Ask({.size = 4096});
  ASSERT_TRUE(held.ok()) << held.status();
  const std::vector<std::byte> data = Pattern(4096, 1);
  ASSERT_TRUE(Run([&](auto done) {
                holder_->ucx_memory().WriteWithImmediate(held->handle, 0, data, 1, done);
              }).ok());
  Event imm;
  ASSERT_TRUE(Drive([&] { return TakeEvent(*target_, Event::Kind::kImmediate, &imm); }));
  const uint64_t region = imm.region;  // the target's id, which the forger guessed

  UcpOptions options{.tls = GetParam().config.tls,
                     .devices = GetParam().config.devices,
                     .detect_peer_failure = GetParam().config.detect_peer_failure};
  std::vector<wire::UcxHeader> heard;
  auto forger = UcpWorker::Create(
      options, {.message = [&](UcpWorker::PeerId, std::string_view header, Buffer) {
                  if (auto h = wire::DecodeUcxHeader(header); h.ok()) heard.push_back(*h);
                },
                .peer_failed = [](UcpWorker::PeerId, const Status&) {}});
  ASSERT_TRUE(forger.ok()) << forger.status();
  auto peer = (*forger)->Connect(target_->LocalAddress());
  ASSERT_TRUE(peer.ok()) << peer.status();
  auto send = [&](wire::UcxKind kind, uint64_t id, std::string body) {
    const wire::UcxHeaderBytes h = wire::EncodeUcxHeader({.kind = kind, .rpc_id = id});
    (*forger)->Send(*peer, std::string_view(h.data(), h.size()), Buffer::Copy(body), nullptr);
  };
  auto counter = [&](std::string_view name) {
    for (const auto& [k, v] : target_->Counters()) {
      if (k == name) return v;
    }
    return uint64_t{0};
  };
  const uint64_t dropped_before = counter("ucx.immediates_dropped");
  const uint64_t malformed_before = counter("ucx.region_messages_dropped");
  // An immediate for a region it does not hold, a release of it, a grant
  // answering an ask the target never made, and an ask it cannot parse.
  send(wire::UcxKind::kImmediate, region,
       wire::EncodeRegionImmediate({region, 0, 8, 666}));
  send(wire::UcxKind::kRegionRelease, region, wire::EncodeRegionRelease(region));
  send(wire::UcxKind::kRegionGrant, UcxRemoteMemory::kFirstAskId + 5,
       wire::EncodeRegionGrant({77, 0x1000, 4096, wire::kRegionAllAccess, 1000, "garbage key"}));
  send(wire::UcxKind::kRegionAsk, UcxRemoteMemory::kFirstAskId + 6, "short");
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < until &&
         (counter("ucx.immediates_dropped") == dropped_before ||
          counter("ucx.region_messages_dropped") == malformed_before ||
          heard.size() < 2)) {
    target_->Poll();
    holder_->Poll();
    (*forger)->Progress();
  }
  EXPECT_EQ(counter("ucx.immediates_dropped"), dropped_before + 1);
  EXPECT_EQ(counter("ucx.region_messages_dropped"), malformed_before + 1);
  Event e;
  EXPECT_FALSE(target_->ucx_memory().PopEvent(&e)) << "event " << static_cast<int>(e.kind);
  // The forger heard a refusal of its ask and the release of the grant it
  // forged; it holds nothing.
  ASSERT_GE(heard.size(), 2u);
  bool refused = false, released = false;
  for (const wire::UcxHeader& h : heard) {
    refused = refused || (h.kind == wire::UcxKind::kRefused &&
                          h.code == static_cast<uint16_t>(StatusCode::kInvalidArgument));
    released = released || (h.kind == wire::UcxKind::kRegionRelease && h.rpc_id == 77);
  }
  EXPECT_TRUE(refused);
  EXPECT_TRUE(released);
  EXPECT_EQ(target_->ucx_memory().held(), 0u);
  // The real holder's region is untouched and still its own.
  EXPECT_EQ(target_->ucx_memory().lent(), 1u);
  std::span<std::byte> bytes = target_->ucx_memory().LentBytes(region);
  ASSERT_EQ(bytes.size(), 4096u);
  EXPECT_TRUE(std::equal(data.begin(), data.end(), bytes.begin()));
  ASSERT_TRUE(Run([&](auto done) { holder_->ucx_memory().Write(held->handle, 0, data, done); }).ok());
}

TEST_P(UcxRemoteMemoryTest, AHolderThatDiesGivesItsRegionsBack) {
  if (!GetParam().config.detect_peer_failure) {
    GTEST_SKIP() << "UCX 1.13's shared memory does not report a peer's failure";
  }
  ASSERT_TRUE(Ask({.size = 4096}).ok());
  ASSERT_TRUE(Ask({.size = 8192}).ok());
  EXPECT_EQ(target_->ucx_memory().lent(), 2u);
  holder_.reset();
  ASSERT_TRUE(Drive([&] { return target_->ucx_memory().lent() == 0; }));
  // The target's application hears of both.
  int returned = 0;
  Event e;
  while (target_->ucx_memory().PopEvent(&e)) returned += e.kind == Event::Kind::kReturned;
  EXPECT_EQ(returned, 2);
}

INSTANTIATE_TEST_SUITE_P(
    Paths, UcxRemoteMemoryTest,
    ::testing::Values(Path{"tcp", {.tls = "tcp", .devices = "lo"}},
                      Path{"shm", {.tls = "sm,tcp", .detect_peer_failure = false}}),
    [](const ::testing::TestParamInfo<Path>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace wharf::ucx
