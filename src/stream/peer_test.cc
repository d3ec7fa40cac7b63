// Tests of Peer (connection counts, pool choice, reconnect backoff) and
// PeerTable.
#include "stream/peer.h"

#include <gtest/gtest.h>

#include <memory>

#include "stream/connection.h"
#include "stream/testing/tcp_harness.h"
#include "transport/tcp/tcp_syscalls.h"

namespace wharf::stream {
namespace {

using testing::Loopback4;

// A Connection without a socket: enough for bookkeeping tests.
std::unique_ptr<Connection> FakeConnection(uint64_t id, bool outbound, Connection::State state,
                                           IncomingBudget* budget) {
  return std::make_unique<Connection>(id, -1, outbound, Loopback4(1000), state, 1000,
                                      FrameParser::Limits{}, budget, nullptr, nullptr,
                                      &transport::tcp::TcpSyscalls::Kernel());
}

TEST(PeerTest, BackoffDoublesToTheMaximumAndResetsOnHandshake) {
  TcpConfig config;
  config.reconnect_min_ns = 1 * kNsPerMs;
  config.reconnect_max_ns = 5 * kNsPerMs;
  Peer peer;
  std::vector<DurationNs> waits;
  for (int i = 0; i < 5; ++i) {
    peer.OnConnectionLost(100, config);
    waits.push_back(peer.next_dial_ns - 100);
  }
  EXPECT_EQ(waits, (std::vector<DurationNs>{1 * kNsPerMs, 2 * kNsPerMs, 4 * kNsPerMs,
                                            5 * kNsPerMs, 5 * kNsPerMs}));
  EXPECT_TRUE(peer.lost_connection);
  peer.OnHandshake();
  EXPECT_EQ(peer.next_dial_ns, 0);
  peer.OnConnectionLost(100, config);
  EXPECT_EQ(peer.next_dial_ns - 100, 1 * kNsPerMs);
}

TEST(PeerTest, CountsAndLeastLoadedLookOnlyAtOpenConnections) {
  IncomingBudget budget{.limit = 1 << 20};
  auto out_open = FakeConnection(1, true, Connection::State::kOpen, &budget);
  auto out_connecting = FakeConnection(2, true, Connection::State::kConnecting, &budget);
  auto in_open = FakeConnection(3, false, Connection::State::kOpen, &budget);
  auto in_handshake = FakeConnection(4, false, Connection::State::kHandshake, &budget);
  Peer peer;
  peer.connections = {out_open.get(), out_connecting.get(), in_open.get(), in_handshake.get()};
  EXPECT_EQ(peer.CountOpen(), 2u);
  EXPECT_EQ(peer.CountInboundOpen(), 1u);
  EXPECT_EQ(peer.CountOutboundLive(), 2u);
  Buffer big = Buffer::Allocate(5000);
  Buffer small = Buffer::Allocate(10);
  out_open->queue().Add(wire::StreamFrameType::kRequest, 1, big);
  in_open->queue().Add(wire::StreamFrameType::kRequest, 2, small);
  EXPECT_EQ(peer.LeastLoaded(), in_open.get());
  in_open->queue().Add(wire::StreamFrameType::kRequest, 3, big);
  EXPECT_EQ(peer.LeastLoaded(), out_open.get());
  peer.RemoveConnection(out_open.get());
  EXPECT_EQ(peer.LeastLoaded(), in_open.get());
  peer.RemoveConnection(in_open.get());
  EXPECT_EQ(peer.LeastLoaded(), nullptr);
  EXPECT_EQ(peer.connections.size(), 2u);
}

TEST(PeerTableTest, GetCreatesOnceFindDoesNot) {
  PeerTable table;
  EXPECT_EQ(table.Find(Loopback4(1)), nullptr);
  Peer& a = table.Get(Loopback4(1));
  EXPECT_EQ(a.identity, Loopback4(1));
  EXPECT_EQ(&table.Get(Loopback4(1)), &a);
  table.Get(Loopback4(2));
  EXPECT_EQ(table.size(), 2u);
  EXPECT_EQ(table.Identities().size(), 2u);
  table.Erase(Loopback4(1));
  EXPECT_EQ(table.Find(Loopback4(1)), nullptr);
  EXPECT_EQ(table.size(), 1u);
}

}  // namespace
}  // namespace wharf::stream
