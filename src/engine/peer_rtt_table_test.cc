#include "engine/peer_rtt_table.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace wharf::engine {
namespace {

using transport::NetAddress;

PeerRttKey Peer(uint32_t n, uint8_t transport = 0) {
  return {transport, NetAddress::Ipv4(0xC6120000 + n, 4000)};
}

// What a Take handed out, by "transport/address".
struct Taken {
  uint64_t count = 0;
  uint64_t min_ns = 0, max_ns = 0;
  uint64_t failures = 0;
};
std::map<std::string, Taken> TakeAll(PeerRttTable& table, TimeNs now) {
  std::map<std::string, Taken> out;
  table.Take(now, [&](const PeerRttDelta& d) {
    out[std::to_string(d.peer.transport) + "/" + d.peer.address.ToString()] = {
        d.round_trips.Count(), d.round_trips.Min(), d.round_trips.Max(), d.failures};
  });
  return out;
}

TEST(PeerRttTableTest, RoundTripsAndFailuresArePerPeerAndTransport) {
  PeerRttTable table({});
  table.RecordRoundTrip(Peer(1), 100, 20'000);
  table.RecordRoundTrip(Peer(1), 200, 30'000);
  table.RecordRoundTrip(Peer(1, /*transport=*/1), 300, 90'000);
  table.RecordFailure(Peer(2), 400);
  EXPECT_EQ(table.size(), 3u);
  auto taken = TakeAll(table, 500);
  ASSERT_EQ(taken.size(), 3u);
  const Taken& homa = taken["0/198.18.0.1:4000"];
  EXPECT_EQ(homa.count, 2u);
  EXPECT_EQ(homa.min_ns, 20'000u);
  EXPECT_EQ(homa.max_ns, 30'000u);
  EXPECT_EQ(homa.failures, 0u);
  EXPECT_EQ(taken["1/198.18.0.1:4000"].max_ns, 90'000u);
  EXPECT_EQ(taken["0/198.18.0.2:4000"].count, 0u);
  EXPECT_EQ(taken["0/198.18.0.2:4000"].failures, 1u);
  EXPECT_EQ(table.counters().round_trips, 3u);
  EXPECT_EQ(table.counters().failures, 1u);
}

TEST(PeerRttTableTest, ATakeHandsOutOnlyWhatIsNewSinceTheLast) {
  PeerRttTable table({});
  table.RecordRoundTrip(Peer(1), 100, 5'000);
  EXPECT_EQ(TakeAll(table, 200).size(), 1u);
  EXPECT_TRUE(TakeAll(table, 300).empty());  // nothing new: nobody visited
  table.RecordRoundTrip(Peer(1), 400, 7'000);
  auto taken = TakeAll(table, 500);
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_EQ(taken.begin()->second.count, 1u);
  EXPECT_EQ(taken.begin()->second.min_ns, 7'000u);
}

TEST(PeerRttTableTest, IdlePeersAreForgottenAfterTheirLastValuesWereTaken) {
  PeerRttTable table({.max_peers = 8, .idle_timeout_ns = 10 * kNsPerSec});
  table.RecordRoundTrip(Peer(1), 0, 5'000);
  table.RecordRoundTrip(Peer(2), 5 * kNsPerSec, 5'000);
  // At 12 s peer 1 is idle (12 s > 10 s) and peer 2 is not: both are handed
  // out, then peer 1 goes.
  auto taken = TakeAll(table, 12 * kNsPerSec);
  EXPECT_EQ(taken.size(), 2u);
  EXPECT_EQ(table.size(), 1u);
  EXPECT_EQ(table.counters().evicted, 1u);
  (void)TakeAll(table, 16 * kNsPerSec);
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(table.counters().evicted, 2u);
}

TEST(PeerRttTableTest, AFullTableRefusesNewPeersUntilOneIsIdle) {
  PeerRttTable table({.max_peers = 2, .idle_timeout_ns = 10 * kNsPerSec});
  table.RecordRoundTrip(Peer(1), 0, 1'000);
  table.RecordRoundTrip(Peer(2), 0, 1'000);
  table.RecordRoundTrip(Peer(3), kNsPerSec, 1'000);  // full, nobody idle
  table.RecordFailure(Peer(4), kNsPerSec);
  EXPECT_EQ(table.size(), 2u);
  EXPECT_EQ(table.counters().untracked, 2u);
  table.RecordRoundTrip(Peer(1), 5 * kNsPerSec, 1'000);  // known peers still count
  EXPECT_EQ(table.counters().round_trips, 3u);
  // At 11 s peer 2 is idle and gives its place to peer 3.
  table.RecordRoundTrip(Peer(3), 11 * kNsPerSec, 2'000);
  EXPECT_EQ(table.size(), 2u);
  EXPECT_EQ(table.counters().evicted, 1u);
  auto taken = TakeAll(table, 11 * kNsPerSec);
  EXPECT_EQ(taken.count("0/198.18.0.2:4000"), 0u);
  EXPECT_EQ(taken["0/198.18.0.3:4000"].count, 1u);
}

TEST(PeerRttTableTest, AFullTableIsScannedAtMostOncePerSecond) {
  PeerRttTable table({.max_peers = 1, .idle_timeout_ns = kNsPerSec});
  table.RecordRoundTrip(Peer(1), 0, 1'000);
  // 0.5 s: peer 1 is not idle; the scan finds nothing and the next may
  // come at 1.5 s only, so at 1.2 s (peer 1 idle by then) peer 2 still
  // finds no room.
  table.RecordRoundTrip(Peer(2), kNsPerSec / 2, 1'000);
  table.RecordRoundTrip(Peer(2), 1'200 * kNsPerMs, 1'000);
  EXPECT_EQ(table.counters().untracked, 2u);
  table.RecordRoundTrip(Peer(2), 1'500 * kNsPerMs, 1'000);
  EXPECT_EQ(table.counters().untracked, 2u);
  EXPECT_EQ(table.counters().evicted, 1u);
}

TEST(PeerRttTableTest, ABatchAddsAsItsValuesWould) {
  PeerRttTable from({});
  from.RecordRoundTrip(Peer(1), 100, 5'000);
  from.RecordRoundTrip(Peer(1), 100, 9'000);
  from.RecordFailure(Peer(1), 100);
  PeerRttTable into({});
  into.RecordRoundTrip(Peer(1), 50, 1'000);
  from.Take(200, [&](const PeerRttDelta& d) { into.Add(d.peer, 200, d.round_trips, d.failures); });
  auto taken = TakeAll(into, 300);
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_EQ(taken.begin()->second.count, 3u);
  EXPECT_EQ(taken.begin()->second.min_ns, 1'000u);
  EXPECT_EQ(taken.begin()->second.max_ns, 9'000u);
  EXPECT_EQ(taken.begin()->second.failures, 1u);
  EXPECT_EQ(into.counters().round_trips, 3u);
}

TEST(PeerRttTableTest, ZeroPeersMeansOff) {
  PeerRttTable table({.max_peers = 0});
  EXPECT_FALSE(table.enabled());
  EXPECT_TRUE(PeerRttTable({}).enabled());
}

}  // namespace
}  // namespace wharf::engine
