// Scenario tests of peer liveness: a paused or busy peer is not dead (only
// homa.peer_timeout of silence, seconds, ends its RPCs), while the kernel's
// word that a peer is unreachable (a PathError) ends them at once.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "homa/homa_transport.h"
#include "homa/testing/scenario.h"

namespace wharf::homa {
namespace {

using sim::Scenario;
using transport::NetAddress;
using transport::PathError;

constexpr DurationNs kSecond = kNsPerSec;

// A server paused for a second (SIGSTOP, a debugger, a VM stall) hears and
// says nothing; its clients keep probing and lose no RPC.
TEST(LivenessTest, ServerPausedForOneSecondLosesNoRpc) {
  Scenario s;
  s.AddHost("A");
  s.AddHost("B");
  std::vector<uint64_t> ids;
  // 2 MB: still in flight after 20 us even with the pacer's 100 us backlog.
  for (size_t size : {100, 5'000, 2'000'000}) ids.push_back(s.Call("A", "B", size));
  s.RunFor(20 * kNsPerUs);  // mid-transfer
  s.net().Partition("A", "B");
  s.RunFor(1 * kSecond);
  EXPECT_FALSE(s.Completed("A", ids.back()));  // the long one was cut
  s.net().Heal("A", "B");
  ASSERT_TRUE(s.RunUntil(
      [&] {
        for (uint64_t id : ids) {
          if (!s.Completed("A", id)) return false;
        }
        return true;
      },
      kSecond));
  for (uint64_t id : ids) {
    EXPECT_EQ(s.host("A").completions.at(id).kind, HomaEvent::Kind::kResponse)
        << s.host("A").completions.at(id).status;
  }
  EXPECT_EQ(s.MaxRunsOfOneRpc(), 1);
  EXPECT_EQ(s.host("A").homa->stats().client_timeouts, 0u);
}

// A handler that takes far longer than the peer timeout: the client's
// RESENDs are answered BUSY by the live server, so the RPC never fails.
TEST(LivenessTest, LongRunningHandlerIsKeptAliveByBusy) {
  Scenario s;
  s.AddHost("A");
  s.AddHost("B").auto_echo = false;
  uint64_t id = s.Call("A", "B", 3'000);
  s.RunFor(20 * kSecond);  // four peer timeouts
  EXPECT_FALSE(s.Completed("A", id));
  EXPECT_GT(s.host("B").homa->stats().busy_sent, 0u);
  ASSERT_EQ(s.host("B").held_requests.size(), 1u);
  HomaEvent held = std::move(s.host("B").held_requests[0]);
  ASSERT_TRUE(s.host("B").homa->SendResponse(held.server_key, std::move(held.message)).ok());
  ASSERT_TRUE(s.RunUntil([&] { return s.Completed("A", id); }, kSecond));
  EXPECT_EQ(s.host("A").completions.at(id).kind, HomaEvent::Kind::kResponse);
}

// A host that vanished without a word fails its RPCs after the peer
// timeout, not before.
TEST(LivenessTest, SilentPeerFailsAfterPeerTimeout) {
  HomaConfig config;
  config.peer_timeout_ns = 2 * kSecond;
  Scenario s;
  s.AddHost("A", config);
  s.AddHost("B", config);
  s.net().Partition("A", "B");
  const TimeNs start = s.clock().NowNs();
  uint64_t id = s.Call("A", "B", 1'000);
  ASSERT_TRUE(s.RunUntil([&] { return s.Completed("A", id); }, 10 * kSecond));
  const HomaEvent& e = s.host("A").completions.at(id);
  EXPECT_EQ(e.status.code(), StatusCode::kUnavailable);
  EXPECT_NE(e.status.message().find("2000 ms"), std::string::npos) << e.status;
  const DurationNs took = s.clock().NowNs() - start;
  EXPECT_GE(took, 2 * kSecond);
  EXPECT_LE(took, 2 * kSecond + 10 * kNsPerMs);
}

// The kernel says the server's port is closed (its process died): every
// RPC to it fails at once, naming the peer and the reason.
TEST(LivenessTest, PortUnreachableFailsThatPeersRpcsAtOnce) {
  Scenario s;
  s.AddHost("A");
  s.AddHost("B").auto_echo = false;
  s.AddHost("C").auto_echo = false;
  uint64_t to_b1 = s.Call("A", "B", 100);
  uint64_t to_b2 = s.Call("A", "B", 50'000);
  uint64_t to_c = s.Call("A", "C", 100);
  s.RunFor(1 * kNsPerMs);
  const NetAddress b = s.host("B").address();
  s.host("A").net->InjectPathError(
      {.to = b, .kind = PathError::Kind::kPortUnreachable, .reporter = b.WithPort(0)});
  s.RunFor(10 * kNsPerUs);
  for (uint64_t id : {to_b1, to_b2}) {
    ASSERT_TRUE(s.Completed("A", id));
    const HomaEvent& e = s.host("A").completions.at(id);
    EXPECT_EQ(e.status.code(), StatusCode::kUnavailable);
    EXPECT_NE(e.status.message().find(b.ToString()), std::string::npos) << e.status;
    EXPECT_NE(e.status.message().find("port unreachable"), std::string::npos) << e.status;
  }
  EXPECT_FALSE(s.Completed("A", to_c));
  EXPECT_EQ(s.host("A").homa->stats().unreachable_failures, 2u);
  EXPECT_EQ(s.host("A").homa->num_client_rpcs(), 1u);
}

// An advisory report (e.g. fragmentation needed) ends nothing.
TEST(LivenessTest, AdvisoryPathErrorIsOnlyCounted) {
  Scenario s;
  s.AddHost("A");
  s.AddHost("B").auto_echo = false;
  uint64_t id = s.Call("A", "B", 100);
  s.RunFor(1 * kNsPerMs);
  s.host("A").net->InjectPathError({.to = s.host("B").address(), .kind = PathError::Kind::kOther});
  s.RunFor(1 * kNsPerMs);
  EXPECT_FALSE(s.Completed("A", id));
  EXPECT_EQ(s.host("A").homa->stats().path_errors, 1u);
  EXPECT_EQ(s.host("A").homa->stats().peers_unreachable, 0u);
}

// A server told its client is unreachable drops that client's RPCs.
TEST(LivenessTest, UnreachableClientsServerStateIsDropped) {
  Scenario s;
  s.AddHost("A");
  s.AddHost("B").auto_echo = false;
  s.Call("A", "B", 100);
  s.Call("A", "B", 100);
  ASSERT_TRUE(s.RunUntil([&] { return s.host("B").held_requests.size() == 2; }, kSecond));
  EXPECT_EQ(s.host("B").homa->num_server_rpcs(), 2u);
  s.host("B").net->InjectPathError(
      {.to = s.host("A").address(), .kind = PathError::Kind::kHostUnreachable});
  s.RunFor(10 * kNsPerUs);
  EXPECT_EQ(s.host("B").homa->num_server_rpcs(), 0u);
  HomaEvent held = std::move(s.host("B").held_requests[0]);
  EXPECT_EQ(s.host("B").homa->SendResponse(held.server_key, Buffer()).code(),
            StatusCode::kNotFound);
}

// With the network reporting closed ports, a call to an address where
// nothing listens fails within the first RESEND interval, not after seconds.
TEST(LivenessTest, CallToClosedPortFailsFastWhenTheNetworkSaysSo) {
  Scenario s;
  s.AddHost("A");
  s.net().SetReportNoRoute(true);
  const TimeNs start = s.clock().NowNs();
  auto id = s.host("A").homa->SendRequest(NetAddress::Ipv4(0xC6120063, 4000), Buffer());
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(s.RunUntil([&] { return s.Completed("A", *id); }, kSecond));
  EXPECT_EQ(s.host("A").completions.at(*id).status.code(), StatusCode::kUnavailable);
  EXPECT_LT(s.clock().NowNs() - start, 1 * kNsPerMs);
}

}  // namespace
}  // namespace wharf::homa
