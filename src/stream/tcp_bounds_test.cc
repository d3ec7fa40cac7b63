// Tests of the bounds on what remote hosts can make a TcpMessageTransport
// hold: the inbound connection cap, the peer cap, idle connections, and the
// expiry of a gone client's at-most-once records. Each is capped, expires
// and is counted. Virtual time over loopback sockets.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "stream/tcp_transport.h"
#include "stream/testing/raw_sockets.h"
#include "stream/testing/tcp_harness.h"

namespace wharf::stream {
namespace {

using testing::Harness;
using testing::Node;
using testing::Pattern;
using testing::RawClient;
using transport::MessageEvent;

uint64_t Call(Node& client, const Node& server, Buffer request) {
  auto id = client.t->SendRequest(server.address(), std::move(request), 0);
  EXPECT_TRUE(id.ok()) << id.status();
  return id.ok() ? *id : 0;
}

TEST(TcpBoundsTest, InboundConnectionsPastTheCapAreClosedAndCounted) {
  SimClock clock;
  Harness h(&clock);
  TcpConfig config;
  config.max_inbound_connections = 2;
  Node& server = h.AddNode(config);
  std::vector<std::unique_ptr<RawClient>> raw;
  for (int i = 0; i < 5; ++i) {
    raw.push_back(std::make_unique<RawClient>(server.address()));
    raw.back()->Hello(static_cast<uint16_t>(100 + i));
  }
  ASSERT_TRUE(h.RunUntil([&] { return server.t->stats().connections_refused == 3; }));
  h.RunFor(kNsPerMs);
  EXPECT_EQ(server.t->num_connections(), 2u);
  EXPECT_EQ(server.t->stats().connections_refused, 3u);
  EXPECT_EQ(server.t->stats().protocol_errors, 0u);
  EXPECT_TRUE(raw[4]->WaitClosedByServer(2000));
  // A slot freed is a slot usable again.
  raw[0]->Close();
  ASSERT_TRUE(h.RunUntil([&] { return server.t->num_connections() == 1; }));
  RawClient again(server.address());
  again.Hello(200);
  ASSERT_TRUE(h.RunUntil([&] { return server.t->num_peers() == 2 && server.t->num_connections() == 2; }));
  EXPECT_EQ(server.t->stats().connections_refused, 3u);
}

TEST(TcpBoundsTest, NewPeersPastTheCapAreRefusedAndCounted) {
  SimClock clock;
  Harness h(&clock);
  TcpConfig config;
  config.max_peers = 2;
  Node& server = h.AddNode(config);
  RawClient a(server.address());
  a.Hello(100);
  RawClient b(server.address());
  b.Hello(101);
  ASSERT_TRUE(h.RunUntil([&] { return server.t->num_peers() == 2; }));
  // One source declaring ever new listen ports is a flood of identities.
  RawClient c(server.address());
  c.Hello(102);
  ASSERT_TRUE(h.RunUntil([&] { return server.t->stats().peers_refused == 1; }));
  EXPECT_TRUE(c.WaitClosedByServer(2000));
  EXPECT_EQ(server.t->num_peers(), 2u);
  EXPECT_EQ(server.t->stats().protocol_errors, 0u);
  // A known peer's second connection is no new peer.
  RawClient a2(server.address());
  a2.Hello(100);
  h.RunFor(kNsPerMs);
  EXPECT_EQ(server.t->stats().peers_refused, 1u);
  EXPECT_EQ(server.t->num_connections(), 3u);
}

TEST(TcpBoundsTest, ConnectionsCloseWhenIdleButNotWhileAnRpcIsPending) {
  SimClock clock;
  Harness h(&clock);
  Node& client = h.AddNode();
  Node& server = h.AddNode();
  server.auto_respond = false;
  const uint64_t id = Call(client, server, Pattern(10, 0));
  ASSERT_TRUE(h.RunUntil([&] { return server.held.size() == 1; }));
  // Far past tcp.idle_timeout with the RPC in the server's hands.
  h.RunFor(2 * TcpConfig{}.idle_timeout_ns);
  EXPECT_FALSE(client.Completed(id));
  EXPECT_EQ(client.t->num_connections(), 1u);
  EXPECT_EQ(server.t->num_connections(), 1u);
  ASSERT_TRUE(server.t->SendResponse(server.held[0].server_key, Pattern(10, 1)).ok());
  ASSERT_TRUE(h.RunUntil([&] { return client.Completed(id); }));
  EXPECT_EQ(client.done.at(id).kind, MessageEvent::Kind::kResponse) << client.done.at(id).status;
  // Now nothing is pending either way: the connection goes after the idle
  // timeout, counted, and not before.
  const TimeNs quiet = clock.NowNs();
  ASSERT_TRUE(h.RunUntil([&] {
    return client.t->num_connections() == 0 && server.t->num_connections() == 0;
  }));
  EXPECT_GE(clock.NowNs() - quiet, TcpConfig{}.idle_timeout_ns - TcpConfig{}.ack_delay_ns);
  EXPECT_LE(clock.NowNs() - quiet, TcpConfig{}.idle_timeout_ns + kNsPerMs);
  EXPECT_GE(client.t->stats().connections_idle_closed + server.t->stats().connections_idle_closed, 1u);
  EXPECT_EQ(client.t->stats().client_timeouts, 0u);
  // The next RPC simply connects again.
  server.auto_respond = true;
  const uint64_t next = Call(client, server, Pattern(10, 2));
  ASSERT_TRUE(h.RunUntil([&] { return client.Completed(next); }));
  EXPECT_EQ(client.done.at(next).kind, MessageEvent::Kind::kResponse) << client.done.at(next).status;
}

TEST(TcpBoundsTest, AGoneClientsServerRecordsExpireAndAreCounted) {
  SimClock clock;
  Harness h(&clock);
  Node* client = &h.AddNode();
  Node& server = h.AddNode();
  server.auto_respond = false;
  Call(*client, server, Pattern(10, 0));
  Call(*client, server, Pattern(10, 1));
  ASSERT_TRUE(h.RunUntil([&] { return server.held.size() == 2; }));
  h.RemoveNode(*client);  // gone without acknowledging anything
  ASSERT_TRUE(server.t->SendResponse(server.held[0].server_key, Pattern(10, 2)).ok());
  ASSERT_TRUE(h.RunUntil([&] { return server.t->num_connections() == 0; }));
  const TimeNs gone = clock.NowNs();
  EXPECT_EQ(server.t->num_server_rpcs(), 2u);
  // Kept through a pause of seconds (the client may come back and re-send:
  // those must not run twice), dropped after 2 x tcp.peer_timeout.
  h.RunFor(3 * kNsPerSec);
  EXPECT_EQ(server.t->num_server_clients(), 1u);
  ASSERT_TRUE(h.RunUntil([&] { return server.t->num_server_clients() == 0; }));
  EXPECT_GE(clock.NowNs() - gone, 2 * TcpConfig{}.peer_timeout_ns);
  EXPECT_LE(clock.NowNs() - gone, 2 * TcpConfig{}.peer_timeout_ns + kNsPerMs);
  EXPECT_EQ(server.t->num_server_rpcs(), 0u);
  EXPECT_EQ(server.t->stored_response_bytes(), 0u);
  EXPECT_EQ(server.t->num_peers(), 0u);
  EXPECT_EQ(server.t->stats().clients_expired, 1u);
  EXPECT_EQ(server.t->stats().peers_expired, 1u);
  // The application's late answer finds the RPC gone.
  EXPECT_EQ(server.t->SendResponse(server.held[1].server_key, Pattern(10, 3)).code(),
            StatusCode::kNotFound);
}

}  // namespace
}  // namespace wharf::stream
