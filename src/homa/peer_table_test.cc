// Unit tests of Peer (unscheduled priorities, probe budget, client records),
// ClientRecord, PeerTable (lookup, cap, paths, the idle sweep) and
// OutstandingIds.
#include "homa/peer_table.h"

#include <gtest/gtest.h>

#include <array>
#include <iterator>
#include <set>

#include "transport/datagram.h"

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

TEST(Peer, RecordFor__MakesRecordsUpToMaxClients) {
  Peer peer;
  ClientRecord* first = peer.RecordFor(EndpointPair(0, 1), /*max_clients=*/2);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(peer.RecordFor(EndpointPair(0, 1), 2), first);
  EXPECT_NE(peer.RecordFor(EndpointPair(0, 2), 2), nullptr);
  EXPECT_EQ(peer.RecordFor(EndpointPair(0, 3), 2), nullptr);
  EXPECT_EQ(peer.RecordFor(EndpointPair(0, 1), 2), first) << "known clients are still found";
  EXPECT_EQ(peer.clients.size(), 2u);
}

TEST(ClientRecord, AddTombstone__RemembersIdsAboveTheFloorUpToTheCap) {
  ClientRecord record;
  record.floor = 10;
  EXPECT_FALSE(record.AddTombstone(8, 2));  // below the floor: already finished
  EXPECT_TRUE(record.tombstones.empty());
  EXPECT_FALSE(record.AddTombstone(12, 2));
  EXPECT_FALSE(record.AddTombstone(16, 2));
  EXPECT_FALSE(record.AddTombstone(16, 2));  // already there
  EXPECT_TRUE(record.AddTombstone(14, 2));   // over the cap: the oldest goes
  EXPECT_EQ(record.tombstones, (std::set<uint64_t>{14, 16}));
  EXPECT_TRUE(record.IsFinished(8));
  EXPECT_TRUE(record.IsFinished(14));
  EXPECT_FALSE(record.IsFinished(12)) << "forgotten";
}

// A socket whose paths are as the test says.
class PathSocket final : public transport::Datagram {
 public:
  NetAddress LocalAddress() const override { return NetAddress::Ipv4(0x0a000001, 4000); }
  size_t MaxDatagramBytes() const override { return 9000; }
  size_t MaxDatagramBytesTo(const NetAddress&) override { return path_bytes; }
  bool IsLocalPath(const NetAddress&) override { return local; }
  bool IsSoftwarePath(const NetAddress&) override { return software; }
  Result<size_t> Send(std::span<const transport::OutDatagram> batch) override {
    return batch.size();
  }
  Result<size_t> Receive(std::span<transport::InDatagram>) override { return size_t{0}; }
  int ReadableFd() const override { return -1; }

  size_t path_bytes = 1472;
  bool local = false;
  bool software = false;
  int asked = 0;
};

TEST(PeerTable, LearnPath__PacketSizeAndPacingOfThePath) {
  HomaConfig config;
  PeerTable table(config);
  PathSocket socket;
  Peer& peer = *table.FindOrAdd(NetAddress::Ipv4(0x0a000002, 4000));
  socket.path_bytes = 9000;
  table.LearnPath(peer, socket, /*max_datagram_bytes=*/1472);
  EXPECT_EQ(peer.payload_bytes, 1472u - wire::kDataHeaderBytes) << "the socket's limit binds";
  EXPECT_TRUE(peer.paced);
  // Learned once: a later change of path is not asked about.
  socket.path_bytes = 500;
  table.LearnPath(peer, socket, 1472);
  EXPECT_EQ(peer.payload_bytes, 1472u - wire::kDataHeaderBytes);
}

TEST(PeerTable, LearnPath__AutoLeavesSoftwarePathsUnpacedAndARatePacesThem) {
  PathSocket socket;
  socket.software = true;
  HomaConfig automatic;
  PeerTable auto_table(automatic);
  Peer& a = *auto_table.FindOrAdd(NetAddress::Ipv4(0x0a000002, 4000));
  auto_table.LearnPath(a, socket, 1472);
  EXPECT_FALSE(a.paced);
  HomaConfig rate;
  rate.link_rate_auto = false;  // homa.link_rate: 10Gbps
  PeerTable rate_table(rate);
  Peer& b = *rate_table.FindOrAdd(NetAddress::Ipv4(0x0a000002, 4000));
  rate_table.LearnPath(b, socket, 1472);
  EXPECT_TRUE(b.paced) << "only a local path is left unpaced";
  socket.local = true;
  Peer& c = *rate_table.FindOrAdd(NetAddress::Ipv4(0x0a000003, 4000));
  rate_table.LearnPath(c, socket, 1472);
  EXPECT_FALSE(c.paced);
}

TEST(PeerTable, SweepIdle__ForgetsPeersIdleAndSilentForTheIdleTimeout) {
  HomaConfig config;
  config.peer_idle_timeout_ns = 100;
  PeerTable table(config);
  const NetAddress quiet = NetAddress::Ipv4(0x0a000001, 4000);
  const NetAddress busy = NetAddress::Ipv4(0x0a000002, 4000);
  const NetAddress recent = NetAddress::Ipv4(0x0a000003, 4000);
  table.FindOrAdd(quiet)->last_heard_ns = 0;
  Peer& b = *table.FindOrAdd(busy);
  b.last_heard_ns = 0;
  b.live_rpcs = 1;
  table.FindOrAdd(recent)->last_heard_ns = 50;
  table.SweepIdle(/*now=*/120);
  EXPECT_EQ(table.Find(quiet), nullptr);
  EXPECT_NE(table.Find(busy), nullptr) << "a live RPC keeps it";
  EXPECT_NE(table.Find(recent), nullptr) << "heard 70 ns ago";
  EXPECT_EQ(table.stats().freed, 1u);
}

TEST(PeerTable, ReplaceIdle__ForgetsOneQuietIdlePeerIfThereIsOne) {
  HomaConfig config;
  config.max_peers = 2;
  PeerTable table(config);
  Peer& a = *table.FindOrAdd(NetAddress::Ipv4(0x0a000001, 4000));
  Peer& b = *table.FindOrAdd(NetAddress::Ipv4(0x0a000002, 4000));
  a.last_heard_ns = 90;
  b.last_heard_ns = 90;
  b.live_rpcs = 1;
  EXPECT_FALSE(table.ReplaceIdle(/*now=*/100, /*quiet_ns=*/50)) << "a spoke 10 ns ago";
  EXPECT_EQ(table.size(), 2u);
  EXPECT_TRUE(table.ReplaceIdle(/*now=*/200, 50));
  EXPECT_EQ(table.size(), 1u);
  EXPECT_EQ(table.Find(NetAddress::Ipv4(0x0a000001, 4000)), nullptr);
  EXPECT_FALSE(table.full());
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
