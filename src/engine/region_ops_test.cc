// RegionOps: every one-sided operation completes exactly once, with the
// transport's result or the engine's shutdown status; answers the
// transport gives late (after a shutdown, or after the engine is gone)
// reach nobody; a read's Buffer comes back filled, a write's is kept until
// the transport is done. The transport's side is scripted: it keeps the
// completions and the test runs them.
#include "engine/region_ops.h"

#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace wharf::engine {
namespace {

using transport::RegionEvent;

// Keeps what each operation was asked with and its completion.
class ScriptedMemory final : public transport::RemoteMemory {
 public:
  void Ask(const transport::NetAddress& /*target*/, const transport::RegionSpec& spec,
           HeldDone done) override {
    asked.push_back(spec);
    ask_done = std::move(done);
  }
  void Read(uint64_t /*handle*/, uint64_t offset, std::span<std::byte> into, Done done) override {
    read_into = into;
    last_offset = offset;
    this->done = std::move(done);
  }
  void Write(uint64_t /*handle*/, uint64_t /*offset*/, std::span<const std::byte> from,
             Done done) override {
    written = from;
    this->done = std::move(done);
  }
  void WriteWithImmediate(uint64_t /*handle*/, uint64_t /*offset*/,
                          std::span<const std::byte> from, uint64_t value, Done done) override {
    written = from;
    immediate = value;
    this->done = std::move(done);
  }
  void Atomic(uint64_t /*handle*/, uint64_t /*offset*/, transport::RegionAtomicOp op,
              uint64_t value, uint64_t compare, WordDone done) override {
    atomic = {op, value, compare};
    word_done = std::move(done);
  }
  Status Release(uint64_t handle) override {
    return handle == 7 ? OkStatus() : NotFoundError("not held");
  }
  Result<transport::LentRegion> LendFromPool(const transport::NetAddress& /*to*/,
                                             const transport::RegionSpec& spec) override {
    return transport::LentRegion{3, std::span<std::byte>(pool, spec.size)};
  }
  Result<uint64_t> LendMemory(const transport::NetAddress& /*to*/, std::span<std::byte> memory,
                              uint8_t /*access*/, uint32_t /*lifetime_ms*/) override {
    lent_memory = memory;
    return uint64_t{4};
  }
  Status Revoke(uint64_t /*region*/) override { return OkStatus(); }
  std::span<std::byte> LentBytes(uint64_t region) override {
    return region == 3 ? std::span<std::byte>(pool) : std::span<std::byte>();
  }
  void UsePool(transport::RegionPool* /*pool*/) override {}
  bool PopEvent(RegionEvent* out) override {
    if (events.empty()) return false;
    *out = events.front();
    events.pop_front();
    return true;
  }

  std::vector<transport::RegionSpec> asked;
  HeldDone ask_done;
  Done done;
  WordDone word_done;
  std::span<std::byte> read_into;
  std::span<const std::byte> written;
  uint64_t last_offset = 0;
  std::optional<uint64_t> immediate;
  struct {
    transport::RegionAtomicOp op;
    uint64_t value, compare;
  } atomic{};
  std::byte pool[64] = {};
  std::span<std::byte> lent_memory;
  std::deque<RegionEvent> events;
};

// A transport that only offers remote memory (or none).
class MemoryOnlyTransport final : public transport::MessageTransport {
 public:
  MemoryOnlyTransport(std::string scheme, transport::RemoteMemory* memory)
      : scheme_(std::move(scheme)), memory_(memory) {}
  std::string_view scheme() const override { return scheme_; }
  transport::NetAddress LocalAddress() const override { return {}; }
  Result<uint64_t> SendRequest(const transport::NetAddress&, Buffer, uint64_t) override {
    return UnimplementedError("no messages");
  }
  Status SendResponse(const transport::ServerRpcKey&, Buffer,
                      transport::MessagePriority) override {
    return UnimplementedError("no messages");
  }
  bool Cancel(uint64_t) override { return false; }
  transport::PollResult Poll() override { return {}; }
  TimeNs NextDeadline() const override { return kNever; }
  bool PopEvent(transport::MessageEvent*) override { return false; }
  int ReadableFd() const override { return -1; }
  std::vector<std::pair<std::string, uint64_t>> Counters() const override { return {}; }
  transport::RemoteMemory* remote_memory() override { return memory_; }

 private:
  std::string scheme_;
  transport::RemoteMemory* memory_;
};

struct Completed {
  uint64_t op_id;
  Status status;
  Buffer message;
  uint64_t value;
};

class RecordingSink final : public EngineSink {
 public:
  void OnComplete(uint64_t op_id, Status status, Buffer message, uint64_t value) override {
    completed.push_back({op_id, std::move(status), std::move(message), value});
  }
  void OnRequest(IncomingCall) override {}
  void OnCallCancelled(const ServerCallRef&) override {}
  std::vector<Completed> completed;
};

class RegionOpsTest : public ::testing::Test {
 protected:
  RegionOpsTest() {
    transports_ = {&homa_, &ucx_};
    ops_ = std::make_unique<RegionOps>(
        transports_,
        [this](const Uri& uri) -> Result<PeerRef> {
          for (size_t i = 0; i < transports_.size(); ++i) {
            if (transports_[i]->scheme() == uri.scheme) {
              return PeerRef{static_cast<uint8_t>(i), uri.address, 0};
            }
          }
          return InvalidArgumentError("no " + uri.scheme);
        },
        &sink_);
  }
  Uri PeerUri(const std::string& text) { return *ParseUri(text); }

  ScriptedMemory memory_;
  MemoryOnlyTransport homa_{"homa", nullptr};
  MemoryOnlyTransport ucx_{"ucx", &memory_};
  std::vector<transport::MessageTransport*> transports_;
  RecordingSink sink_;
  std::unique_ptr<RegionOps> ops_;
};

TEST_F(RegionOpsTest, AnAskCompletesOnceWithTheHandle) {
  ops_->Ask(1, PeerUri("ucx://198.18.0.2:4002"), {.size = 4096});
  ASSERT_EQ(memory_.asked.size(), 1u);
  EXPECT_EQ(memory_.asked[0].size, 4096u);
  EXPECT_TRUE(sink_.completed.empty());
  EXPECT_EQ(ops_->in_flight(), 1u);
  memory_.ask_done(transport::HeldRegion{.handle = 42, .size = 4096});
  ASSERT_EQ(sink_.completed.size(), 1u);
  EXPECT_EQ(sink_.completed[0].op_id, 1u);
  EXPECT_EQ(sink_.completed[0].value, 42u);
  EXPECT_EQ(ops_->in_flight(), 0u);
  memory_.ask_done(transport::HeldRegion{.handle = 43});  // a transport answering twice
  EXPECT_EQ(sink_.completed.size(), 1u);
}

TEST_F(RegionOpsTest, AnAskOfAPeerWithoutRemoteMemoryFailsAtOnce) {
  ops_->Ask(1, PeerUri("homa://198.18.0.2:4000"), {.size = 64});
  ASSERT_EQ(sink_.completed.size(), 1u);
  EXPECT_EQ(sink_.completed[0].status.code(), StatusCode::kUnimplemented);
  ops_->Ask(2, PeerUri("tcp://198.18.0.2:4000"), {.size = 64});
  EXPECT_EQ(sink_.completed[1].status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops_->in_flight(), 0u);
}

TEST_F(RegionOpsTest, AReadFillsTheHostsBufferAndHandsItBack) {
  Buffer into = Buffer::Allocate(5);
  const std::byte* where = into.data();
  ops_->Read(1, 7, 16, std::move(into));
  ASSERT_EQ(memory_.read_into.size(), 5u);
  EXPECT_EQ(memory_.read_into.data(), where);  // no copy
  EXPECT_EQ(memory_.last_offset, 16u);
  std::memcpy(memory_.read_into.data(), "hello", 5);
  memory_.done(OkStatus());
  ASSERT_EQ(sink_.completed.size(), 1u);
  EXPECT_EQ(sink_.completed[0].message.AsStringView(), "hello");
}

TEST_F(RegionOpsTest, AWritesBufferOutlivesAShutdownUntilTheTransportIsDone) {
  ops_->Write(1, 7, 0, Buffer::Copy("payload"), 99);
  EXPECT_EQ(memory_.immediate, std::optional<uint64_t>(99));
  ops_->Shutdown(CancelledError("closing"));
  ASSERT_EQ(sink_.completed.size(), 1u);
  EXPECT_EQ(sink_.completed[0].status.code(), StatusCode::kCancelled);
  // The transport still reads the bytes it was given (ASan would see a
  // freed buffer here), then answers late: nobody hears.
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(memory_.written.data()),
                        memory_.written.size()),
            "payload");
  memory_.done(OkStatus());
  EXPECT_EQ(sink_.completed.size(), 1u);
}

TEST_F(RegionOpsTest, AnAnswerAfterTheEngineIsGoneReachesNobody) {
  ops_->Atomic(1, 7, 8, transport::RegionAtomicOp::kCompareSwap, 5, 0);
  EXPECT_EQ(memory_.atomic.value, 5u);
  EXPECT_EQ(memory_.atomic.compare, 0u);
  ops_.reset();
  memory_.word_done(uint64_t{0});
  EXPECT_TRUE(sink_.completed.empty());
}

TEST_F(RegionOpsTest, AtomicsCompleteWithTheOldWord) {
  ops_->Atomic(1, 7, 8, transport::RegionAtomicOp::kFetchAdd, 3, 0);
  memory_.word_done(uint64_t{40});
  ASSERT_EQ(sink_.completed.size(), 1u);
  EXPECT_EQ(sink_.completed[0].value, 40u);
  ops_->Atomic(2, 7, 8, transport::RegionAtomicOp::kFetchAdd, 3, 0);
  memory_.word_done(PermissionDeniedError("no atomics"));
  EXPECT_EQ(sink_.completed[1].status.code(), StatusCode::kPermissionDenied);
}

TEST_F(RegionOpsTest, LendingReleaseAndEventsGoToTheTransportThatHoldsRegions) {
  auto lent = ops_->Lend(PeerUri("ucx://198.18.0.2:4002"), {.size = 16});
  ASSERT_TRUE(lent.ok()) << lent.status();
  EXPECT_EQ(lent->bytes.size(), 16u);
  EXPECT_EQ(ops_->LentBytes(3).size(), 64u);
  EXPECT_TRUE(ops_->LentBytes(4).empty());
  EXPECT_EQ(ops_->Lend(PeerUri("homa://198.18.0.2:4000"), {.size = 16}).status().code(),
            StatusCode::kUnimplemented);
  std::byte mine[8];
  EXPECT_EQ(*ops_->LendMemory(PeerUri("ucx://198.18.0.2:4002"), mine, 1, 1000), 4u);
  EXPECT_EQ(memory_.lent_memory.data(), mine);  // lent in place
  EXPECT_TRUE(ops_->Release(7).ok());
  EXPECT_EQ(ops_->Release(8).code(), StatusCode::kNotFound);
  memory_.events.push_back({.kind = RegionEvent::Kind::kImmediate, .region = 3, .value = 9});
  RegionEvent e;
  ASSERT_TRUE(ops_->PopEvent(&e));
  EXPECT_EQ(e.value, 9u);
  EXPECT_FALSE(ops_->PopEvent(&e));
}

TEST(RegionOpsWithoutMemoryTest, EveryOperationSaysItNeedsUcx) {
  MemoryOnlyTransport homa{"homa", nullptr};
  std::vector<transport::MessageTransport*> transports{&homa};
  RecordingSink sink;
  RegionOps ops(transports, [](const Uri&) -> Result<PeerRef> { return PeerRef{}; }, &sink);
  ops.Read(1, 1, 0, Buffer::Allocate(8));
  ops.Write(2, 1, 0, Buffer::Copy("x"), std::nullopt);
  ops.Atomic(3, 1, 0, transport::RegionAtomicOp::kFetchAdd, 1, 0);
  ASSERT_EQ(sink.completed.size(), 3u);
  for (const Completed& c : sink.completed) {
    EXPECT_EQ(c.status.code(), StatusCode::kUnimplemented) << c.op_id;
  }
  EXPECT_EQ(ops.Release(1).code(), StatusCode::kUnimplemented);
  EXPECT_EQ(ops.Revoke(1).code(), StatusCode::kUnimplemented);
  RegionEvent e;
  EXPECT_FALSE(ops.PopEvent(&e));
}

}  // namespace
}  // namespace wharf::engine
