// Unit tests of ReleaseQueue: acks and floors recorded, their server RPCs
// destroyed only on Release, with the arguments the host's
// DestroyServerRpc needs. Real Peer and ClientRecord objects; the destroy
// callback does what the host's does to the record and logs the call.
#include "homa/release_queue.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "homa/peer_table.h"
#include "homa/rpc.h"

namespace wharf::homa {
namespace {

constexpr uint32_t kPair = EndpointPair(1, 50);       // our endpoint 1, client port 50
constexpr uint32_t kOtherPair = EndpointPair(2, 50);  // our endpoint 2, same client port

class ReleaseQueueTest : public ::testing::Test {
 protected:
  ReleaseQueueTest() {
    peer_.id = 1;
    other_peer_.id = 2;
  }

  // The record of (peer, pair) holding live server RPCs `live` and
  // tombstones `tombstones`.
  static ClientRecord& Record(Peer& peer, uint32_t pair, std::initializer_list<uint64_t> live,
                              std::initializer_list<uint64_t> tombstones = {}) {
    ClientRecord& record = peer.clients[pair];
    for (uint64_t id : live) {
      auto rpc = std::make_unique<Rpc>();
      rpc->id = id ^ 1;
      record.live.emplace(id, std::move(rpc));
    }
    record.tombstones.insert(tombstones.begin(), tombstones.end());
    return record;
  }

  static std::vector<uint64_t> LiveIds(const ClientRecord& record) {
    std::vector<uint64_t> ids;
    for (const auto& [id, rpc] : record.live) ids.push_back(id);
    return ids;
  }

  // Like HomaHost::DestroyServerRpc on the record: a tombstone if asked,
  // then the live RPC erased. Each call is logged as
  // "peer P pair OURS:THEIRS id N tombstone|no-tombstone".
  void Destroy(Peer& peer, uint32_t pair, uint64_t client_id, bool tombstone) {
    if (!log_.empty()) log_ += "; ";
    log_ += "peer " + std::to_string(peer.id) + " pair " + std::to_string(pair >> 16) + ":" +
            std::to_string(pair & 0xffff) + " id " + std::to_string(client_id) +
            (tombstone ? " tombstone" : " no-tombstone");
    auto found = peer.clients.find(pair);
    if (found == peer.clients.end()) return;
    ClientRecord& record = found->second;
    if (tombstone) record.AddTombstone(client_id, /*max_tombstones=*/100);
    record.live.erase(client_id);
  }

  Peer peer_;
  Peer other_peer_;
  std::string log_;
  ReleaseQueue queue_{[this](Peer& peer, uint32_t pair, uint64_t client_id, bool tombstone) {
    Destroy(peer, pair, client_id, tombstone);
  }};
};

TEST_F(ReleaseQueueTest, AnAckDefersDestructionUntilRelease) {
  ClientRecord& record = Record(peer_, kPair, {4, 6});
  queue_.Ack(peer_, kPair, 4);
  EXPECT_EQ(queue_.size(), 1u);
  EXPECT_EQ(log_, "");
  EXPECT_EQ(LiveIds(record), (std::vector<uint64_t>{4, 6})) << "acked RPC freed before Release";

  queue_.Release();
  EXPECT_EQ(log_, "peer 1 pair 1:50 id 4 tombstone");
  EXPECT_EQ(LiveIds(record), (std::vector<uint64_t>{6}));
  EXPECT_EQ(record.tombstones, (std::set<uint64_t>{4}));
}

TEST_F(ReleaseQueueTest, AFloorRisesAtOnceAndOnlyUpward) {
  ClientRecord& record = Record(peer_, kPair, {4});
  queue_.RaiseFloor(peer_, kPair, 10);
  EXPECT_EQ(record.floor, 10u) << "the floor rises before Release";
  EXPECT_EQ(queue_.size(), 1u);

  queue_.RaiseFloor(peer_, kPair, 8);  // an older packet's floor
  queue_.RaiseFloor(peer_, kPair, 10);
  EXPECT_EQ(record.floor, 10u);
  EXPECT_EQ(queue_.size(), 1u) << "a lower or equal floor queued a release";

  queue_.RaiseFloor(peer_, kPair, 12);
  EXPECT_EQ(record.floor, 12u);
  EXPECT_EQ(queue_.size(), 2u);
  EXPECT_EQ(log_, "");
  EXPECT_EQ(LiveIds(record), (std::vector<uint64_t>{4}));
}

TEST_F(ReleaseQueueTest, AFloorForAClientWithoutARecordIsIgnored) {
  Record(peer_, kPair, {4});
  queue_.RaiseFloor(peer_, kOtherPair, 10);
  EXPECT_TRUE(queue_.empty());
  EXPECT_EQ(peer_.clients.count(kOtherPair), 0u) << "a floor created a client record";
  EXPECT_EQ(peer_.clients.at(kPair).floor, 0u) << "another endpoint's record moved";
  queue_.Release();
  EXPECT_EQ(log_, "");
}

TEST_F(ReleaseQueueTest, AFloorErasesTombstonesAndDestroysLiveRpcsBelowIt) {
  ClientRecord& record = Record(peer_, kPair, {4, 6, 10, 14}, {2, 8, 12});
  queue_.RaiseFloor(peer_, kPair, 10);
  EXPECT_EQ(LiveIds(record), (std::vector<uint64_t>{4, 6, 10, 14}));
  EXPECT_EQ(record.tombstones, (std::set<uint64_t>{2, 8, 12}));

  queue_.Release();
  // Below the floor no tombstone is needed: the floor covers them.
  EXPECT_EQ(log_, "peer 1 pair 1:50 id 4 no-tombstone; peer 1 pair 1:50 id 6 no-tombstone");
  EXPECT_EQ(LiveIds(record), (std::vector<uint64_t>{10, 14})) << "at or above the floor: kept";
  EXPECT_EQ(record.tombstones, (std::set<uint64_t>{12}));
}

TEST_F(ReleaseQueueTest, AReleaseFreesUpToTheRecordsLatestFloor) {
  ClientRecord& record = Record(peer_, kPair, {4, 10, 14});
  queue_.RaiseFloor(peer_, kPair, 6);
  queue_.RaiseFloor(peer_, kPair, 12);
  queue_.Release();
  // The first entry already frees below 12; the second finds nothing left.
  EXPECT_EQ(log_, "peer 1 pair 1:50 id 4 no-tombstone; peer 1 pair 1:50 id 10 no-tombstone");
  EXPECT_EQ(LiveIds(record), (std::vector<uint64_t>{14}));
}

TEST_F(ReleaseQueueTest, AReleasePassesEachEntrysPeerPairAndIdInOrder) {
  Record(peer_, kPair, {4, 20});
  Record(peer_, kOtherPair, {8});
  Record(other_peer_, kPair, {6});
  queue_.Ack(peer_, kPair, 20);
  queue_.Ack(other_peer_, kPair, 6);
  queue_.RaiseFloor(peer_, kOtherPair, 10);
  // The queue does not look for the acked RPC: the callback decides.
  queue_.Ack(other_peer_, kOtherPair, 30);
  queue_.Release();
  EXPECT_EQ(log_,
            "peer 1 pair 1:50 id 20 tombstone; "
            "peer 2 pair 1:50 id 6 tombstone; "
            "peer 1 pair 2:50 id 8 no-tombstone; "
            "peer 2 pair 2:50 id 30 tombstone");
  EXPECT_EQ(LiveIds(peer_.clients.at(kPair)), (std::vector<uint64_t>{4}));
}

TEST_F(ReleaseQueueTest, AReleaseEmptiesTheQueue) {
  Record(peer_, kPair, {4, 6});
  queue_.Ack(peer_, kPair, 4);
  queue_.RaiseFloor(peer_, kPair, 8);
  EXPECT_EQ(queue_.size(), 2u);
  queue_.Release();
  EXPECT_TRUE(queue_.empty());
  EXPECT_EQ(queue_.size(), 0u);
  const std::string first = log_;
  queue_.Release();
  EXPECT_EQ(log_, first) << "a second Release destroyed again";
}

}  // namespace
}  // namespace wharf::homa
