// Unit tests of Peer (unscheduled priorities, probe budget) and PeerTable.
#include "homa/peer_table.h"

#include <gtest/gtest.h>

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

TEST(PeerTableTest, GetCreatesOnceWithOurCutoffsAndAnId) {
  HomaConfig config;
  config.unsched_cutoffs = {0, 0, 0, 0, 0, 9'000, 900, 90};
  config.cutoff_version = 7;
  PeerTable table(config);
  NetAddress a = NetAddress::Ipv4(0x0a000001, 4000);
  NetAddress b = NetAddress::Ipv4(0x0a000002, 4000);
  EXPECT_EQ(table.Find(a), nullptr);
  EXPECT_EQ(table.size(), 0u);

  Peer& pa = table.Get(a);
  EXPECT_EQ(pa.addr, a);
  EXPECT_EQ(pa.cutoffs, config.unsched_cutoffs);
  EXPECT_EQ(pa.cutoff_version, 7);
  EXPECT_NE(pa.id, 0u);
  EXPECT_EQ(table.size(), 1u);

  pa.probes_unanswered = 3;  // state survives a second Get
  Peer& again = table.Get(a);
  EXPECT_EQ(&again, &pa);
  EXPECT_EQ(again.probes_unanswered, 3);
  EXPECT_EQ(table.size(), 1u);
  EXPECT_EQ(table.Find(a), &pa);

  Peer& pb = table.Get(b);
  EXPECT_NE(&pb, &pa);
  EXPECT_NE(pb.id, pa.id);
  EXPECT_EQ(table.size(), 2u);
  EXPECT_EQ(table.Find(b), &pb);
  // Another port is another peer.
  EXPECT_EQ(table.Find(NetAddress::Ipv4(0x0a000001, 4001)), nullptr);

  int count = 0;
  table.ForEach([&](Peer&) { ++count; });
  EXPECT_EQ(count, 2);
}

}  // namespace
}  // namespace wharf::homa
