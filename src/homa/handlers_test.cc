// Scenario tests of the packet handlers under faults: every packet type lost,
// duplicated and reordered, with the RPC still completing exactly once.
#include <gtest/gtest.h>

#include "homa/homa_transport.h"
#include "homa/testing/scenario.h"
#include "transport/fake/packet_predicate.h"

namespace wharf::homa {
namespace {

using sim::Host;
using sim::Scenario;
using transport::fake::DescriptionStartsWith;
using transport::fake::FlowDescriptionStartsWith;

constexpr DurationNs kSecond = kNsPerSec;

HomaConfig SmallWindows() {
  HomaConfig c;
  c.unsched_bytes = 2 * 1424;
  c.max_incoming_bytes = 4 * 1424;
  return c;
}

// Runs one RPC of `size` from A to B under whatever faults the test set up,
// and checks it completes once with the right bytes.
void ExpectOneCleanRpc(Scenario& s, size_t size, DurationNs limit = 2 * kSecond) {
  uint64_t id = s.Call("A", "B", size);
  ASSERT_TRUE(s.RunUntil([&] { return s.Completed("A", id); }, limit)) << s.net().Log();
  const HomaEvent& done = s.host("A").completions.at(id);
  ASSERT_EQ(done.kind, HomaEvent::Kind::kResponse) << done.status;
  EXPECT_TRUE(Scenario::MatchesPattern(done.message, size));
  EXPECT_EQ(s.MaxRunsOfOneRpc(), 1);
}

struct LossCase {
  const char* name;
  const char* src;
  const char* dst;
  const char* prefix;  // description prefix of the packet to drop
  size_t size;
};

class LossTest : public ::testing::TestWithParam<LossCase> {};

TEST_P(LossTest, RpcCompletesOnceAfterLosingThePacket) {
  const LossCase& c = GetParam();
  Scenario s;
  s.AddHost("A", SmallWindows());
  s.AddHost("B", SmallWindows());
  s.net().DropNext(FlowDescriptionStartsWith(c.src, c.dst, c.prefix));
  ExpectOneCleanRpc(s, c.size);
  EXPECT_EQ(s.net().PendingScriptedFaults(), 0u) << "the packet to drop never appeared";
}

INSTANTIATE_TEST_SUITE_P(
    EveryDataPathPacket, LossTest,
    ::testing::Values(
        // The only request packet: the client's RESEND meets RPC_UNKNOWN and
        // the client restarts.
        LossCase{"OnlyRequestData", "A", "B", "DATA 100@0", 100},
        // First of several unscheduled packets: the server knows the RPC from
        // the second and asks for the gap.
        LossCase{"FirstRequestData", "A", "B", "DATA 1424@0", 20'000},
        LossCase{"ScheduledRequestData", "A", "B", "DATA 1424@4272", 20'000},
        LossCase{"LastRequestData", "A", "B", "DATA 64@19936", 20'000},
        LossCase{"OnlyResponseData", "B", "A", "DATA 100@0", 100},
        LossCase{"ScheduledResponseData", "B", "A", "DATA 1424@4272", 20'000},
        // A lost GRANT is recovered by the receiver's RESEND (which implies it).
        LossCase{"RequestGrant", "B", "A", "GRANT", 20'000},
        LossCase{"ResponseGrant", "A", "B", "GRANT", 20'000}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(HandlersTest, LostResendIsRepeated) {
  Scenario s;
  s.AddHost("A");
  s.AddHost("B");
  s.net().DropNext(FlowDescriptionStartsWith("B", "A", "DATA"));
  s.net().DropNext(FlowDescriptionStartsWith("A", "B", "RESEND"));
  ExpectOneCleanRpc(s, 100);
  EXPECT_GE(s.host("A").homa->stats().resends_sent, 2u);
}

TEST(HandlersTest, LostRpcUnknownLeadsToAnotherResend) {
  Scenario s;
  s.AddHost("A");
  s.AddHost("B");
  s.net().DropNext(FlowDescriptionStartsWith("A", "B", "DATA"));
  s.net().DropNext(FlowDescriptionStartsWith("B", "A", "RPC_UNKNOWN"));
  ExpectOneCleanRpc(s, 100);
  EXPECT_EQ(s.host("A").homa->stats().restarts, 1u);
}

TEST(HandlersTest, BusyKeepsClientAliveWhileHandlerRuns) {
  HomaConfig config;
  config.timeout_ticks = 20;
  Scenario s;
  s.AddHost("A", config);
  Host& b = s.AddHost("B", config);
  b.auto_echo = false;
  uint64_t id = s.Call("A", "B", 100);
  // The handler takes 10 timeouts' worth of time; BUSY answers the RESENDs.
  s.RunFor(200 * kNsPerMs);
  EXPECT_FALSE(s.Completed("A", id));
  EXPECT_GT(b.homa->stats().busy_sent, 5u);
  ASSERT_EQ(b.held_requests.size(), 1u);
  ASSERT_TRUE(b.homa->SendResponse(b.held_requests[0].server_key, Buffer::Copy("late")).ok());
  ASSERT_TRUE(s.RunUntil([&] { return s.Completed("A", id); }, kSecond));
  EXPECT_EQ(s.host("A").completions.at(id).message.AsStringView(), "late");
}

TEST(HandlersTest, LostBusyIsHarmless) {
  HomaConfig config;
  config.timeout_ticks = 30;
  Scenario s;
  s.AddHost("A", config);
  Host& b = s.AddHost("B", config);
  b.auto_echo = false;
  uint64_t id = s.Call("A", "B", 100);
  s.net().DropNext(DescriptionStartsWith("BUSY"));
  s.RunFor(50 * kNsPerMs);
  ASSERT_TRUE(b.homa->SendResponse(b.held_requests.at(0).server_key, Buffer::Copy("ok")).ok());
  ASSERT_TRUE(s.RunUntil([&] { return s.Completed("A", id); }, kSecond));
  EXPECT_EQ(s.host("A").completions.at(id).kind, HomaEvent::Kind::kResponse);
}

TEST(HandlersTest, LostAckIsRecoveredByNeedAck) {
  Scenario s;
  s.AddHost("A");
  s.AddHost("B");
  s.net().DropNext(DescriptionStartsWith("ACK"));
  ExpectOneCleanRpc(s, 100);
  ASSERT_TRUE(s.RunUntil([&] { return s.host("B").homa->num_server_rpcs() == 0; }, kSecond));
  EXPECT_GE(s.host("B").homa->stats().need_acks_sent, 1u);
}

TEST(HandlersTest, LostNeedAckIsRepeated) {
  Scenario s;
  s.AddHost("A");
  s.AddHost("B");
  s.net().DropNext(DescriptionStartsWith("ACK"));
  s.net().DropNext(DescriptionStartsWith("NEED_ACK"));
  ExpectOneCleanRpc(s, 100);
  ASSERT_TRUE(s.RunUntil([&] { return s.host("B").homa->num_server_rpcs() == 0; }, kSecond));
  EXPECT_GE(s.host("B").homa->stats().need_acks_sent, 2u);
}

TEST(HandlersTest, LostCutoffsAreSentAgain) {
  HomaConfig receiver;
  receiver.cutoff_version = 9;
  Scenario s;
  s.AddHost("A");
  s.AddHost("B", receiver);
  s.net().DropNext(DescriptionStartsWith("CUTOFFS"));
  ExpectOneCleanRpc(s, 100);
  s.RunFor(5 * kNsPerMs);  // next tick: a new CUTOFFS is allowed
  ExpectOneCleanRpc(s, 100);
  EXPECT_EQ(s.host("B").homa->stats().cutoffs_sent, 2u);
  // Now A knows version 9: no more CUTOFFS.
  s.RunFor(5 * kNsPerMs);
  ExpectOneCleanRpc(s, 100);
  EXPECT_EQ(s.host("B").homa->stats().cutoffs_sent, 2u);
}

TEST(HandlersTest, EveryPacketDuplicatedStillRunsEachHandlerOnce) {
  Scenario s(42);
  s.AddHost("A", SmallWindows());
  s.AddHost("B", SmallWindows());
  transport::fake::LinkConfig link;
  link.duplicate_probability = 1.0;
  s.net().SetDefaultLink(link);
  for (size_t size : {size_t{0}, size_t{100}, size_t{30'000}}) ExpectOneCleanRpc(s, size);
  EXPECT_GT(s.host("B").homa->stats().duplicate_data, 0u);
  EXPECT_EQ(s.TotalHandlerRuns(), 3);
}

TEST(HandlersTest, HeavyReorderingDeliversIntactMessages) {
  Scenario s(7);
  s.AddHost("A", SmallWindows());
  s.AddHost("B", SmallWindows());
  transport::fake::LinkConfig link;
  link.bandwidth_bps = 10'000'000'000;
  link.reorder_probability = 0.3;
  link.reorder_extra_delay_ns = 20 * kNsPerUs;
  s.net().SetDefaultLink(link);
  ExpectOneCleanRpc(s, 200'000);
}

TEST(HandlersTest, RandomLossDuplicationAndReorderingTogether) {
  Scenario s(2024);
  s.AddHost("A", SmallWindows());
  s.AddHost("B", SmallWindows());
  transport::fake::LinkConfig link;
  link.bandwidth_bps = 10'000'000'000;
  link.drop_probability = 0.05;
  link.duplicate_probability = 0.05;
  link.reorder_probability = 0.05;
  s.net().SetDefaultLink(link);
  std::vector<uint64_t> ids;
  for (int i = 0; i < 200; ++i) ids.push_back(s.Call("A", "B", (i * 7919) % 50'000));
  ASSERT_TRUE(s.RunUntil(
      [&] {
        for (uint64_t id : ids) {
          if (!s.Completed("A", id)) return false;
        }
        return true;
      },
      30 * kSecond));
  for (int i = 0; i < 200; ++i) {
    const HomaEvent& e = s.host("A").completions.at(ids[i]);
    ASSERT_EQ(e.kind, HomaEvent::Kind::kResponse) << e.status;
    EXPECT_TRUE(Scenario::MatchesPattern(e.message, (i * 7919) % 50'000));
  }
  EXPECT_EQ(s.TotalHandlerRuns(), 200);
  EXPECT_EQ(s.MaxRunsOfOneRpc(), 1);
}

TEST(HandlersTest, MalformedAndMisaddressedPacketsAreCountedAndDropped) {
  Scenario s;
  Host& a = s.AddHost("A");
  s.AddHost("B");
  std::vector<std::byte> junk(40, std::byte{0xAB});
  transport::OutDatagram bad{s.host("B").address(), junk, 0};
  ASSERT_TRUE(a.net->Send({&bad, 1}).ok());
  s.RunFor(kNsPerMs);
  EXPECT_EQ(s.host("B").homa->stats().malformed, 1u);
  ExpectOneCleanRpc(s, 10);
}

}  // namespace
}  // namespace wharf::homa
