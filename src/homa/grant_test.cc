// Unit tests of grant.h: GrantRanking (which messages, in which order) and
// GrantScheduler (the grant state and the pass). A pass's outcome is
// rendered like a packet log, one entry per GRANT it returned:
// "<rpc id> GRANT <offset> p<priority>[ fifo]".
#include "homa/grant.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "homa/peer_table.h"
#include "homa/rpc.h"

namespace wharf::homa {
namespace {

constexpr uint32_t kPacket = 1424;  // DATA payload of a 1472-byte datagram

std::vector<uint64_t> Ids(const std::vector<GrantRanking::Ranked>& ranked) {
  std::vector<uint64_t> ids;
  for (const auto& r : ranked) ids.push_back(r.id);
  return ids;
}

// ------------------------------------------------------------ GrantRanking

TEST(GrantRanking, Upsert__ReRankingMovesAMessage) {
  GrantRanking g(8, 3);
  g.Upsert(1, 10, 1000, 0);
  g.Upsert(2, 11, 2000, 0);
  g.Upsert(2, 11, 500, 0);
  EXPECT_EQ(Ids(g.ActiveSet()), (std::vector<uint64_t>{2, 1}));
  EXPECT_EQ(g.size(), 2u);
}

TEST(GrantRanking, Upsert__CarriesTheRpcOfEachMessage) {
  GrantRanking g(8, 3);
  Rpc a;
  Rpc b;
  EXPECT_EQ(g.OldestRpc(), nullptr);
  g.Upsert(1, 10, 5000, /*birth_ns=*/2, &a);
  g.Upsert(2, 11, 1000, /*birth_ns=*/1, &b);
  std::vector<GrantRanking::Ranked> active;
  g.ActiveSet(&active);
  ASSERT_EQ(active.size(), 2u);
  EXPECT_EQ(active[0].rpc, &b);
  EXPECT_EQ(active[1].rpc, &a);
  EXPECT_EQ(g.OldestRpc(), &b);
  g.Upsert(2, 11, 900, 1, &b);  // re-ranked, same rpc
  g.Remove(2);
  EXPECT_EQ(g.OldestRpc(), &a);
}

TEST(GrantRanking, Remove__ThePeersNextMessageTakesItsSlot) {
  GrantRanking g(8, 3);
  g.Upsert(1, 10, 1000, 0);
  g.Upsert(2, 10, 2000, 1);  // same peer, longer: not active
  g.Upsert(3, 11, 5000, 2);
  EXPECT_EQ(Ids(g.ActiveSet()), (std::vector<uint64_t>{1, 3}));
  g.Remove(1);
  EXPECT_EQ(Ids(g.ActiveSet()), (std::vector<uint64_t>{2, 3}));
}

TEST(GrantRanking, ActiveSet__ShortestRemainingFirst) {
  GrantRanking g(8, 3);
  g.Upsert(1, /*peer=*/10, 500'000, 0);
  g.Upsert(2, 11, 100'000, 1);
  g.Upsert(3, 12, 300'000, 2);
  EXPECT_EQ(Ids(g.ActiveSet()), (std::vector<uint64_t>{2, 3, 1}));
}

TEST(GrantRanking, ActiveSet__PrioritiesDescendFromMaxAndFloorAtZero) {
  GrantRanking g(8, 2);
  for (uint64_t i = 0; i < 5; ++i) g.Upsert(i, 100 + i, 1000 * (i + 1), 0);
  auto set = g.ActiveSet();
  ASSERT_EQ(set.size(), 5u);
  EXPECT_EQ(set[0].priority, 2);
  EXPECT_EQ(set[1].priority, 1);
  EXPECT_EQ(set[2].priority, 0);
  EXPECT_EQ(set[4].priority, 0);
}

TEST(GrantRanking, ActiveSet__OvercommitLimitsTheSet) {
  GrantRanking g(2, 3);
  for (uint64_t i = 0; i < 6; ++i) g.Upsert(i, i, 1000 + i, 0);
  EXPECT_EQ(Ids(g.ActiveSet()), (std::vector<uint64_t>{0, 1}));
}

TEST(GrantRanking, ActiveSet__ManyMessagesFromOnePeerCostOneSlot) {
  GrantRanking g(8, 3);
  for (uint64_t i = 0; i < 10000; ++i) g.Upsert(i, 1, 100'000 + i, 0);
  g.Upsert(20000, 2, 999'999, 0);
  EXPECT_EQ(Ids(g.ActiveSet()), (std::vector<uint64_t>{0, 20000}));
}

TEST(GrantRanking, Oldest__IsByBirthNotSize) {
  GrantRanking g(8, 3);
  g.Upsert(1, 10, 10, 50);
  g.Upsert(2, 11, 9'000'000, 5);
  EXPECT_EQ(g.Oldest(), 2u);
  g.Remove(2);
  EXPECT_EQ(g.Oldest(), 1u);
  g.Remove(1);
  EXPECT_FALSE(g.Oldest());
  EXPECT_TRUE(g.ActiveSet().empty());
}

// ---------------------------------------------------------- GrantScheduler

// A receiver's incoming messages, fed to a GrantScheduler as their packets
// arrive. Peers are numbered by the test; RPC ids double as handles.
class Receiver {
 public:
  explicit Receiver(const HomaConfig& config) : grants(config, 1472) {}

  // The first `received` bytes of message `id` (`length` bytes, of which the
  // sender sends `unsched` unscheduled) arrived from peer `peer`, in full
  // packets, at `birth_ns`.
  Rpc& Arrive(uint64_t id, int peer, uint32_t length, uint32_t received, uint32_t unsched,
              TimeNs birth_ns = 0) {
    auto rpc = std::make_unique<Rpc>();
    rpc->id = rpc->handle = id;
    rpc->peer = &PeerNumber(peer);
    EXPECT_TRUE(grants.Reserve(length));
    rpc->in.emplace(length, unsched, birth_ns);
    rpcs_.push_back(std::move(rpc));
    Receive(*rpcs_.back(), received);
    return *rpcs_.back();
  }
  // The next `bytes` of rpc's message arrived.
  void Receive(Rpc& rpc, uint32_t bytes) {
    static const std::vector<std::byte> kZeros(kPacket);
    uint32_t offset = static_cast<uint32_t>(rpc.in->received_bytes());
    const uint32_t end = std::min(rpc.in->length(), offset + bytes);
    for (; offset < end; offset += kPacket) {
      const uint32_t size = std::min(kPacket, end - offset);
      rpc.in->AddData(offset, std::span(kZeros).first(size), 0);
    }
    grants.OnData(rpc);
  }
  // Runs a pass: "<id> GRANT <offset> p<priority>[ fifo]; ...".
  std::string Pass() {
    std::string log;
    for (const GrantScheduler::Grant& g : grants.Pass()) {
      if (!log.empty()) log += "; ";
      log += std::to_string(g.rpc->id) + " GRANT " + std::to_string(g.offset) + " p" +
             std::to_string(g.priority) + (g.fifo ? " fifo" : "");
    }
    return log;
  }

  GrantScheduler grants;

 private:
  Peer& PeerNumber(int n) {
    auto& peer = peers_[n];
    if (peer == nullptr) {
      peer = std::make_unique<Peer>();
      peer->id = static_cast<uint64_t>(n);
    }
    return *peer;
  }

  std::map<int, std::unique_ptr<Peer>> peers_;
  std::vector<std::unique_ptr<Rpc>> rpcs_;
};

HomaConfig NoFifo() {
  HomaConfig config;
  config.grant_fifo_permille = 0;
  return config;
}

TEST(GrantScheduler, Reserve__RefusesPastMaxIncomingBufferBytes) {
  HomaConfig config;
  config.max_incoming_buffer_bytes = 100'000;
  GrantScheduler grants(config, 1472);
  EXPECT_TRUE(grants.Reserve(60'000));
  EXPECT_FALSE(grants.Reserve(40'001));
  EXPECT_TRUE(grants.Reserve(40'000));
  EXPECT_EQ(grants.reserved_bytes(), 100'000u);
}

TEST(GrantScheduler, OnData__RanksOnlyIncompleteMessagesThatNeedGrants) {
  Receiver r(NoFifo());
  // All unscheduled: nothing to grant, however much is missing.
  r.Arrive(2, 1, 10'000, kPacket, /*unsched=*/10'000);
  EXPECT_EQ(r.grants.ranking().size(), 0u);
  EXPECT_FALSE(r.grants.pass_due());
  // Granted bytes still missing count as in flight.
  EXPECT_EQ(r.grants.in_flight_bytes(), 10'000u - kPacket);
  Rpc& needs = r.Arrive(4, 2, 10'000, kPacket, /*unsched=*/kPacket);
  EXPECT_EQ(r.grants.ranking().size(), 1u);
  EXPECT_TRUE(r.grants.pass_due());
  EXPECT_TRUE(r.grants.ranking().Contains(needs.handle));
}

TEST(GrantScheduler, Release__ReturnsTheReservationAndTheBytesInFlight) {
  HomaConfig config = NoFifo();
  config.max_incoming_bytes = 30'000;
  Receiver r(config);
  Rpc& rpc = r.Arrive(2, 1, 100'000, kPacket, /*unsched=*/10 * kPacket);
  EXPECT_EQ(r.grants.in_flight_bytes(), 9u * kPacket);
  EXPECT_EQ(r.grants.reserved_bytes(), 100'000u);
  EXPECT_EQ(r.Pass(), "2 GRANT 15664 p3");
  EXPECT_EQ(r.grants.in_flight_bytes(), 10u * kPacket);
  EXPECT_FALSE(r.grants.pass_due());
  r.grants.Release(rpc);
  EXPECT_EQ(r.grants.in_flight_bytes(), 0u);
  EXPECT_EQ(r.grants.reserved_bytes(), 0u);
  EXPECT_EQ(r.grants.ranking().size(), 0u);
  EXPECT_TRUE(r.grants.pass_due()) << "a slot in the active set opened";
  EXPECT_EQ(r.Pass(), "");
}

TEST(GrantScheduler, Pass__GrantsShortestFirstWithFallingPriorities) {
  HomaConfig config = NoFifo();
  config.max_incoming_bytes = 100'000;
  Receiver r(config);
  r.Arrive(2, 1, 200'000, 10 * kPacket, 10 * kPacket);
  r.Arrive(4, 2, 50'000, 10 * kPacket, 10 * kPacket);
  r.Arrive(6, 3, 100'000, 10 * kPacket, 10 * kPacket);
  // Each window is a share of max_incoming_bytes (100 KB / 4), cut to
  // whole packets: 14240 + 25000 -> 38448 (27 packets).
  EXPECT_EQ(r.Pass(), "4 GRANT 38448 p3; 6 GRANT 38448 p2; 2 GRANT 38448 p1");
  EXPECT_EQ(r.grants.in_flight_bytes(), 3u * (38448 - 10 * kPacket));
  EXPECT_FALSE(r.grants.pass_due());
  // Nothing arrived since: nothing more to grant.
  EXPECT_EQ(r.Pass(), "");
}

TEST(GrantScheduler, Pass__OvercommitCapsGrantedMessages) {
  HomaConfig config = NoFifo();
  config.overcommit = 2;
  config.max_incoming_bytes = 90'000;
  Receiver r(config);
  for (int i = 1; i <= 4; ++i) r.Arrive(2 * i, i, 100'000 * i, kPacket, kPacket);
  // 90 KB / 3 per message; the two longest wait.
  EXPECT_EQ(r.Pass(), "2 GRANT 31328 p3; 4 GRANT 31328 p2");
}

TEST(GrantScheduler, Pass__AtMostOneMessagePerPeer) {
  HomaConfig config = NoFifo();
  config.max_incoming_bytes = 90'000;
  Receiver r(config);
  r.Arrive(2, 1, 100'000, kPacket, kPacket);
  r.Arrive(4, 1, 50'000, kPacket, kPacket);  // peer 1's shorter message
  r.Arrive(6, 2, 200'000, kPacket, kPacket);
  EXPECT_EQ(r.Pass(), "4 GRANT 31328 p3; 6 GRANT 31328 p2");
}

TEST(GrantScheduler, Pass__MaxIncomingBytesBoundsWhatIsInFlight) {
  HomaConfig config = NoFifo();
  config.overcommit = 1;
  config.max_incoming_bytes = 25'000;
  Receiver r(config);
  // 20 KB unscheduled of a long message are still on their way: 18576 in
  // flight, and only 6424 of room for the short message's grant, whose
  // window (12500) would otherwise reach 12816.
  r.Arrive(2, 1, 1'000'000, kPacket, /*unsched=*/20'000);
  r.Arrive(4, 2, 100'000, kPacket, kPacket);
  EXPECT_EQ(r.Pass(), "4 GRANT 7120 p3");
  EXPECT_EQ(r.grants.in_flight_bytes(), 18'576u + 7120 - kPacket);
  EXPECT_LE(r.grants.in_flight_bytes(), config.max_incoming_bytes);
}

TEST(GrantScheduler, Pass__GrantsTheTailWholeAndTheMessageLeavesTheRanking) {
  Receiver r(NoFifo());
  r.Arrive(2, 1, 10'000, kPacket, kPacket);
  EXPECT_EQ(r.Pass(), "2 GRANT 10000 p3");
  EXPECT_EQ(r.grants.ranking().size(), 0u);
  EXPECT_TRUE(r.grants.pass_due()) << "its slot opened";
}

TEST(GrantScheduler, Pass__TheGrantUnitIsTheSendersPacket) {
  HomaConfig config = NoFifo();
  config.max_incoming_bytes = 30'000;  // windows of 15000
  {
    // No packet seen and no path known: this socket's DATA payload.
    Receiver r(config);
    r.Arrive(2, 1, 100'000, 0, kPacket);
    EXPECT_EQ(r.Pass(), "2 GRANT 14240 p3");
  }
  {
    // The path to the peer known: its DATA payload.
    Receiver r(config);
    Rpc& rpc = r.Arrive(2, 1, 100'000, 0, 1000);
    rpc.peer->payload_bytes = 1000;
    EXPECT_EQ(r.Pass(), "2 GRANT 15000 p3");
  }
  {
    // Packets seen: the sender's own size wins.
    Receiver r(config);
    Rpc& rpc = r.Arrive(2, 1, 100'000, kPacket, kPacket);
    rpc.peer->payload_bytes = 1000;
    EXPECT_EQ(r.Pass(), "2 GRANT 15664 p3");
  }
}

TEST(GrantScheduler, Pass__FifoShareGoesToTheOldestMessage) {
  HomaConfig config;
  config.overcommit = 1;
  config.max_incoming_bytes = 100'000;
  config.grant_fifo_permille = 500;  // a FIFO grant per 20 KB of SRPT grants
  config.fifo_grant_bytes = 10'000;
  Receiver r(config);
  r.Arrive(2, 1, 1'000'000, kPacket, kPacket, /*birth_ns=*/1);
  r.Arrive(4, 2, 200'000, kPacket, kPacket, /*birth_ns=*/2);
  // SRPT grants the short one; then 10 KB, rounded up to whole packets, go
  // to the old long one, at the highest scheduled priority.
  EXPECT_EQ(r.Pass(), "4 GRANT 51264 p3; 2 GRANT 12816 p3 fifo");
  EXPECT_EQ(r.Pass(), "");
}

}  // namespace
}  // namespace wharf::homa
