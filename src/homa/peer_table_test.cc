// Unit tests of Peer (unscheduled priorities, probe budget) and PeerTable.
#include "homa/peer_table.h"

#include <gtest/gtest.h>

#include <array>
#include <iterator>
#include <set>

namespace wharf::homa {
namespace {

using transport::NetAddress;

Peer PeerWithDefaultCutoffs() {
  Peer p;
  p.cutoffs = HomaConfig{}.unsched_cutoffs;  // {0,0,0,0,1e9,15000,2800,200}
  return p;
}

TEST(PeerTest, UnschedPriorityAroundEachCutoff) {
  Peer p = PeerWithDefaultCutoffs();
  EXPECT_EQ(p.UnschedPriority(0), 7);
  EXPECT_EQ(p.UnschedPriority(1), 7);
  EXPECT_EQ(p.UnschedPriority(200), 7);
  EXPECT_EQ(p.UnschedPriority(201), 6);
  EXPECT_EQ(p.UnschedPriority(2'800), 6);
  EXPECT_EQ(p.UnschedPriority(2'801), 5);
  EXPECT_EQ(p.UnschedPriority(15'000), 5);
  EXPECT_EQ(p.UnschedPriority(15'001), 4);
  EXPECT_EQ(p.UnschedPriority(1'000'000'000), 4);
}

TEST(PeerTest, UnschedPriorityBeyondAllCutoffsIsLowestLevelInUse) {
  Peer p = PeerWithDefaultCutoffs();
  EXPECT_EQ(p.UnschedPriority(1'000'000'001), 4);
  EXPECT_EQ(p.UnschedPriority(UINT32_MAX), 4);

  Peer q;
  q.cutoffs = {0, 0, 0, 0, 0, 0, 5'000, 100};
  EXPECT_EQ(q.UnschedPriority(100), 7);
  EXPECT_EQ(q.UnschedPriority(101), 6);
  EXPECT_EQ(q.UnschedPriority(5'001), 6);  // beyond all: lowest in use

  Peer none;  // no cutoffs at all
  EXPECT_EQ(none.UnschedPriority(10), 0);
}

TEST(PeerTest, TakeProbeBudgetIsPerTick) {
  Peer p;
  EXPECT_TRUE(p.TakeProbe(1, 2));
  EXPECT_TRUE(p.TakeProbe(1, 2));
  EXPECT_FALSE(p.TakeProbe(1, 2));
  EXPECT_FALSE(p.TakeProbe(1, 2));
  EXPECT_EQ(p.probes_unanswered, 2);  // refused probes are not counted
  // A new tick refills the budget.
  EXPECT_TRUE(p.TakeProbe(2, 2));
  EXPECT_EQ(p.probes_this_tick, 1);
  EXPECT_EQ(p.probes_unanswered, 3);
  EXPECT_TRUE(p.TakeProbe(2, 2));
  EXPECT_FALSE(p.TakeProbe(2, 2));
  // A zero budget allows nothing.
  EXPECT_FALSE(p.TakeProbe(3, 0));
  EXPECT_EQ(p.probes_unanswered, 4);
}

TEST(PeerTableTest, FindOrAddCreatesOnceWithOurCutoffsAndAnId) {
  HomaConfig config;
  config.unsched_cutoffs = {0, 0, 0, 0, 0, 9'000, 900, 90};
  config.cutoff_version = 7;
  PeerTable table(config);
  NetAddress a = NetAddress::Ipv4(0x0a000001, 4000);
  NetAddress b = NetAddress::Ipv4(0x0a000002, 4000);
  EXPECT_EQ(table.Find(a), nullptr);
  EXPECT_EQ(table.size(), 0u);

  Peer& pa = *table.FindOrAdd(a);
  EXPECT_EQ(pa.addr, a);
  EXPECT_EQ(pa.cutoffs, config.unsched_cutoffs);
  EXPECT_EQ(pa.cutoff_version, 7);
  EXPECT_NE(pa.id, 0u);
  EXPECT_EQ(table.size(), 1u);

  pa.probes_unanswered = 3;  // state survives a second Get
  Peer& again = *table.FindOrAdd(a);
  EXPECT_EQ(&again, &pa);
  EXPECT_EQ(again.probes_unanswered, 3);
  EXPECT_EQ(table.size(), 1u);
  EXPECT_EQ(table.Find(a), &pa);

  Peer& pb = *table.FindOrAdd(b);
  EXPECT_NE(&pb, &pa);
  EXPECT_NE(pb.id, pa.id);
  EXPECT_EQ(table.size(), 2u);
  EXPECT_EQ(table.Find(b), &pb);
  // Another port is another peer.
  EXPECT_EQ(table.Find(NetAddress::Ipv4(0x0a000001, 4001)), nullptr);

  int count = 0;
  table.ForEach([&](Peer&) { ++count; });
  EXPECT_EQ(count, 2);

  // Alternating lookups (the last-peer shortcut must not confuse them).
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(table.FindOrAdd(a), &pa);
    EXPECT_EQ(table.FindOrAdd(b), &pb);
  }
  std::array<uint8_t, 16> v6{};
  v6[15] = 1;
  Peer& pc = *table.FindOrAdd(NetAddress::Ipv6(v6, 4000));
  EXPECT_NE(&pc, &pa);
  EXPECT_EQ(table.size(), 3u);
  EXPECT_EQ(table.stats().created, 3u);
}

TEST(PeerTableTest, CapRefusesNewPeersAndRemoveMakesRoom) {
  HomaConfig config;
  config.max_peers = 2;
  PeerTable table(config);
  NetAddress a = NetAddress::Ipv4(0x0a000001, 4000);
  NetAddress b = NetAddress::Ipv4(0x0a000002, 4000);
  NetAddress c = NetAddress::Ipv4(0x0a000003, 4000);
  Peer* pa = table.FindOrAdd(a);
  Peer* pb = table.FindOrAdd(b);
  ASSERT_TRUE(pa && pb);
  EXPECT_TRUE(table.full());
  EXPECT_EQ(table.FindOrAdd(c), nullptr);
  EXPECT_EQ(table.stats().refused, 1u);
  EXPECT_EQ(table.FindOrAdd(a), pa);  // known peers are still found

  table.Remove(*pa);
  EXPECT_EQ(table.Find(a), nullptr);  // also through the last-peer shortcut
  EXPECT_EQ(table.stats().freed, 1u);
  Peer* pc = table.FindOrAdd(c);
  ASSERT_NE(pc, nullptr);
  EXPECT_EQ(table.Find(b), pb);
  EXPECT_EQ(table.size(), 2u);
  // The sweep visits every peer, round robin.
  std::set<Peer*> seen;
  for (int i = 0; i < 4; ++i) seen.insert(table.NextInSweep());
  EXPECT_EQ(seen, (std::set<Peer*>{pb, pc}));
}

TEST(OutstandingIdsTest, FloorIsTheSmallestUnfinishedId) {
  OutstandingIds ids;
  EXPECT_TRUE(ids.empty());
  ids.Add(10);
  ids.Add(12);
  ids.Add(14);
  EXPECT_EQ(ids.Floor(), 10u);
  ids.Remove(12);  // out of order
  EXPECT_EQ(ids.Floor(), 10u);
  ids.Remove(10);
  EXPECT_EQ(ids.Floor(), 14u);
  ids.Remove(10);  // twice: nothing
  ids.Remove(99);  // unknown: nothing
  EXPECT_EQ(ids.Floor(), 14u);
  ids.Remove(14);
  EXPECT_TRUE(ids.empty());
  ids.Add(16);
  EXPECT_EQ(ids.Floor(), 16u);
}

// One long-running RPC while many short ones start and finish behind it:
// the floor stays at the long one, and finished ids are compacted away.
TEST(OutstandingIdsTest, ManyFinishedBehindALongRunningOne) {
  OutstandingIds ids;
  ids.Add(2);
  std::set<uint64_t> ref = {2};
  uint64_t next = 4;
  for (int i = 0; i < 10000; ++i) {
    ids.Add(next);
    ref.insert(next);
    next += 2;
    if (i % 3 != 2) {
      // Finish the newest-but-one (out of order), keeping some alive.
      const uint64_t victim = *std::prev(ref.end(), ref.size() > 2 ? 2 : 1);
      if (victim != 2) {
        ids.Remove(victim);
        ref.erase(victim);
      }
    }
    ASSERT_EQ(ids.Floor(), *ref.begin());
  }
  while (ref.size() > 1) {
    const uint64_t id = *std::next(ref.begin());
    ids.Remove(id);
    ref.erase(id);
    ASSERT_EQ(ids.Floor(), 2u);
  }
  ids.Remove(2);
  EXPECT_TRUE(ids.empty());
}

}  // namespace
}  // namespace wharf::homa
