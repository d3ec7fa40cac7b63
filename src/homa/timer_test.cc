// Tests of the protocol timer. First LivenessTimer alone: RPCs in a
// registry, ticked by hand, its plan rendered as text ("RESEND 60000@0 to
// 100; NEED_ACK to 41; KEEPALIVE to 100; DEAD 100"). Then scenario tests of
// the host's timer on FakeNetwork + SimClock: resend timing, peer death, the
// at-most-once guarantees that depend on acks, floors and tombstones.
#include "homa/timer.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

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
constexpr DurationNs kTick = kNsPerMs;  // HomaConfig's default tick

// ---------------------------------------------------------- LivenessTimer

// One peer's RPCs in a registry, and a timer ticking over them.
class TimerWorld {
 public:
  explicit TimerWorld(const HomaConfig& config = {}) : rpcs_(100), timer_(config, 0) {}

  Rpc& Client() { return rpcs_.NewClientRpc(nullptr, 1, peer_, 0); }
  Rpc& Server(RpcState state) {
    return rpcs_.NewServerRpc(nullptr, 0, peer_, peer_.clients[EndpointPair(0, 1)], 1,
                              next_server_id_ += 2, state);
  }
  // Gives rpc an incoming message of `length` with [0, granted) granted and
  // the `arrived` ranges received.
  static void Incoming(Rpc& rpc, uint32_t length, uint32_t granted,
                       std::vector<std::pair<uint32_t, uint32_t>> arrived) {
    static const std::vector<std::byte> kBytes(100'000);
    rpc.in.emplace(length, granted, 0);
    for (auto [begin, end] : arrived) {
      rpc.in->AddData(begin, std::span(kBytes).first(end - begin), granted);
    }
  }
  // Runs tick `n` (at n ms) and renders its plan.
  std::string Tick(int64_t n) {
    const LivenessTimer::Plan& plan = timer_.Tick(n * kTick, rpcs_);
    std::string out;
    auto add = [&](const std::string& entry) {
      if (!out.empty()) out += "; ";
      out += entry;
    };
    for (const Rpc* rpc : plan.keepalives) add("KEEPALIVE to " + std::to_string(rpc->id));
    for (const LivenessTimer::Probe& p : plan.probes) {
      add(p.need_ack ? "NEED_ACK to " + std::to_string(p.rpc->id)
                     : "RESEND " + std::to_string(p.length) + "@" + std::to_string(p.offset) +
                           " to " + std::to_string(p.rpc->id));
    }
    for (const Rpc* rpc : plan.dead_clients) add("DEAD " + std::to_string(rpc->id));
    for (const Rpc* rpc : plan.dead_servers) add("DEAD " + std::to_string(rpc->id));
    if (plan.refresh_paths) add("REFRESH_PATHS");
    return out;
  }
  // Ticks first..last; "<tick>: <plan>" for each tick that planned anything.
  std::string Ticks(int64_t first, int64_t last) {
    std::string out;
    for (int64_t n = first; n <= last; ++n) {
      std::string plan = Tick(n);
      if (plan.empty()) continue;
      if (!out.empty()) out += " | ";
      out += std::to_string(n) + ": " + plan;
    }
    return out;
  }

  Peer peer_;
  RpcRegistry rpcs_;
  LivenessTimer timer_;
  uint64_t next_server_id_ = 1000;
};

TEST(LivenessTimer, NextDeadline__AnIdleHostWakesOnlyEveryIdleTick) {
  TimerWorld w;
  EXPECT_EQ(w.timer_.NextDeadline(/*idle=*/false), kTick);
  EXPECT_EQ(w.timer_.NextDeadline(/*idle=*/true), LivenessTimer::kIdleTickNs);
  EXPECT_FALSE(w.timer_.Due(kTick - 1));
  EXPECT_TRUE(w.timer_.Due(kTick));
  w.Tick(60);
  EXPECT_EQ(w.timer_.NextDeadline(false), 61 * kTick);
  EXPECT_EQ(w.timer_.NextDeadline(true), 60 * kTick + LivenessTimer::kIdleTickNs);
  EXPECT_EQ(w.timer_.tick_count(), 1);
}

TEST(LivenessTimer, Tick__AClientAsksForItsResponseAfterResendTicksThenEveryInterval) {
  TimerWorld w;
  w.Client();
  // No response byte yet: RESEND of the first unsched_bytes.
  EXPECT_EQ(w.Ticks(1, 12), "5: RESEND 60000@0 to 100 | 10: RESEND 60000@0 to 100");
  EXPECT_EQ(w.peer_.probes_unanswered, 2);
}

TEST(LivenessTimer, Tick__AReceiverAsksForTheFirstGap) {
  TimerWorld w;
  Rpc& rpc = w.Server(RpcState::kServerReceiving);
  TimerWorld::Incoming(rpc, 10'000, 10'000, {{0, 1424}, {2848, 4272}});
  EXPECT_EQ(w.Ticks(1, 8), "5: RESEND 1424@1424 to 1003");
  rpc.Heard();  // the peer sent something: silence starts again (not 10)
  EXPECT_EQ(w.Ticks(9, 13), "13: RESEND 1424@1424 to 1003");
}

TEST(LivenessTimer, Tick__AServerAwaitingItsAckAsksAfterNeedAckTicks) {
  TimerWorld w;
  w.Server(RpcState::kServerAwaitAck);
  EXPECT_EQ(w.Ticks(1, 7), "2: NEED_ACK to 1003 | 7: NEED_ACK to 1003");
}

TEST(LivenessTimer, Tick__NoTimerRunsWhileTheApplicationHoldsTheRequest) {
  TimerWorld w;
  Rpc& rpc = w.Server(RpcState::kServerInService);
  EXPECT_EQ(w.Ticks(1, 10'000), "10000: REFRESH_PATHS");
  EXPECT_EQ(rpc.silent_ticks, 0);
}

TEST(LivenessTimer, Tick__AMessageWaitingOnOurGrantsGetsKeepAlivesNotResends) {
  TimerWorld w;
  Rpc& rpc = w.Client();
  rpc.state = RpcState::kClientReceiving;
  TimerWorld::Incoming(rpc, 100'000, 1424, {{0, 1424}});  // all granted bytes arrived
  EXPECT_EQ(w.Tick(1), "");
  EXPECT_TRUE(w.timer_.Tick(2 * kTick, w.rpcs_).grant_pass);
  // One per peer per resend interval, once the peer was quiet that long.
  EXPECT_EQ(w.Ticks(3, 16), "5: KEEPALIVE to 100 | 10: KEEPALIVE to 100 | 15: KEEPALIVE to 100");
  w.peer_.last_heard_ns = 16 * kTick;
  EXPECT_EQ(w.Ticks(17, 20), "") << "the peer spoke at 16 ms";
}

TEST(LivenessTimer, Tick__BudgetsRotateProbesThroughEveryRpc) {
  TimerWorld w;
  for (int i = 0; i < 40; ++i) w.Client();
  std::set<const Rpc*> probed;
  std::vector<size_t> per_tick;
  for (int64_t n = 1; n <= 7; ++n) {
    const LivenessTimer::Plan& plan = w.timer_.Tick(n * kTick, w.rpcs_);
    if (plan.probes.empty()) continue;
    per_tick.push_back(plan.probes.size());
    for (const LivenessTimer::Probe& p : plan.probes) probed.insert(p.rpc);
  }
  // 16 per peer per tick: the 24 held back go first on the next ticks.
  EXPECT_EQ(per_tick, (std::vector<size_t>{16, 16, 8}));
  EXPECT_EQ(probed.size(), 40u);
}

TEST(LivenessTimer, Tick__ASilentPeerIsPresumedDeadAfterTheTimeoutAndThreeProbes) {
  HomaConfig config;
  config.peer_timeout_ns = 50 * kTick;
  TimerWorld w(config);
  w.Client();
  EXPECT_EQ(w.Ticks(1, 50),
            "5: RESEND 60000@0 to 100 | 10: RESEND 60000@0 to 100 | "
            "15: RESEND 60000@0 to 100 | 20: RESEND 60000@0 to 100 | "
            "25: RESEND 60000@0 to 100 | 30: RESEND 60000@0 to 100 | "
            "35: RESEND 60000@0 to 100 | 40: RESEND 60000@0 to 100 | "
            "45: RESEND 60000@0 to 100 | 50: DEAD 100");
}

TEST(LivenessTimer, Tick__APeerThatSpeaksIsNotDeadWhateverTheRpcHeard) {
  HomaConfig config;
  config.peer_timeout_ns = 50 * kTick;
  TimerWorld w(config);
  w.Client();
  for (int64_t n = 1; n <= 100; ++n) {
    w.peer_.last_heard_ns = n * kTick;  // other RPCs' packets
    EXPECT_EQ(w.Tick(n).find("DEAD"), std::string::npos) << "tick " << n;
  }
}

TEST(LivenessTimer, Tick__ASendingServerWhoseClientWentQuietIsDropped) {
  HomaConfig config;
  config.peer_timeout_ns = 50 * kTick;
  TimerWorld w(config);
  w.Server(RpcState::kServerSending);  // waiting for grants: the client probes
  EXPECT_EQ(w.Ticks(1, 50), "50: DEAD 1003");
}

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
