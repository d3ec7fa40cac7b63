// Tests of TcpMessageTransport's normal operation over loopback: opening,
// sizes around the chunk boundary up to 64 MiB, 10,000 concurrent RPCs, SRPT
// against head-of-line blocking, requests in both directions on one
// connection, connection pools, acks, refusals and cancellation. Failures
// (killed connections, dead and silent peers, hostile input) are in
// tcp_transport_fault_test.cc.
#include "stream/tcp_transport.h"

#include <gtest/gtest.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <set>

#include "stream/testing/tcp_harness.h"

namespace wharf::stream {
namespace {

using testing::Harness;
using testing::Loopback4;
using testing::Loopback6;
using testing::MatchesPattern;
using testing::Node;
using testing::Pattern;
using transport::MessageEvent;

constexpr uint32_t kChunk = 64 << 10;

uint64_t Call(Node& client, const Node& server, Buffer request, uint64_t cookie = 0) {
  auto id = client.t->SendRequest(server.address(), std::move(request), cookie);
  EXPECT_TRUE(id.ok()) << id.status();
  return id.ok() ? *id : 0;
}

TEST(TcpTransportTest, OpenListensOnAnEphemeralPort) {
  Harness h;
  Node& a = h.AddNode();
  ASSERT_TRUE(a.t);
  EXPECT_EQ(a.t->scheme(), "tcp");
  EXPECT_NE(a.address().port(), 0);
  EXPECT_EQ(a.address().ToString().rfind("127.0.0.1:", 0), 0u);
  EXPECT_GE(a.t->ReadableFd(), 0);
  EXPECT_EQ(a.t->NextDeadline(), kNever);  // idle: nothing to wake up for
}

// The rules themselves are ResolveTcpConfig's (config_test.cc).
TEST(TcpTransportTest, OpenRefusesAnInvalidConfigNamingTheKey) {
  TcpConfig config;
  config.bind = Loopback4();
  config.chunk_bytes = 10;
  auto t = TcpMessageTransport::Open(config, SystemClock::Get());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("tcp.chunk_bytes"), std::string::npos) << t.status();
}

TEST(TcpTransportTest, OpenUsesTheResolvedConfig) {
  TcpConfig config;
  config.bind = Loopback4();
  config.peer_timeout_ns = 50 * kNsPerMs;
  auto t = TcpMessageTransport::Open(config, SystemClock::Get());
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->config().ping_interval_ns, 5 * kNsPerMs);
}

TEST(TcpTransportTest, BindConflictNamesTheAddress) {
  Harness h;
  Node& a = h.AddNode();
  TcpConfig config;
  config.bind = a.address();
  auto t = TcpMessageTransport::Open(config, SystemClock::Get());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("bind " + a.address().ToString()), std::string::npos)
      << t.status();
}

TEST(TcpTransportTest, InstanceIdsDiffer) {
  Harness h;
  Node& a = h.AddNode();
  Node& b = h.AddNode();
  EXPECT_NE(a.t->instance_id(), b.t->instance_id());
  EXPECT_NE(a.t->instance_id(), 0u);
}

class TcpEchoTest : public ::testing::TestWithParam<bool> {};

TEST_P(TcpEchoTest, EverySizeAroundTheChunkBoundaryIsByteExact) {
  const bool v6 = GetParam();
  if (v6 && !testing::Ipv6LoopbackUsable()) GTEST_SKIP() << "no IPv6 loopback";
  Harness h;
  TcpConfig config;
  config.bind = v6 ? Loopback6() : Loopback4();
  Node& client = h.AddNode(config);
  Node& server = h.AddNode(config);
  const std::vector<size_t> sizes = {0, 1, kChunk - 1, kChunk, kChunk + 1, 1'000'000};
  std::vector<uint64_t> ids;
  for (size_t i = 0; i < sizes.size(); ++i) {
    ids.push_back(Call(client, server, Pattern(sizes[i], static_cast<uint8_t>(i)), 100 + i));
  }
  ASSERT_TRUE(h.RunUntil([&] { return client.done.size() == sizes.size(); }));
  for (size_t i = 0; i < sizes.size(); ++i) {
    const MessageEvent& e = client.done.at(ids[i]);
    ASSERT_EQ(e.kind, MessageEvent::Kind::kResponse) << sizes[i] << ": " << e.status;
    EXPECT_EQ(e.cookie, 100 + i);
    EXPECT_TRUE(MatchesPattern(e.message, sizes[i], static_cast<uint8_t>(i))) << sizes[i];
  }
  EXPECT_EQ(server.MaxHandled(), 1);
  // The server knows the client by its listening address.
  EXPECT_EQ(server.handled.begin()->first.first, client.address().ToString());
  EXPECT_EQ(client.t->stats().connections_opened, 1u);
  EXPECT_EQ(server.t->stats().connections_accepted, 1u);
  EXPECT_EQ(client.t->num_client_rpcs(), 0u);
  EXPECT_EQ(client.t->incoming_buffer_bytes(), 0u);
  EXPECT_EQ(server.t->incoming_buffer_bytes(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Families, TcpEchoTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Ipv6" : "Ipv4"; });

TEST(TcpTransportTest, SixtyFourMiBRequestAndResponseAreByteExact) {
  Harness h;
  Node& client = h.AddNode();
  Node& server = h.AddNode();
  const size_t size = size_t{64} << 20;
  uint64_t id = Call(client, server, Pattern(size, 9));
  ASSERT_TRUE(h.RunUntil([&] { return client.Completed(id); }));
  const MessageEvent& e = client.done.at(id);
  ASSERT_EQ(e.kind, MessageEvent::Kind::kResponse) << e.status;
  EXPECT_TRUE(MatchesPattern(e.message, size, 9));
  // Memory grew with the bytes, never past message + one chunk per side.
  EXPECT_LE(server.t->stats().peak_incoming_buffer_bytes, size + kChunk);
  EXPECT_EQ(server.t->incoming_buffer_bytes(), 0u);
  EXPECT_EQ(client.t->incoming_buffer_bytes(), 0u);
}

TEST(TcpTransportTest, TenThousandConcurrentRpcsAreEachDeliveredOnce) {
  Harness h;
  Node& client = h.AddNode();
  Node& server = h.AddNode();
  constexpr int kRpcs = 10'000;
  std::set<uint64_t> ids;
  for (int i = 0; i < kRpcs; ++i) {
    ids.insert(Call(client, server, Pattern(100 + i % 1000, static_cast<uint8_t>(i)), i));
  }
  ASSERT_EQ(ids.size(), static_cast<size_t>(kRpcs));
  ASSERT_TRUE(h.RunUntil([&] { return client.done.size() == kRpcs; }))
      << client.done.size() << " done";
  EXPECT_EQ(client.duplicate_completions, 0);
  EXPECT_EQ(server.handled.size(), static_cast<size_t>(kRpcs));
  EXPECT_EQ(server.MaxHandled(), 1);
  for (uint64_t id : ids) {
    const MessageEvent& e = client.done.at(id);
    ASSERT_EQ(e.kind, MessageEvent::Kind::kResponse);
    const int i = static_cast<int>(e.cookie);
    EXPECT_TRUE(MatchesPattern(e.message, 100 + i % 1000, static_cast<uint8_t>(i)));
  }
  EXPECT_EQ(server.t->stats().requests_delivered, static_cast<uint64_t>(kRpcs));
  EXPECT_EQ(client.t->stats().responses_delivered, static_cast<uint64_t>(kRpcs));
}

TEST(TcpTransportTest, OnePollHandsTheHostABoundedBatchOfEvents) {
  Harness h;
  Node& client = h.AddNode();
  Node& server = h.AddNode();
  uint64_t first = Call(client, server, Pattern(10, 0));
  ASSERT_TRUE(h.RunUntil([&] { return client.Completed(first); }));
  // 5,000 small requests land in the server's socket at once...
  for (int i = 0; i < 5000; ++i) Call(client, server, Pattern(100, static_cast<uint8_t>(i)));
  ASSERT_EQ(client.t->num_client_rpcs(), 5000u);
  // ...but one Poll delivers only about 512 of them (plus one read's worth),
  // so the host gets back to polling (and to its blocked writes) soon.
  server.t->Poll();
  EXPECT_GT(server.t->pending_events(), 0u);
  EXPECT_LT(server.t->pending_events(), 1100u);
  ASSERT_TRUE(h.RunUntil([&] { return client.done.size() == 5001; }));
  EXPECT_EQ(server.MaxHandled(), 1);
}

TEST(TcpTransportTest, ShortRpcOvertakesA64MiBRequestOnTheSameConnection) {
  Harness h;
  Node& client = h.AddNode();
  Node& server = h.AddNode();
  // The big request gets a short answer: what matters is its request.
  server.respond = [](MessageEvent& e) {
    if (e.message.size() < 1000) return std::move(e.message);
    return Buffer::Copy(std::to_string(e.message.size()));
  };
  uint64_t big = Call(client, server, Pattern(size_t{64} << 20, 1));
  // Let the big one get going (some of it in the kernel, most still queued).
  ASSERT_TRUE(h.RunUntil([&] { return server.t->stats().bytes_received > (1u << 20); }));
  uint64_t small = Call(client, server, Pattern(1, 2));
  ASSERT_TRUE(h.RunUntil([&] { return client.Completed(big); }));
  ASSERT_TRUE(client.Completed(small));
  EXPECT_EQ(client.done_order.front(), small);
  EXPECT_EQ(server.request_order.front(), small);
  EXPECT_EQ(client.t->stats().connections_opened, 1u) << "both went over one connection";
  EXPECT_EQ(client.done.at(big).message.AsStringView(), std::to_string(size_t{64} << 20));
  EXPECT_TRUE(MatchesPattern(client.done.at(small).message, 1, 2));
}

TEST(TcpTransportTest, ServerSendsRequestsBackOverTheClientsConnection) {
  Harness h;
  Node& a = h.AddNode();
  Node& b = h.AddNode();
  b.auto_respond = false;
  uint64_t id = Call(a, b, Buffer::Copy("hello"));
  ASSERT_TRUE(h.RunUntil([&] { return b.held.size() == 1; }));
  MessageEvent request = std::move(b.held[0]);
  b.held.clear();
  EXPECT_EQ(request.server_key.client, a.address());
  EXPECT_EQ(request.server_key.client_port, 0);
  EXPECT_EQ(request.server_key.client_id, id);
  // B calls A back at the identity it saw; A echoes.
  auto back = b.t->SendRequest(request.server_key.client, Buffer::Copy("and you?"), 7);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_TRUE(h.RunUntil([&] { return b.Completed(*back); }));
  EXPECT_EQ(b.done.at(*back).message.AsStringView(), "and you?");
  ASSERT_TRUE(b.t->SendResponse(request.server_key, Buffer::Copy("fine")).ok());
  ASSERT_TRUE(h.RunUntil([&] { return a.Completed(id); }));
  EXPECT_EQ(a.done.at(id).message.AsStringView(), "fine");
  // One connection carried everything.
  EXPECT_EQ(a.t->stats().connections_opened, 1u);
  EXPECT_EQ(b.t->stats().connections_opened, 1u);
  EXPECT_EQ(b.t->stats().connections_accepted, 1u);
  EXPECT_EQ(a.t->num_connections(), 1u);
}

TEST(TcpTransportTest, AChosenPriorityMarksThePeersConnectionsWithItsClassSelector) {
  Harness h;
  Node& a = h.AddNode();
  Node& b = h.AddNode();
  b.auto_respond = false;
  // Unmarked until a message asks.
  uint64_t plain = Call(a, b, Buffer::Copy("plain"));
  ASSERT_TRUE(h.RunUntil([&] { return b.held.size() == 1; }));
  EXPECT_EQ(a.t->ConnectionTrafficClassesForTest(b.address()), std::vector<int>{0});
  // A request at priority 5: CS5 (DSCP 40, TOS 0xa0) from it on.
  auto marked = a.t->SendRequestTo(b.address(), 0, Buffer::Copy("cs5"), 0, {.priority = 5});
  ASSERT_TRUE(marked.ok()) << marked.status();
  ASSERT_TRUE(h.RunUntil([&] { return b.held.size() == 2; }));
  EXPECT_EQ(a.t->ConnectionTrafficClassesForTest(b.address()), std::vector<int>{0xa0});
  EXPECT_EQ(a.t->stats().traffic_class_marks, 1u);
  // The same priority again: nothing to change.
  ASSERT_TRUE(a.t->SendRequestTo(b.address(), 0, Buffer::Copy("again"), 0, {.priority = 5}).ok());
  EXPECT_EQ(a.t->stats().traffic_class_marks, 1u);
  // The answer's priority marks the server's side: CS2 (TOS 0x40).
  ASSERT_TRUE(b.t->SendResponse(b.held[1].server_key, Buffer::Copy("re"), 2).ok());
  EXPECT_EQ(b.t->ConnectionTrafficClassesForTest(a.address()), std::vector<int>{0x40});
  ASSERT_TRUE(h.RunUntil([&] { return a.Completed(*marked); }));
  ASSERT_TRUE(b.t->SendResponse(b.held[0].server_key, Buffer::Copy("re")).ok());
  ASSERT_TRUE(h.RunUntil([&] { return a.Completed(plain); }));
  // Out of range: refused, nothing marked.
  auto bad = a.t->SendRequestTo(b.address(), 0, Buffer::Copy("x"), 0, {.priority = 8});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(a.t->ConnectionTrafficClassesForTest(b.address()), std::vector<int>{0xa0});
}

TEST(TcpTransportTest, ANewConnectionToAMarkedPeerIsMarkedToo) {
  Harness h;
  TcpConfig config;
  config.connections_per_peer = 2;
  Node& a = h.AddNode(config);
  Node& b = h.AddNode(config);
  std::vector<uint64_t> ids;
  for (int i = 0; i < 8; ++i) {
    auto id = a.t->SendRequestTo(b.address(), 0, Buffer::Copy("x"), 0, {.priority = 7});
    ASSERT_TRUE(id.ok()) << id.status();
    ids.push_back(*id);
  }
  ASSERT_TRUE(h.RunUntil([&] { return a.done.size() == ids.size(); }));
  const std::vector<int> classes = a.t->ConnectionTrafficClassesForTest(b.address());
  ASSERT_FALSE(classes.empty());
  for (int tos : classes) EXPECT_EQ(tos, 0xe0);  // CS7 on every one
}

TEST(TcpTransportTest, ConnectionPoolSpreadsMessages) {
  Harness h;
  TcpConfig config;
  config.connections_per_peer = 3;
  Node& client = h.AddNode(config);
  Node& server = h.AddNode();
  // Open the pool first (the first RPC dials all three).
  uint64_t first = Call(client, server, Pattern(10, 0));
  ASSERT_TRUE(h.RunUntil([&] { return client.Completed(first) && client.t->num_connections() == 3; }));
  std::vector<uint64_t> ids;
  for (int i = 0; i < 30; ++i) ids.push_back(Call(client, server, Pattern(300'000, static_cast<uint8_t>(i))));
  ASSERT_TRUE(h.RunUntil([&] { return client.done.size() == 31; }));
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_TRUE(MatchesPattern(client.done.at(ids[i]).message, 300'000, static_cast<uint8_t>(i)));
  }
  EXPECT_EQ(client.t->stats().connections_opened, 3u);
  EXPECT_EQ(server.t->stats().connections_accepted, 3u);
  EXPECT_EQ(server.MaxHandled(), 1);
}

TEST(TcpTransportTest, PingPongCarriesAcksOnRequestsAndFreesStoredResponses) {
  // Virtual time: the ack delay runs out only when the test lets it.
  SimClock clock;
  Harness h(&clock);
  Node& client = h.AddNode();
  Node& server = h.AddNode();
  for (int i = 0; i < 50; ++i) {
    uint64_t id = Call(client, server, Pattern(1000, static_cast<uint8_t>(i)));
    ASSERT_TRUE(h.RunUntil([&] { return client.Completed(id); }));
    // Each request's floor released the previous response.
    EXPECT_LE(server.t->num_server_rpcs(), 1u);
  }
  // Only the last RPC's floor needs an ACK frame, after tcp.ack_delay.
  ASSERT_TRUE(h.RunUntil([&] { return server.t->num_server_rpcs() == 0; }));
  EXPECT_EQ(server.t->stored_response_bytes(), 0u);
  EXPECT_LE(client.t->stats().acks_sent, 1u);
  EXPECT_EQ(client.t->stats().acks_sent, 1u);
}

TEST(TcpTransportTest, OversizeRequestFailsLocallyWithInvalidArgument) {
  Harness h;
  TcpConfig config;
  config.max_message_bytes = 1000;
  Node& client = h.AddNode(config);
  Node& server = h.AddNode();
  auto r = client.t->SendRequest(server.address(), Buffer::Allocate(1001), 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("max_message_bytes"), std::string::npos);
  EXPECT_FALSE(client.t->SendRequest(transport::NetAddress(), Buffer::Allocate(1), 0).ok());
}

TEST(TcpTransportTest, RequestOverTheServersLimitIsRefusedUnread) {
  Harness h;
  Node& client = h.AddNode();
  TcpConfig small;
  small.max_message_bytes = 100'000;
  Node& server = h.AddNode(small);
  uint64_t id = Call(client, server, Pattern(3'000'000, 4));
  ASSERT_TRUE(h.RunUntil([&] { return client.Completed(id); }));
  ASSERT_EQ(server.refused.size(), 1u);
  EXPECT_EQ(server.refused[0].status.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(server.refused[0].status.message().find("max_message_bytes"), std::string::npos);
  EXPECT_EQ(server.t->stats().oversize_refused, 1u);
  // The server's error reply is the response (the engine builds it so).
  EXPECT_EQ(client.done.at(id).message.AsStringView().rfind("error: RESOURCE_EXHAUSTED", 0), 0u);
  // Never buffered: the bytes were read and dropped.
  EXPECT_LT(server.t->stats().peak_incoming_buffer_bytes, 2 * kChunk);
  // The connection survives for the next RPC.
  uint64_t next = Call(client, server, Pattern(10, 5));
  ASSERT_TRUE(h.RunUntil([&] { return client.Completed(next); }));
  EXPECT_EQ(server.t->stats().protocol_errors, 0u);
}

TEST(TcpTransportTest, CancelledRpcsYieldNoEvent) {
  Harness h;
  Node& client = h.AddNode();
  Node& server = h.AddNode();
  server.auto_respond = false;
  // Cancelled at once, before any byte left.
  uint64_t early = Call(client, server, Pattern(100, 1));
  EXPECT_TRUE(client.t->Cancel(early));
  EXPECT_FALSE(client.t->Cancel(early));
  // Cancelled in the middle of a large request: the server drops its partial
  // copy when the ABORT arrives.
  uint64_t large = Call(client, server, Pattern(size_t{16} << 20, 2));
  ASSERT_TRUE(h.RunUntil([&] { return server.t->incoming_buffer_bytes() > (1u << 20); }));
  EXPECT_TRUE(client.t->Cancel(large));
  // Cancelled after the server has it.
  uint64_t held = Call(client, server, Pattern(10, 3));
  ASSERT_TRUE(h.RunUntil([&] { return !server.held.empty(); }));
  EXPECT_TRUE(client.t->Cancel(held));
  ASSERT_TRUE(h.RunUntil([&] { return server.t->incoming_buffer_bytes() == 0; }));
  EXPECT_GE(client.t->stats().aborts_sent, 1u);
  // The server answers anyway (unless the client's ack floor already told
  // it the RPC is over); the client drops the answer, and its floor frees it.
  for (auto& e : server.held) {
    Status s = server.t->SendResponse(e.server_key, Buffer::Copy("late"));
    EXPECT_TRUE(s.ok() || s.code() == StatusCode::kNotFound) << s;
  }
  ASSERT_TRUE(h.RunUntil([&] { return server.t->num_server_rpcs() == 0; }));
  h.RunFor(5 * kNsPerMs);
  EXPECT_TRUE(client.done.empty());
  EXPECT_EQ(client.t->num_client_rpcs(), 0u);
  EXPECT_EQ(server.handled.size(), 1u) << "only the request that arrived whole ran";
  EXPECT_EQ(server.t->stats().protocol_errors, 0u);
}

TEST(TcpTransportTest, SendResponseChecksTheRpc) {
  Harness h;
  Node& client = h.AddNode();
  Node& server = h.AddNode();
  server.auto_respond = false;
  Call(client, server, Buffer::Copy("x"));
  ASSERT_TRUE(h.RunUntil([&] { return server.held.size() == 1; }));
  transport::ServerRpcKey key = server.held[0].server_key;
  transport::ServerRpcKey unknown = key;
  unknown.client_id += 12345;
  EXPECT_EQ(server.t->SendResponse(unknown, Buffer()).code(), StatusCode::kNotFound);
  transport::ServerRpcKey wrong_port = key;
  wrong_port.client_port = 1;
  EXPECT_EQ(server.t->SendResponse(wrong_port, Buffer()).code(), StatusCode::kNotFound);
  EXPECT_TRUE(server.t->SendResponse(key, Buffer::Copy("y")).ok());
  EXPECT_EQ(server.t->SendResponse(key, Buffer::Copy("y")).code(), StatusCode::kFailedPrecondition);
}

TEST(TcpTransportTest, ReadableFdSignalsWorkForTheHostsEpoll) {
  Harness h;
  Node& client = h.AddNode();
  Node& server = h.AddNode();
  const int host = epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ASSERT_EQ(epoll_ctl(host, EPOLL_CTL_ADD, server.t->ReadableFd(), &ev), 0);
  EXPECT_EQ(epoll_wait(host, &ev, 1, 0), 0);
  Call(client, server, Buffer::Copy("wake up"));
  // The client's connect reaches the server's listener: its fd turns readable.
  EXPECT_EQ(epoll_wait(host, &ev, 1, 5000), 1);
  close(host);
}

// The names are CounterList's (stats_test.cc); Counters() shows them live.
TEST(TcpTransportTest, CountersShowTheStatsLive) {
  Harness h;
  Node& client = h.AddNode();
  Node& server = h.AddNode();
  const uint64_t id = Call(client, server, Buffer::Copy("x"));
  ASSERT_TRUE(h.RunUntil([&] { return client.Completed(id); }));
  uint64_t sent = 0;
  for (const auto& [name, value] : client.t->Counters()) {
    if (name == "tcp.requests_sent") sent = value;
  }
  EXPECT_EQ(sent, 1u);
}

}  // namespace
}  // namespace wharf::stream
