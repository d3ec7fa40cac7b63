// engine/connection_table_test.cc: an engine's connections alone: ids,
// lookups by wire id, the cap on connections peers open, and accepting.
#include "engine/connection_table.h"

#include <gtest/gtest.h>

#include <deque>
#include <set>

namespace wharf::engine {
namespace {

PeerRef Peer(uint32_t ip) { return {0, transport::NetAddress::Ipv4(ip, 4000), 0}; }

TEST(ConnectionTable, Open__NewIdsAndWireIdsFindTheConnection) {
  ConnectionTable table(16, /*wire_id_seed=*/1);
  ConnState& a = table.Open(Peer(1), /*ordered=*/true);
  ConnState& b = table.Open(Peer(1), false);
  EXPECT_EQ(a.local_id, 1u);
  EXPECT_EQ(b.local_id, 2u);
  EXPECT_NE(a.wire_id, b.wire_id);
  EXPECT_TRUE(a.ordered);
  EXPECT_FALSE(a.remote);
  EXPECT_EQ(table.Find(2), &b);
  EXPECT_EQ(table.FindByWire(Peer(1), a.wire_id), &a);
  EXPECT_EQ(table.FindByWire(Peer(2), a.wire_id), nullptr);  // another peer's id
  EXPECT_EQ(table.Find(3), nullptr);
  EXPECT_EQ(table.size(), 2u);
  EXPECT_EQ(table.from_peers(), 0u);
}

TEST(ConnectionTable, Open__WireIdsDependOnTheSeed) {
  ConnectionTable one(16, 1), other(16, 2);
  EXPECT_NE(one.Open(Peer(1), false).wire_id, other.Open(Peer(1), false).wire_id);
}

TEST(ConnectionTable, OpenFromPeer__OnlyWhileListening) {
  ConnectionTable table(16, 1);
  Result<uint64_t> refused = table.OpenFromPeer(Peer(1), 99, false);
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(refused.status().message(), "the endpoint is not accepting connections (no Listen)");
  table.Listen();
  Result<uint64_t> local = table.OpenFromPeer(Peer(1), 99, true);
  ASSERT_TRUE(local.ok());
  const ConnState* conn = table.Find(*local);
  ASSERT_NE(conn, nullptr);
  EXPECT_TRUE(conn->remote);
  EXPECT_TRUE(conn->ordered);
  EXPECT_EQ(conn->wire_id, 99u);
  EXPECT_EQ(table.FindByWire(Peer(1), 99), conn);
  // The same connect again: already open.
  EXPECT_EQ(table.OpenFromPeer(Peer(1), 99, true).value(), 0u);
  EXPECT_EQ(table.from_peers(), 1u);
}

TEST(ConnectionTable, OpenFromPeer__PeersHoldAtMostTheCap) {
  ConnectionTable table(2, 1);
  table.Listen();
  ASSERT_TRUE(table.OpenFromPeer(Peer(1), 1, false).ok());
  const uint64_t second = table.OpenFromPeer(Peer(2), 1, false).value();
  (void)table.Open(Peer(3), false);  // ours do not count
  Result<uint64_t> refused = table.OpenFromPeer(Peer(3), 1, false);
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(refused.status().message(),
            "endpoint holds 2 connections from peers (endpoint.max_connections)");
  EXPECT_EQ(table.refused(), 1u);
  // One released makes room.
  (void)table.Erase(second);
  EXPECT_EQ(table.from_peers(), 1u);
  EXPECT_TRUE(table.OpenFromPeer(Peer(3), 1, false).ok());
}

TEST(ConnectionTable, Erase__GivesTheReceiversAndForgetsTheWireId) {
  ConnectionTable table(16, 1);
  ConnState& conn = table.Open(Peer(1), false);
  const uint64_t local = conn.local_id, wire = conn.wire_id;
  conn.receivers = {7, 8};
  EXPECT_EQ(table.Erase(local), (std::deque<uint64_t>{7, 8}));
  EXPECT_EQ(table.Find(local), nullptr);
  EXPECT_EQ(table.FindByWire(Peer(1), wire), nullptr);
  EXPECT_TRUE(table.Erase(local).empty());
}

TEST(ConnectionTable, Accepted__TheOldestWaiterTakesItOrItIsQueued) {
  ConnectionTable table(16, 1);
  table.Listen();
  const uint64_t first = table.OpenFromPeer(Peer(1), 1, false).value();
  EXPECT_EQ(table.Accepted(first), 0u);  // nobody waits: queued
  table.AddAcceptWaiter(40);
  table.AddAcceptWaiter(41);
  table.AddAcceptWaiter(42);
  table.RemoveAcceptWaiter(41);  // cancelled
  const uint64_t second = table.OpenFromPeer(Peer(2), 1, false).value();
  EXPECT_EQ(table.Accepted(second), 40u);
  const uint64_t third = table.OpenFromPeer(Peer(3), 1, false).value();
  EXPECT_EQ(table.Accepted(third), 42u);
  EXPECT_EQ(table.TakeAccepted(), first);
  EXPECT_EQ(table.TakeAccepted(), 0u);
}

TEST(ConnectionTable, Clear__ForgetsConnectionsAndAcceptsButStillListens) {
  ConnectionTable table(1, 1);
  table.Listen();
  const uint64_t local = table.OpenFromPeer(Peer(1), 1, false).value();
  EXPECT_EQ(table.Accepted(local), 0u);
  table.AddAcceptWaiter(40);
  table.Clear();
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(table.TakeAccepted(), 0u);
  EXPECT_TRUE(table.listening());
  EXPECT_TRUE(table.OpenFromPeer(Peer(2), 1, false).ok());  // the count went too
}

TEST(ConnectionTable, ForEach__VisitsEveryConnection) {
  ConnectionTable table(16, 1);
  (void)table.Open(Peer(1), false);
  (void)table.Open(Peer(2), false);
  std::set<uint64_t> seen;
  table.ForEach([&](uint64_t local, ConnState& conn) {
    EXPECT_EQ(local, conn.local_id);
    seen.insert(local);
  });
  EXPECT_EQ(seen, (std::set<uint64_t>{1, 2}));
}

}  // namespace
}  // namespace wharf::engine
