// Tests of ServerTable: classification of (re-sent) requests, answers, the
// client's ack floor releasing state, eviction of written responses under
// the byte bound, and dropping a client.
#include "stream/server_table.h"

#include <gtest/gtest.h>

#include <vector>

#include "stream/testing/tcp_harness.h"

namespace wharf::stream {
namespace {

using testing::Loopback4;
using Seen = ServerTable::Seen;

TEST(ServerTableTest, ClassifiesRequestsAgainstWhatItHolds) {
  ServerTable table(1 << 20);
  ClientRecord& c = table.Get(Loopback4(1));
  EXPECT_EQ(ServerTable::Classify(c, 10), Seen::kNew);
  table.Start(c, 10);
  EXPECT_EQ(ServerTable::Classify(c, 10), Seen::kInProgress);
  table.Answer(c, 10, Buffer::Allocate(100));
  EXPECT_EQ(ServerTable::Classify(c, 10), Seen::kAnswered);
  EXPECT_EQ(table.stored_bytes(), 100u);
  EXPECT_EQ(table.num_rpcs(), 1u);
  std::vector<uint64_t> dropped;
  table.AdvanceFloor(c, 11, [&](uint64_t id, ServedRpc&) { dropped.push_back(id); });
  EXPECT_EQ(dropped, std::vector<uint64_t>{10});
  EXPECT_EQ(ServerTable::Classify(c, 10), Seen::kBelowFloor);
  EXPECT_EQ(ServerTable::Classify(c, 11), Seen::kNew);
  EXPECT_EQ(table.stored_bytes(), 0u);
  EXPECT_EQ(table.num_rpcs(), 0u);
  // A floor never goes down.
  table.AdvanceFloor(c, 5, [&](uint64_t, ServedRpc&) { FAIL(); });
  EXPECT_EQ(c.floor, 11u);
}

TEST(ServerTableTest, CountsRequestsInTheApplicationsHands) {
  // What keeps a client's connection from idling out: requests delivered
  // and not yet answered.
  ServerTable table(1 << 20);
  ClientRecord& c = table.Get(Loopback4(1));
  table.Start(c, 10);
  table.Start(c, 11);
  table.Start(c, 11);  // a duplicate start is not a second request
  table.Start(c, 12);
  EXPECT_EQ(c.in_progress, 3u);
  table.Answer(c, 10, Buffer::Allocate(1));
  EXPECT_EQ(c.in_progress, 2u);
  table.AdvanceFloor(c, 12, [](uint64_t, ServedRpc&) {});  // releases 10 (answered), 11 (not)
  EXPECT_EQ(c.in_progress, 1u);
  EXPECT_TRUE(table.Erase(Loopback4(1), [](uint64_t, ServedRpc&) {}));
  EXPECT_FALSE(table.Erase(Loopback4(1), [](uint64_t, ServedRpc&) {}));
  EXPECT_EQ(table.num_clients(), 0u);
}

TEST(ServerTableTest, FloorReleasesOnlyWhatIsBelowIt) {
  ServerTable table(1 << 20);
  ClientRecord& c = table.Get(Loopback4(1));
  for (uint64_t id : {3, 5, 7, 9}) table.Start(c, id);
  table.Answer(c, 5, Buffer::Allocate(10));
  std::vector<uint64_t> dropped;
  table.AdvanceFloor(c, 7, [&](uint64_t id, ServedRpc&) { dropped.push_back(id); });
  EXPECT_EQ(dropped, (std::vector<uint64_t>{3, 5}));
  EXPECT_EQ(table.num_rpcs(), 2u);
  EXPECT_EQ(ServerTable::Classify(c, 7), Seen::kInProgress);
}

TEST(ServerTableTest, EvictsOnlyWrittenResponsesOldestFirst) {
  ServerTable table(250);
  const auto client = Loopback4(1);
  ClientRecord& c = table.Get(client);
  for (uint64_t id = 1; id <= 4; ++id) {
    table.Start(c, id);
    table.Answer(c, id, Buffer::Allocate(100));
  }
  // Nothing written yet: nothing may go, whatever the bound.
  EXPECT_EQ(table.EvictOverLimit([](uint64_t, ServedRpc&) {}), 0u);
  table.MarkWritten(client, 3);
  table.MarkWritten(client, 1);
  table.MarkWritten(client, 2);
  std::vector<uint64_t> evicted;
  EXPECT_EQ(table.EvictOverLimit([&](uint64_t id, ServedRpc&) { evicted.push_back(id); }), 2u);
  EXPECT_EQ(evicted, (std::vector<uint64_t>{3, 1}));
  EXPECT_EQ(table.stored_bytes(), 200u);
  EXPECT_TRUE(c.rpcs.at(3).lost);
  EXPECT_EQ(ServerTable::Classify(c, 3), Seen::kAnswered) << "still answered: never run again";
}

TEST(ServerTableTest, AResponseQueuedAgainIsNotEvictableUntilWrittenAgain) {
  ServerTable table(0);
  const auto client = Loopback4(1);
  ClientRecord& c = table.Get(client);
  table.Start(c, 1);
  table.Answer(c, 1, Buffer::Allocate(100));
  table.MarkWritten(client, 1);
  table.Unmark(c.rpcs.at(1));  // a re-sent request queued it again
  EXPECT_EQ(table.EvictOverLimit([](uint64_t, ServedRpc&) {}), 0u);
  table.MarkWritten(client, 1);
  EXPECT_EQ(table.EvictOverLimit([](uint64_t, ServedRpc&) {}), 1u);
  EXPECT_EQ(table.stored_bytes(), 0u);
}

TEST(ServerTableTest, EraseDropsAClientWhole) {
  ServerTable table(1 << 20);
  const auto a = Loopback4(1);
  const auto b = Loopback4(2);
  table.Start(table.Get(a), 1);
  table.Answer(table.Get(a), 1, Buffer::Allocate(64));
  table.MarkWritten(a, 1);
  table.Start(table.Get(b), 1);
  int dropped = 0;
  table.Erase(a, [&](uint64_t, ServedRpc&) { ++dropped; });
  EXPECT_EQ(dropped, 1);
  EXPECT_EQ(table.Find(a), nullptr);
  EXPECT_NE(table.Find(b), nullptr);
  EXPECT_EQ(table.stored_bytes(), 0u);
  EXPECT_EQ(table.num_rpcs(), 1u);
  EXPECT_EQ(table.num_clients(), 1u);
  // Its written entry left the eviction order with it.
  EXPECT_EQ(table.EvictOverLimit([](uint64_t, ServedRpc&) { FAIL(); }), 0u);
}

}  // namespace
}  // namespace wharf::stream
