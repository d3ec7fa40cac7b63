// Scenario tests of the protocol timer: resend timing, peer death, the
// at-most-once guarantees that depend on acks, floors and tombstones.
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

TEST(TimerTest, FirstResendAfterResendTicksOfSilence) {
  Scenario s;
  s.AddHost("A");
  s.AddHost("B");
  s.net().DropNext(FlowDescriptionStartsWith("A", "B", "DATA"));
  s.Call("A", "B", 100);
  s.RunFor(4 * kNsPerMs + 500 * kNsPerUs);
  EXPECT_EQ(s.host("A").homa->stats().resends_sent, 0u);
  s.RunFor(2 * kNsPerMs);
  EXPECT_EQ(s.host("A").homa->stats().resends_sent, 1u);
}

TEST(TimerTest, PartitionedPeerFailsRpcWithUnavailableWithinTimeout) {
  HomaConfig config;
  config.timeout_ticks = 50;
  Scenario s;
  s.AddHost("A", config);
  s.AddHost("B", config);
  s.net().Partition("A", "B");
  TimeNs start = s.clock().NowNs();
  uint64_t id = s.Call("A", "B", 5000);
  ASSERT_TRUE(s.RunUntil([&] { return s.Completed("A", id); }, kSecond));
  const HomaEvent& e = s.host("A").completions.at(id);
  EXPECT_EQ(e.kind, HomaEvent::Kind::kFailed);
  EXPECT_EQ(e.status.code(), StatusCode::kUnavailable);
  EXPECT_NE(e.status.message().find("198.18.0.2:4000"), std::string::npos) << e.status;
  DurationNs took = s.clock().NowNs() - start;
  EXPECT_GE(took, 50 * kNsPerMs);
  EXPECT_LE(took, 52 * kNsPerMs);
  EXPECT_EQ(s.host("A").homa->num_client_rpcs(), 0u);
}

TEST(TimerTest, PeerDeathMidResponseFailsAndServerForgetsDeadClient) {
  HomaConfig config;
  config.unsched_bytes = 1424;
  config.max_incoming_bytes = 2 * 1424;
  Scenario s;
  s.AddHost("A", config);
  s.AddHost("B", config);
  uint64_t id = s.Call("A", "B", 100'000);
  s.RunFor(50 * kNsPerUs);  // mid-transfer
  s.net().Partition("A", "B");
  const TimeNs cut = s.clock().NowNs();
  // Silence alone ends it only after homa.peer_timeout (5 s by default).
  ASSERT_TRUE(s.RunUntil([&] { return s.Completed("A", id); }, 10 * kSecond));
  EXPECT_GE(s.clock().NowNs() - cut, config.peer_timeout_ns);
  EXPECT_EQ(s.host("A").completions.at(id).status.code(), StatusCode::kUnavailable);
  ASSERT_TRUE(
      s.RunUntil([&] { return s.host("B").homa->num_server_rpcs() == 0; }, 10 * kSecond));
}

TEST(TimerTest, HealedPartitionBeforeTimeoutCompletes) {
  Scenario s;
  s.AddHost("A");
  s.AddHost("B");
  s.net().Partition("A", "B");
  uint64_t id = s.Call("A", "B", 30'000);
  s.RunFor(30 * kNsPerMs);
  s.net().Heal("A", "B");
  ASSERT_TRUE(s.RunUntil([&] { return s.Completed("A", id); }, kSecond));
  EXPECT_EQ(s.host("A").completions.at(id).kind, HomaEvent::Kind::kResponse);
  EXPECT_EQ(s.MaxRunsOfOneRpc(), 1);
}

// Homa's documented gap: a request packet delayed past the whole RPC (and its
// ack) re-creates the RPC at the server. Our floor and tombstones close it.
TEST(TimerTest, LateRequestCopyAfterAckIsDroppedByTombstoneOrFloor) {
  Scenario s;
  s.AddHost("A");
  s.AddHost("B");
  // Hold the first request packet's copy for 300 ms by delaying the original
  // and letting a retransmission complete the RPC first.
  s.net().DelayNext(FlowDescriptionStartsWith("A", "B", "DATA 100@0"), 300 * kNsPerMs);
  uint64_t slow = s.Call("A", "B", 100);
  // The client RESENDs at 5 ms, gets RPC_UNKNOWN, restarts: the RPC completes
  // with the restarted copy while the original is still in flight.
  ASSERT_TRUE(s.RunUntil([&] { return s.Completed("A", slow); }, 100 * kNsPerMs));
  // Later RPCs move the floor past `slow`.
  for (int i = 0; i < 3; ++i) {
    uint64_t id = s.Call("A", "B", 10);
    ASSERT_TRUE(s.RunUntil([&] { return s.Completed("A", id); }, kSecond));
  }
  s.RunFor(kSecond);  // the delayed original arrives now
  EXPECT_EQ(s.MaxRunsOfOneRpc(), 1);
  EXPECT_EQ(s.TotalHandlerRuns(), 4);
  EXPECT_GE(s.host("B").homa->stats().late_duplicates, 1u);
  EXPECT_EQ(s.host("B").homa->num_server_rpcs(), 0u);
}

TEST(TimerTest, ServerKeepsStateUntilClientAcks) {
  Scenario s;
  s.AddHost("A");
  s.AddHost("B");
  s.net().Partition("A", "B");
  s.net().Heal("A", "B");
  s.net().DropNext(DescriptionStartsWith("ACK"));
  uint64_t id = s.Call("A", "B", 100);
  ASSERT_TRUE(s.RunUntil([&] { return s.Completed("A", id); }, kSecond));
  // Response delivered, but the ack was lost: the server still holds the RPC.
  EXPECT_EQ(s.host("B").homa->num_server_rpcs(), 1u);
  ASSERT_TRUE(s.RunUntil([&] { return s.host("B").homa->num_server_rpcs() == 0; }, kSecond));
}

TEST(TimerTest, CancelledRpcProducesNoEventAndServerIsReleased) {
  Scenario s;
  s.AddHost("A");
  Host& b = s.AddHost("B");
  b.auto_echo = false;
  uint64_t id = s.Call("A", "B", 100);
  ASSERT_TRUE(s.RunUntil([&] { return !b.held_requests.empty(); }, kSecond));
  EXPECT_TRUE(s.host("A").homa->Cancel(id));
  EXPECT_FALSE(s.host("A").homa->Cancel(id));
  s.RunFor(10 * kNsPerMs);
  EXPECT_TRUE(s.host("A").completions.empty());
  EXPECT_EQ(b.homa->num_server_rpcs(), 0u);
}

TEST(TimerTest, ResponseStarvedByOurOwnGrantsDoesNotTimeOut) {
  // One message granted at a time and no FIFO share: the second response
  // waits 40 ms for grants, twice the peer-death timeout. Keep-alive grants
  // answered with BUSY must keep both ends from declaring the other dead.
  HomaConfig config;
  config.overcommit = 1;
  config.grant_fifo_permille = 0;
  config.timeout_ticks = 20;
  Scenario s;
  transport::fake::LinkConfig link;
  link.bandwidth_bps = 1'000'000'000;
  s.net().SetDefaultLink(link);
  s.AddHost("A", config);
  s.AddHost("B", config);
  s.AddHost("C", config);
  uint64_t first = s.Call("A", "B", 5'000'000);
  uint64_t second = s.Call("A", "C", 5'000'000);
  ASSERT_TRUE(s.RunUntil([&] { return s.Completed("A", first) && s.Completed("A", second); },
                         10 * kSecond));
  EXPECT_EQ(s.host("A").completions.at(first).kind, HomaEvent::Kind::kResponse)
      << s.host("A").completions.at(first).status;
  EXPECT_EQ(s.host("A").completions.at(second).kind, HomaEvent::Kind::kResponse)
      << s.host("A").completions.at(second).status;
  EXPECT_EQ(s.MaxRunsOfOneRpc(), 1);
}

TEST(TimerTest, RequestOverTheServersLimitIsRefusedOnceAndAnswered) {
  HomaConfig client;
  HomaConfig server;
  server.max_message_bytes = 1000;  // the client may send more than it takes
  Scenario s;
  s.AddHost("A", client);
  s.AddHost("B", server);
  uint64_t id = s.Call("A", "B", 5000);
  ASSERT_TRUE(s.RunUntil([&] { return s.Completed("A", id); }, kSecond));
  EXPECT_EQ(s.host("A").completions.at(id).kind, HomaEvent::Kind::kResponse);
  EXPECT_EQ(s.host("B").refused_requests, 1);
  EXPECT_EQ(s.TotalHandlerRuns(), 0);
  EXPECT_EQ(s.host("A").homa->stats().restarts, 0u);
}

TEST(TimerTest, RestartsAreBoundedWhenTheServerNeverKeepsTheRequest) {
  HomaConfig config;
  config.max_restarts = 3;
  Scenario s;
  s.AddHost("A", config);
  s.AddHost("B", config);
  // Every request DATA is lost; the server answers each RESEND with RPC_UNKNOWN.
  transport::fake::LinkConfig lossy;
  lossy.drop_probability = 1.0;
  s.net().SetLink("A", "B", lossy);
  s.net().SetLink("B", "A", transport::fake::LinkConfig{});
  uint64_t id = s.Call("A", "B", 100);
  ASSERT_TRUE(s.RunUntil([&] { return s.Completed("A", id); }, 10 * kSecond));
  EXPECT_EQ(s.host("A").completions.at(id).status.code(), StatusCode::kUnavailable);
}

TEST(TimerTest, ResendCapDelaysButNeverStarvesAndLivePeersSurviveBursts) {
  // 3,000 RPCs whose requests are all lost at once: more RESENDs fall due in
  // one tick than the per-tick cap allows. Every RPC must still recover.
  Scenario s(5);
  s.AddHost("A");
  s.AddHost("B");
  std::vector<uint64_t> ids;
  s.net().DropNext(FlowDescriptionStartsWith("A", "B", "DATA"));
  transport::fake::LinkConfig lossy;
  lossy.drop_probability = 1.0;
  s.net().SetLink("A", "B", lossy);
  for (int i = 0; i < 3000; ++i) ids.push_back(s.Call("A", "B", 64));
  s.RunFor(kNsPerMs);
  s.net().SetLink("A", "B", transport::fake::LinkConfig{});
  ASSERT_TRUE(s.RunUntil([&] { return s.host("A").completions.size() == ids.size(); },
                         30 * kSecond));
  for (uint64_t id : ids) {
    ASSERT_EQ(s.host("A").completions.at(id).kind, HomaEvent::Kind::kResponse)
        << s.host("A").completions.at(id).status;
  }
  EXPECT_EQ(s.MaxRunsOfOneRpc(), 1);
}

TEST(TimerTest, TenThousandConcurrentRpcsCompleteExactlyOnce) {
  Scenario s(99);
  s.AddHost("A");
  s.AddHost("B");
  transport::fake::LinkConfig link;
  link.bandwidth_bps = 25'000'000'000;
  link.drop_probability = 0.01;
  s.net().SetDefaultLink(link);
  std::vector<uint64_t> ids;
  for (int i = 0; i < 10'000; ++i) ids.push_back(s.Call("A", "B", 64 + i % 512));
  ASSERT_TRUE(s.RunUntil([&] { return s.host("A").completions.size() == ids.size(); },
                         60 * kSecond));
  for (uint64_t id : ids) {
    ASSERT_EQ(s.host("A").completions.at(id).kind, HomaEvent::Kind::kResponse);
  }
  EXPECT_EQ(s.TotalHandlerRuns(), 10'000);
  EXPECT_EQ(s.MaxRunsOfOneRpc(), 1);
}

}  // namespace
}  // namespace wharf::homa
