// daemon/command_executor_test.cc: commands carried out against real parts
// (region, tables, an Engine on a HomaTransport over a FakeNetwork and a
// SimClock), each outcome read where the application would find it: its
// completion ring.
#include "daemon/command_executor.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "base/sim_clock.h"
#include "daemon/testing/region_parts.h"
#include "homa/homa_transport.h"
#include "transport/fake/fake_network.h"
#include "wharf/endpoint.h"

namespace wharf::daemon {
namespace {

using shm::Descriptor;
using shm::Opcode;

// The engine's sink; the session's part in completions is not under test.
class NullSink final : public engine::EngineSink {
 public:
  void OnComplete(uint64_t, Status, Buffer, uint64_t) override {}
  void OnRequest(engine::IncomingCall) override {}
  void OnCallCancelled(const engine::ServerCallRef&) override {}
};

constexpr uint64_t kPeer = 1;  // the peer handle CommandExecutorTest adds

class CommandExecutorTest : public ::testing::Test {
 protected:
  CommandExecutorTest() {
    Descriptor add = Command(Opcode::kAddPeer, 0);
    add.handle = kPeer;
    const engine::PackedUri packed =
        engine::PackUri(engine::ParseUri("homa://198.18.0.9:4000", "homa", nullptr).value());
    for (int i = 0; i < 3; ++i) add.aux[i] = packed.words[i];
    executor_.Execute(add);
  }

  static Descriptor Command(Opcode opcode, uint64_t cookie) {
    Descriptor d{};
    d.opcode = static_cast<uint16_t>(opcode);
    d.cookie = cookie;
    return d;
  }
  static Descriptor CallToPeer(uint64_t cookie) {
    Descriptor d = Command(Opcode::kCall, cookie);
    d.flags = shm::kFlagToPeer;
    d.handle = kPeer;
    return d;
  }
  // What the application finds in its completion ring now.
  std::vector<Descriptor> Entries() {
    EXPECT_TRUE(parts_.outbox->Flush().ok());
    return parts_.Read();
  }
  // The one entry the application finds, as "OPCODE cookie STATUS: text".
  std::string OnlyEntry() {
    std::vector<Descriptor> got = Entries();
    if (got.size() != 1) return std::to_string(got.size()) + " entries";
    const Descriptor& e = got[0];
    return std::string(shm::OpcodeName(static_cast<Opcode>(e.opcode))) + " " +
           std::to_string(e.cookie) + " " +
           std::string(StatusCodeName(static_cast<StatusCode>(e.status))) +
           (e.length > 0 ? ": " + parts_.Text(e) : "");
  }

  SimClock clock_{1'000'000'000};
  transport::fake::FakeNetwork net_{clock_, /*seed=*/1};
  std::unique_ptr<transport::fake::FakeDatagram> datagram_ =
      net_.Attach("app", transport::NetAddress::Ipv4(0xC6120001, 4000));
  std::unique_ptr<homa::HomaTransport> homa_ =
      homa::HomaTransport::Create(homa::HomaConfig{}, datagram_.get(), clock_).value();
  NullSink sink_;
  engine::Engine engine_{homa_.get(), nullptr, clock_, engine::EngineLimits{}, &sink_};
  testing::RegionParts parts_{65536};
  OperationTable ops_;
  ServedCalls served_;
  PeerHandles peers_;
  CommandExecutor executor_{AppLimits{.max_inflight = 4, .max_connections = 2},
                            SessionParts{.engine = engine_,
                                         .region = *parts_.region,
                                         .ops = ops_,
                                         .served = served_,
                                         .peers = peers_,
                                         .loans = *parts_.loans,
                                         .area = *parts_.area,
                                         .outbox = *parts_.outbox}};
};

TEST_F(CommandExecutorTest, Execute__NopCompletesAtOnce) {
  executor_.Execute(Command(Opcode::kNop, 5));
  EXPECT_EQ(OnlyEntry(), "COMPLETION 5 OK");
  EXPECT_EQ(executor_.bad_commands(), 0u);
}

TEST_F(CommandExecutorTest, Execute__ACookieThatIsNoOperationIdIsAFault) {
  executor_.Execute(CallToPeer(0));
  EXPECT_EQ(OnlyEntry(),
            "FAULT 0 INVALID_ARGUMENT: CALL: cookie 0 is not an operation id (1 to 2^63-1)");
  executor_.Execute(CallToPeer(1ull << 63));
  std::vector<Descriptor> got = Entries();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].aux[0], static_cast<uint64_t>(Opcode::kCall));
  EXPECT_EQ(executor_.bad_commands(), 2u);
  EXPECT_EQ(ops_.size(), 0u);
}

TEST_F(CommandExecutorTest, Execute__ACallReachesTheEngineWithItsPayloadLent) {
  parts_.Write(4096, "request");
  Descriptor call = CallToPeer(9);
  call.heap_offset = 4096;
  call.length = 7;
  executor_.Execute(call);
  EXPECT_TRUE(Entries().empty());
  EXPECT_TRUE(ops_.live(9));
  EXPECT_EQ(engine_.pending_ops(), 1u);
  EXPECT_EQ(parts_.loans->bytes_lent(), 7u);
  // The same cookie again, while the first is in flight.
  executor_.Execute(call);
  EXPECT_EQ(OnlyEntry(), "FAULT 9 ALREADY_EXISTS: CALL: operation 9 is already in flight");
  EXPECT_EQ(engine_.pending_ops(), 1u);
}

TEST_F(CommandExecutorTest, Execute__PastMaxInflightTheOperationFails) {
  for (uint64_t cookie = 1; cookie <= 3; ++cookie) executor_.Execute(CallToPeer(cookie));
  served_.Add(engine::ServerCallRef{});  // a request awaiting an answer counts too
  executor_.Execute(CallToPeer(4));
  EXPECT_EQ(OnlyEntry(),
            "COMPLETION 4 RESOURCE_EXHAUSTED: wharfd limits.max_inflight (4 operations in "
            "flight) reached");
  EXPECT_FALSE(ops_.live(4));
  EXPECT_EQ(engine_.pending_ops(), 3u);
  EXPECT_EQ(executor_.bad_commands(), 1u);
}

TEST_F(CommandExecutorTest, Execute__ACallToAnUnknownPeerHandleIsRefused) {
  Descriptor call = CallToPeer(3);
  call.handle = 2;
  executor_.Execute(call);
  EXPECT_EQ(OnlyEntry(),
            "COMPLETION 3 INVALID_ARGUMENT: CALL: unknown peer handle 2 (no ADD_PEER for it)");
  EXPECT_FALSE(ops_.live(3));
  EXPECT_EQ(engine_.pending_ops(), 0u);
}

TEST_F(CommandExecutorTest, Execute__ASendOnAConnectionNotHeldIsRefused) {
  Descriptor send = Command(Opcode::kSend, 3);
  send.handle = 5;
  executor_.Execute(send);
  EXPECT_EQ(OnlyEntry(),
            "COMPLETION 3 NOT_FOUND: SEND: connection 5 is not one of this application's open "
            "connections");
  EXPECT_FALSE(ops_.live(3));
}

TEST_F(CommandExecutorTest, Execute__ConnectsPastMaxConnectionsAreRefused) {
  for (uint64_t cookie = 1; cookie <= 3; ++cookie) {
    Descriptor connect = Command(Opcode::kConnect, cookie);
    connect.handle = kPeer;
    executor_.Execute(connect);
  }
  EXPECT_EQ(OnlyEntry(),
            "COMPLETION 3 RESOURCE_EXHAUSTED: wharfd limits.max_connections (2) reached");
  EXPECT_EQ(ops_.opening(), 2u);
}

TEST_F(CommandExecutorTest, Execute__ServeKeepsTheCapAndRefusesReservedMethods) {
  Descriptor serve = Command(Opcode::kServe, 0);
  serve.status = 7;
  serve.flags = shm::kFlagServed;
  executor_.Execute(serve);
  EXPECT_TRUE(served_.serves(7));
  serve.status = kFirstReservedMethod;
  executor_.Execute(serve);
  EXPECT_EQ(OnlyEntry(), "FAULT 0 INVALID_ARGUMENT: SERVE: method " +
                             std::to_string(kFirstReservedMethod) + " is reserved");
  serve.status = 7;
  serve.flags = 0;
  executor_.Execute(serve);
  EXPECT_FALSE(served_.serves(7));
}

TEST_F(CommandExecutorTest, Execute__AnAnswerToNoRequestIsAFault) {
  Descriptor respond = Command(Opcode::kRespond, 0);
  respond.handle = 12345;
  executor_.Execute(respond);
  EXPECT_EQ(OnlyEntry(), "FAULT 0 NOT_FOUND: RESPOND: request 12345 is not awaiting an answer");
}

TEST_F(CommandExecutorTest, Execute__ALateAnswerIsDroppedAndItsRangeGivenBack) {
  const uint64_t handle = served_.Add(engine::ServerCallRef{});
  ASSERT_TRUE(served_.Take(handle).has_value());  // the client withdrew it
  Descriptor respond = Command(Opcode::kRespond, 77);
  respond.handle = handle;
  respond.heap_offset = 4096;
  respond.length = 10;
  executor_.Execute(respond);
  EXPECT_EQ(OnlyEntry(), "SEND_RELEASED 77 OK");
  EXPECT_EQ(executor_.late_answers(), 1u);
  EXPECT_EQ(executor_.bad_commands(), 0u);
}

TEST_F(CommandExecutorTest, Execute__AnErrorAnswerIsSentAndItsRangeGivenBackAtOnce) {
  const uint64_t handle = served_.Add(engine::ServerCallRef{});
  parts_.Write(4096, "no such key");
  Descriptor respond = Command(Opcode::kRespond, 78);
  respond.handle = handle;
  respond.status = static_cast<uint32_t>(StatusCode::kNotFound);
  respond.heap_offset = 4096;
  respond.length = 11;
  executor_.Execute(respond);
  EXPECT_EQ(OnlyEntry(), "SEND_RELEASED 78 OK");
  EXPECT_FALSE(served_.awaits(handle));
  EXPECT_EQ(parts_.loans->lent(), 0u);  // the text was copied, not lent
}

TEST_F(CommandExecutorTest, Execute__AnUnknownStatusCodeIsAFaultAndTheRequestStays) {
  const uint64_t handle = served_.Add(engine::ServerCallRef{});
  Descriptor respond = Command(Opcode::kRespond, 0);
  respond.handle = handle;
  respond.status = 99;
  executor_.Execute(respond);
  EXPECT_EQ(OnlyEntry(), "FAULT 0 INVALID_ARGUMENT: RESPOND: status code 99 is unknown");
  EXPECT_TRUE(served_.awaits(handle));
}

TEST_F(CommandExecutorTest, Execute__ReleaseBufferGivesTheRangeBackOnce) {
  parts_.outbox->Complete(1, OkStatus(), Buffer::Copy("message"));
  std::vector<Descriptor> got = Entries();
  ASSERT_EQ(got.size(), 1u);
  Descriptor release = Command(Opcode::kReleaseBuffer, 0);
  release.heap_offset = got[0].heap_offset;
  release.length = got[0].length;
  executor_.Execute(release);
  EXPECT_EQ(parts_.area->bytes_in_use(), 0u);
  executor_.Execute(release);
  EXPECT_EQ(OnlyEntry(), "FAULT 0 INVALID_ARGUMENT: RELEASE_BUFFER: offset " +
                             std::to_string(got[0].heap_offset) +
                             " is not a buffer wharfd delivered (released twice?)");
}

TEST_F(CommandExecutorTest, Execute__ReleasingAConnectionNotHeldIsAFault) {
  Descriptor release = Command(Opcode::kReleaseConn, 0);
  release.handle = 4;
  executor_.Execute(release);
  EXPECT_EQ(OnlyEntry(), "FAULT 0 NOT_FOUND: RELEASE_CONN: connection 4 is not open");
}

TEST_F(CommandExecutorTest, Execute__CancellingAFinishedOperationIsNoError) {
  Descriptor cancel = Command(Opcode::kCancel, 0);
  cancel.handle = 42;
  executor_.Execute(cancel);
  EXPECT_TRUE(Entries().empty());
  EXPECT_EQ(executor_.bad_commands(), 0u);
}

TEST_F(CommandExecutorTest, Execute__AnAddPeerOverTheLimitIsAFault) {
  Descriptor add = Command(Opcode::kAddPeer, 0);
  add.handle = shm::kMaxPeerHandles;
  executor_.Execute(add);
  EXPECT_EQ(OnlyEntry(), "FAULT 0 INVALID_ARGUMENT: ADD_PEER: peer handle 4096 is over 4095");
}

}  // namespace
}  // namespace wharf::daemon

namespace wharf::daemon {
namespace {

TEST_F(CommandExecutorTest, Execute__ARegionReadMayOnlyWriteIntoTheSendArea) {
  Descriptor read = Command(Opcode::kRegionRead, 3);
  read.handle = 1;
  read.heap_offset = 65536 / 2;  // the receive area's first byte
  read.length = 8;
  executor_.Execute(read);
  EXPECT_EQ(OnlyEntry(),
            "COMPLETION 3 INVALID_ARGUMENT: REGION_READ: the destination must lie in the send "
            "area");
  EXPECT_EQ(ops_.size(), 0u);
  EXPECT_EQ(executor_.bad_commands(), 1u);
}

TEST_F(CommandExecutorTest, Execute__ARegionAskNamesAKnownPeerAndSaneBits) {
  Descriptor ask = Command(Opcode::kRegionAsk, 4);
  ask.handle = 77;  // never added
  ask.aux[0] = 4096;
  executor_.Execute(ask);
  EXPECT_EQ(OnlyEntry(), "COMPLETION 4 INVALID_ARGUMENT: REGION_ASK: unknown peer handle 77");
  ask = Command(Opcode::kRegionAsk, 5);
  ask.handle = kPeer;
  ask.aux[1] = 8 | (uint64_t{0x1FF} << 32);  // access bits past a byte
  executor_.Execute(ask);
  EXPECT_EQ(OnlyEntry(),
            "COMPLETION 5 INVALID_ARGUMENT: REGION_ASK: access bits 511, lifetime 0 ms");
}

TEST_F(CommandExecutorTest, Execute__ARegionLendMayOnlyLendTheSendArea) {
  Descriptor lend = Command(Opcode::kRegionLend, 6);
  lend.handle = kPeer;
  lend.heap_offset = 65536 / 2 - 8;  // runs into the receive area
  lend.length = 16;
  lend.aux[1] = 1000;
  executor_.Execute(lend);
  const std::string entry = OnlyEntry();
  EXPECT_EQ(entry.rfind("COMPLETION 6 INVALID_ARGUMENT: REGION_LEND: needs a known peer handle, "
                        "a range of the send area",
                        0),
            0u)
      << entry;
  Descriptor revoke = Command(Opcode::kRegionRevoke, 0);
  revoke.handle = 3;
  executor_.Execute(revoke);
  EXPECT_EQ(Entries().size(), 1u);  // a fault: this engine lends nothing
  EXPECT_EQ(executor_.bad_commands(), 2u);
}

TEST_F(CommandExecutorTest, Execute__ReleasingARegionThisApplicationDoesNotHoldIsAFault) {
  Descriptor release = Command(Opcode::kRegionRelease, 0);
  release.handle = 7;
  executor_.Execute(release);
  // This engine speaks homa:// only: it holds no regions at all.
  const std::string entry = OnlyEntry();
  EXPECT_EQ(entry.rfind("FAULT 0 UNIMPLEMENTED: REGION_RELEASE: remote memory needs a ucx://", 0),
            0u)
      << entry;
  EXPECT_EQ(executor_.bad_commands(), 1u);
}

}  // namespace
}  // namespace wharf::daemon
