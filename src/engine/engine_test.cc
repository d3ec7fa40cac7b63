// Component tests of engine::Engine: two or more engines, each on its own
// HomaTransport, over FakeNetwork + SimClock. A small driver polls every
// engine until quiet, then jumps the clock to the next deadline.
#include "engine/engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/sim_clock.h"
#include "engine/frame.h"
#include "engine/testing/engine_fixture.h"
#include "homa/homa_transport.h"
#include "transport/fake/fake_network.h"
#include "transport/fake/packet_predicate.h"

namespace wharf::engine {
namespace {

using testing::EngineTest;
using testing::Node;
using StatePtr = testing::OpPtr;
using transport::NetAddress;
constexpr DurationNs kSecond = kNsPerSec;

TEST_F(EngineTest, ConnectAcceptThenSendAndRecvBothWays) {
  Node& a = AddNode("A");
  Node& b = AddNode("B");
  auto [ca, cb] = ConnectPair(a, b);
  EXPECT_NE(ca, 0u);
  EXPECT_NE(cb, 0u);
  EXPECT_EQ(*b.engine->PeerOf(cb), "homa://" + a.addr.ToString());
  EXPECT_EQ(*a.engine->PeerOf(ca), "homa://" + b.addr.ToString());

  StatePtr recv_b = b.engine->Recv(cb);
  EXPECT_FALSE(Done(recv_b));
  StatePtr send_a = a.engine->Send(ca, Text("hello from A"));
  ASSERT_TRUE(RunUntil([&] { return Done(recv_b) && Done(send_a); }));
  EXPECT_TRUE(send_a->status.ok()) << send_a->status.ToString();
  ASSERT_TRUE(recv_b->status.ok()) << recv_b->status.ToString();
  EXPECT_EQ(recv_b->message.AsStringView(), "hello from A");

  // The other way, with the message arriving before the Recv is posted; a
  // large one too, so it spans many packets and needs grants.
  std::string big(200'000, 'x');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + i % 26);
  StatePtr send_b1 = b.engine->Send(cb, Text("reply from B"));
  ASSERT_TRUE(RunUntilDone(send_b1));
  EXPECT_TRUE(send_b1->status.ok());
  StatePtr send_b2 = b.engine->Send(cb, Text(big));
  ASSERT_TRUE(RunUntilDone(send_b2));
  EXPECT_TRUE(send_b2->status.ok());
  StatePtr r1 = a.engine->Recv(ca);
  StatePtr r2 = a.engine->Recv(ca);
  ASSERT_TRUE(Done(r1));  // already queued: completes at once
  ASSERT_TRUE(Done(r2));
  EXPECT_EQ(r1->message.AsStringView(), "reply from B");
  EXPECT_EQ(r2->message.AsStringView(), big);
  EXPECT_EQ(a.engine->pending_ops(), 0u);
  EXPECT_EQ(b.engine->pending_ops(), 0u);
}

TEST_F(EngineTest, AcceptQueuesConnectionsThatArriveFirst) {
  Node& a = AddNode("A");
  Node& b = AddNode("B");
  b.engine->Listen();
  StatePtr connect = a.engine->Connect(b.uri, false, kNever);
  ASSERT_TRUE(RunUntilDone(connect));
  ASSERT_TRUE(connect->status.ok());
  StatePtr accept = b.engine->Accept(kNever);
  ASSERT_TRUE(Done(accept));
  EXPECT_TRUE(accept->status.ok());
  EXPECT_NE(accept->value, 0u);
}

TEST_F(EngineTest, AcceptBeforeListenFails) {
  Node& a = AddNode("A");
  StatePtr accept = a.engine->Accept(kNever);
  ASSERT_TRUE(Done(accept));
  EXPECT_EQ(accept->status.code(), StatusCode::kFailedPrecondition);
}

TEST_F(EngineTest, AStreamGoesToAcceptStreamAndAPlainConnectionToAccept) {
  Node& a = AddNode("A");
  Node& b = AddNode("B");
  b.engine->Listen();
  b.engine->engine().ServeStreams(77, true);
  StatePtr accept = b.engine->Accept(kNever);
  StatePtr accept_stream = b.engine->AcceptStream(kNever);
  StatePtr stream = a.engine->Connect(b.uri, /*ordered=*/false, kNever, /*stream_method=*/77);
  ASSERT_TRUE(RunUntil([&] { return Done(stream) && Done(accept_stream); }));
  ASSERT_TRUE(stream->status.ok()) << stream->status.ToString();
  EXPECT_FALSE(Done(accept));  // the stream is not the application's connection
  EXPECT_EQ(*b.engine->engine().StreamMethodOf(accept_stream->value), 77u);
  EXPECT_EQ(*a.engine->engine().StreamMethodOf(stream->value), 77u);

  StatePtr plain = a.engine->Connect(b.uri, false, kNever);
  ASSERT_TRUE(RunUntil([&] { return Done(plain) && Done(accept); }));
  EXPECT_EQ(*b.engine->engine().StreamMethodOf(accept->value), 0u);

  // A stream is ordered whatever the caller asked: a short message never
  // overtakes a long one.
  StatePtr big = a.engine->Send(stream->value, Buffer::Copy(std::string(200000, 'x')));
  StatePtr small = a.engine->Send(stream->value, Text("after"));
  StatePtr r1 = b.engine->Recv(accept_stream->value);
  StatePtr r2 = b.engine->Recv(accept_stream->value);
  ASSERT_TRUE(RunUntil([&] { return Done(r1) && Done(r2); }));
  EXPECT_EQ(r1->message.size(), 200000u);
  EXPECT_EQ(r2->message.AsStringView(), "after");
}

TEST_F(EngineTest, AStreamOfAMethodNotServedIsRefusedAndQueuesNothing) {
  Node& a = AddNode("A");
  Node& b = AddNode("B");
  b.engine->Listen();  // listening for connections serves no streams
  b.engine->engine().ServeStreams(77, true);
  StatePtr other = a.engine->Connect(b.uri, false, kNever, /*stream_method=*/78);
  ASSERT_TRUE(RunUntilDone(other));
  EXPECT_EQ(other->status.code(), StatusCode::kUnimplemented) << other->status.ToString();
  EXPECT_NE(other->status.message().find("78"), std::string::npos);
  b.engine->engine().ServeStreams(77, false);
  StatePtr stopped = a.engine->Connect(b.uri, false, kNever, 77);
  ASSERT_TRUE(RunUntilDone(stopped));
  EXPECT_EQ(stopped->status.code(), StatusCode::kUnimplemented);
  StatePtr accept_stream = b.engine->AcceptStream(kNever);
  ASSERT_TRUE(Done(accept_stream));
  EXPECT_EQ(accept_stream->status.code(), StatusCode::kFailedPrecondition);
  StatePtr accept = b.engine->Accept(kNever);
  EXPECT_FALSE(Done(accept));
}

TEST_F(EngineTest, ConnectWithoutListenIsUnavailable) {
  Node& a = AddNode("A");
  Node& b = AddNode("B");
  StatePtr connect = a.engine->Connect(b.uri, false, kNever);
  ASSERT_TRUE(RunUntilDone(connect));
  EXPECT_EQ(connect->status.code(), StatusCode::kUnavailable) << connect->status.ToString();
  // The half-made connection is forgotten.
  EXPECT_FALSE(a.engine->PeerOf(1).ok());
  StatePtr send = a.engine->Send(1, Text("x"));
  ASSERT_TRUE(Done(send));
  EXPECT_EQ(send->status.code(), StatusCode::kInvalidArgument);
}

TEST_F(EngineTest, OrderedConnectionDeliversInOrderDespiteReordering) {
  Node& a = AddNode("A");
  Node& b = AddNode("B");
  auto [ca, cb] = ConnectPair(a, b, /*ordered=*/true);
  transport::fake::LinkConfig link;
  link.reorder_probability = 0.5;
  link.reorder_extra_delay_ns = 50 * kNsPerUs;
  net_.SetLinkBothWays("A", "B", link);

  constexpr int kMessages = 30;
  std::vector<StatePtr> sends;
  for (int i = 0; i < kMessages; ++i) {
    // Sizes vary so that short messages tend to overtake long ones too.
    std::string text = "m" + std::to_string(i) + std::string((i % 3) * 3000, '.');
    sends.push_back(a.engine->Send(ca, Text(text)));
  }
  ASSERT_TRUE(RunUntil([&] {
    return std::all_of(sends.begin(), sends.end(), [](const StatePtr& s) { return Done(s); });
  }));
  EXPECT_GT(net_.Counters("A", "B").delayed, 0u);  // the network did reorder
  for (int i = 0; i < kMessages; ++i) {
    EXPECT_TRUE(sends[i]->status.ok()) << i << ": " << sends[i]->status.ToString();
    StatePtr r = b.engine->Recv(cb);
    ASSERT_TRUE(Done(r)) << i;
    std::string expected = "m" + std::to_string(i) + std::string((i % 3) * 3000, '.');
    EXPECT_EQ(r->message.AsStringView(), expected) << "message " << i;
  }
}

TEST_F(EngineTest, RpcWithHandlerReturnsResponseAndSeesPeer) {
  Node& a = AddNode("A");
  Node& b = AddNode("B");
  std::string seen_peer;
  uint32_t seen_method = 0;
  b.engine->SetHandler(7, [&](const RpcContext& ctx, Buffer req) -> Result<Buffer> {
    seen_peer = ctx.peer;
    seen_method = ctx.method;
    return Buffer::Copy("echo:" + std::string(req.AsStringView()));
  });
  StatePtr call = a.engine->Call(b.uri, 7, Text("ping"), kNever);
  ASSERT_TRUE(RunUntilDone(call));
  ASSERT_TRUE(call->status.ok()) << call->status.ToString();
  EXPECT_EQ(call->message.AsStringView(), "echo:ping");
  EXPECT_EQ(seen_peer, "homa://" + a.addr.ToString());
  EXPECT_EQ(seen_method, 7u);
}

// Calls count as awaiting an answer until they complete; accepts and
// receives, which may wait for ever, do not (wharfd spins longer only for
// the former: daemon.busy_spin).
TEST_F(EngineTest, OpsAwaitingAnswerCountCallsButNotAcceptsOrReceives) {
  Node& a = AddNode("A");
  Node& b = AddNode("B");
  b.engine->SetHandler(7, [](const RpcContext&, Buffer req) -> Result<Buffer> { return req; });
  a.engine->Listen();
  StatePtr accept = a.engine->Accept(kNever);
  EXPECT_EQ(a.engine->pending_ops(), 1u);
  EXPECT_EQ(a.engine->ops_awaiting_answer(), 0u);
  StatePtr one = a.engine->Call(b.uri, 7, Text("1"), kNever);
  StatePtr two = a.engine->Call(b.uri, 7, Text("2"), kNever);
  EXPECT_EQ(a.engine->ops_awaiting_answer(), 2u);
  ASSERT_TRUE(RunUntil([&] { return Done(one) && Done(two); }));
  EXPECT_EQ(a.engine->ops_awaiting_answer(), 0u);
  EXPECT_EQ(a.engine->pending_ops(), 1u);  // the accept
  StatePtr failed = a.engine->Call(Uri{"tcp", b.addr}, 7, Text("x"), kNever);  // fails at once
  EXPECT_EQ(a.engine->ops_awaiting_answer(), 0u);
  a.engine->Cancel(accept->op_id);
  EXPECT_EQ(a.engine->pending_ops(), 0u);
  EXPECT_EQ(a.engine->ops_awaiting_answer(), 0u);
}

TEST_F(EngineTest, SchemeWithoutTransportFailsAtOnceNamingIt) {
  Node& a = AddNode("A");
  Node& b = AddNode("B");
  StatePtr call = a.engine->Call(Uri{"tcp", b.addr}, 7, Text("ping"), kNever);
  ASSERT_TRUE(call->done.load());
  EXPECT_EQ(call->status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(call->status.message().find("no tcp transport"), std::string::npos) << call->status;
  EXPECT_EQ(a.engine->pending_ops(), 0u);
}

TEST_F(EngineTest, HandlerErrorArrivesWithCodeAndMessage) {
  Node& a = AddNode("A");
  Node& b = AddNode("B");
  b.engine->SetHandler(3, [](const RpcContext&, Buffer) -> Result<Buffer> {
    return PermissionDeniedError("tenant 42 may not call this");
  });
  StatePtr call = a.engine->Call(b.uri, 3, Text("x"), kNever);
  ASSERT_TRUE(RunUntilDone(call));
  EXPECT_EQ(call->status.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(call->status.message(), "tenant 42 may not call this");
  EXPECT_TRUE(call->message.empty());
}

TEST_F(EngineTest, UnknownMethodIsUnimplemented) {
  Node& a = AddNode("A");
  Node& b = AddNode("B");
  StatePtr call = a.engine->Call(b.uri, 99, Text("x"), kNever);
  ASSERT_TRUE(RunUntilDone(call));
  EXPECT_EQ(call->status.code(), StatusCode::kUnimplemented);
  EXPECT_NE(call->status.message().find("99"), std::string::npos) << call->status.message();
}

TEST_F(EngineTest, CallDeadlineExpiresInSimulatedTimeAndLateResponseIsIgnored) {
  Node& a = AddNode("A");
  Node& b = AddNode("B");
  int runs = 0;
  b.engine->SetHandler(1, [&](const RpcContext&, Buffer) -> Result<Buffer> {
    ++runs;
    return Buffer::Copy("late");
  });
  // Every packet B->A takes 50 ms: the response cannot make a 10 ms deadline.
  transport::fake::LinkConfig slow;
  slow.delay_ns = 50 * kNsPerMs;
  net_.SetLink("B", "A", slow);
  TimeNs start = clock_.NowNs();
  StatePtr call = a.engine->Call(b.uri, 1, Text("q"), start + 10 * kNsPerMs);
  ASSERT_TRUE(RunUntilDone(call));
  EXPECT_EQ(call->status.code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(clock_.NowNs(), start + 10 * kNsPerMs);  // exactly at the deadline
  EXPECT_EQ(a.engine->pending_ops(), 0u);

  RunFor(500 * kNsPerMs);  // the response arrives and must change nothing
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(call->status.code(), StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(call->message.empty());
  EXPECT_EQ(a.engine->pending_ops(), 0u);

  // The engine still works afterwards.
  net_.SetLink("B", "A", transport::fake::LinkConfig{});
  StatePtr again = a.engine->Call(b.uri, 1, Text("q"), kNever);
  ASSERT_TRUE(RunUntilDone(again));
  EXPECT_TRUE(again->status.ok());
  EXPECT_EQ(again->message.AsStringView(), "late");
}

TEST_F(EngineTest, CancelCompletesPendingCallWithCancelled) {
  Node& a = AddNode("A");
  Node& b = AddNode("B");
  int runs = 0;
  b.engine->SetHandler(1, [&](const RpcContext&, Buffer) -> Result<Buffer> {
    ++runs;
    return Buffer::Copy("r");
  });
  transport::fake::LinkConfig slow;
  slow.delay_ns = 20 * kNsPerMs;
  net_.SetLinkBothWays("A", "B", slow);
  StatePtr call = a.engine->Call(b.uri, 1, Text("q"), kNever);
  RunFor(5 * kNsPerMs);
  ASSERT_FALSE(Done(call));
  a.engine->Cancel(call->op_id);
  ASSERT_TRUE(Done(call));
  EXPECT_EQ(call->status.code(), StatusCode::kCancelled);
  RunFor(200 * kNsPerMs);
  // The only operation left was the notice telling the server; it is done.
  EXPECT_EQ(a.engine->pending_ops(), 0u);
  EXPECT_EQ(call->status.code(), StatusCode::kCancelled);
  // Cancelling again, or an unknown id, is harmless.
  a.engine->Cancel(call->op_id);
  a.engine->Cancel(12345);
}

TEST_F(EngineTest, CancelPendingRecv) {
  Node& a = AddNode("A");
  Node& b = AddNode("B");
  auto [ca, cb] = ConnectPair(a, b);
  StatePtr recv = b.engine->Recv(cb);
  ASSERT_FALSE(Done(recv));
  b.engine->Cancel(recv->op_id);
  ASSERT_TRUE(Done(recv));
  EXPECT_EQ(recv->status.code(), StatusCode::kCancelled);
  // A later message goes to the next Recv, not the cancelled one.
  StatePtr send = a.engine->Send(ca, Text("after"));
  ASSERT_TRUE(RunUntilDone(send));
  StatePtr recv2 = b.engine->Recv(cb);
  ASSERT_TRUE(Done(recv2));
  EXPECT_EQ(recv2->message.AsStringView(), "after");
}

TEST_F(EngineTest, PeerDeathFailsPendingCallWithUnavailable) {
  Node& a = AddNode("A");
  Node& b = AddNode("B");
  b.engine->SetHandler(1, [](const RpcContext&, Buffer) -> Result<Buffer> {
    return Buffer::Copy("r");
  });
  net_.Partition("A", "B");
  StatePtr call = a.engine->Call(b.uri, 1, Text("q"), kNever);
  ASSERT_TRUE(RunUntilDone(call, 10 * kSecond));
  EXPECT_EQ(call->status.code(), StatusCode::kUnavailable) << call->status.ToString();
  EXPECT_EQ(a.engine->pending_ops(), 0u);
}

TEST_F(EngineTest, PeerDeathFailsConnectionSendAndPendingRecv) {
  Node& a = AddNode("A");
  Node& b = AddNode("B");
  auto [ca, cb] = ConnectPair(a, b);
  StatePtr recv = a.engine->Recv(ca);
  net_.Partition("A", "B");
  StatePtr send = a.engine->Send(ca, Text("into the void"));
  ASSERT_TRUE(RunUntil([&] { return Done(send) && Done(recv); }, 10 * kSecond));
  EXPECT_EQ(send->status.code(), StatusCode::kUnavailable) << send->status.ToString();
  EXPECT_EQ(recv->status.code(), StatusCode::kUnavailable) << recv->status.ToString();
  // The connection is closed: later operations fail at once.
  StatePtr send2 = a.engine->Send(ca, Text("x"));
  ASSERT_TRUE(Done(send2));
  EXPECT_EQ(send2->status.code(), StatusCode::kUnavailable);
  StatePtr recv2 = a.engine->Recv(ca);
  ASSERT_TRUE(Done(recv2));
  EXPECT_EQ(recv2->status.code(), StatusCode::kUnavailable);
}

// A connection that only receives learns of its peer's death through the
// engine's keep-alives (a partition: the transport's silent-peer timeout).
TEST_F(EngineTest, PeerDeathFailsPendingRecvOnReceiveOnlyConnection) {
  Node& a = AddNode("A");
  Node& b = AddNode("B");
  auto [ca, cb] = ConnectPair(a, b);
  (void)ca;
  StatePtr recv = b.engine->Recv(cb);
  TimeNs start = clock_.NowNs();
  net_.Partition("A", "B");
  ASSERT_TRUE(RunUntilDone(recv, 10 * kSecond));
  EXPECT_EQ(recv->status.code(), StatusCode::kUnavailable) << recv->status;
  // Within one keep-alive interval plus the transport's peer timeout.
  EXPECT_LE(clock_.NowNs() - start,
            EngineLimits{}.keepalive_ns + homa::HomaConfig{}.peer_timeout_ns + kSecond);
}

TEST_F(EngineTest, KeepAliveLearnsThatPeerForgotTheConnection) {
  Node& a = AddNode("A");
  Node& b = AddNode("B");
  auto [ca, cb] = ConnectPair(a, b);
  StatePtr recv = b.engine->Recv(cb);
  a.engine->Release(ca);  // as if A restarted: it no longer knows the connection
  ASSERT_TRUE(RunUntilDone(recv, 10 * kSecond));
  EXPECT_EQ(recv->status.code(), StatusCode::kNotFound) << recv->status;
  EXPECT_NE(recv->status.message().find("is closed at homa://" + a.addr.ToString()),
            std::string::npos)
      << recv->status;
}

TEST_F(EngineTest, KeepAliveIsQuietWhileNobodyWaits) {
  Node& a = AddNode("A");
  Node& b = AddNode("B");
  auto [ca, cb] = ConnectPair(a, b);
  (void)ca;
  (void)cb;
  // No receiver waits: the engines have no deadline of their own.
  RunUntil([] { return false; }, 2 * kSecond);
  EXPECT_EQ(a.engine->NextDeadline(), a.homa->NextDeadline());
  EXPECT_EQ(b.engine->NextDeadline(), b.homa->NextDeadline());
}

TEST_F(EngineTest, DisconnectFailsPeersRecvWithUnavailable) {
  Node& a = AddNode("A");
  Node& b = AddNode("B");
  auto [ca, cb] = ConnectPair(a, b);
  StatePtr recv = b.engine->Recv(cb);
  StatePtr disc = a.engine->Disconnect(ca);
  ASSERT_TRUE(RunUntil([&] { return Done(disc) && Done(recv); }));
  EXPECT_TRUE(disc->status.ok()) << disc->status.ToString();
  EXPECT_EQ(recv->status.code(), StatusCode::kUnavailable) << recv->status.ToString();
  EXPECT_NE(recv->status.message().find("homa://" + a.addr.ToString()), std::string::npos)
      << recv->status.message();
  // Locally: the connection is closed, a second Disconnect is refused.
  StatePtr again = a.engine->Disconnect(ca);
  ASSERT_TRUE(Done(again));
  EXPECT_EQ(again->status.code(), StatusCode::kFailedPrecondition);
  StatePtr send = a.engine->Send(ca, Text("x"));
  ASSERT_TRUE(Done(send));
  EXPECT_FALSE(send->status.ok());
  a.engine->Release(ca);
  EXPECT_FALSE(a.engine->PeerOf(ca).ok());
}

TEST_F(EngineTest, ReleaseWithPendingReceivesCancelsThem) {
  Node& a = AddNode("A");
  Node& b = AddNode("B");
  auto [ca, cb] = ConnectPair(a, b);
  StatePtr r1 = a.engine->Recv(ca);
  StatePtr r2 = a.engine->Recv(ca);
  ASSERT_FALSE(Done(r1));
  a.engine->Release(ca);
  ASSERT_TRUE(Done(r1) && Done(r2));
  EXPECT_EQ(r1->status.code(), StatusCode::kCancelled);
  EXPECT_EQ(r2->status.code(), StatusCode::kCancelled);
  (void)cb;
}

TEST_F(EngineTest, MessagesQueuedBeforeDisconnectAreStillReadable) {
  Node& a = AddNode("A");
  Node& b = AddNode("B");
  auto [ca, cb] = ConnectPair(a, b);
  StatePtr send = a.engine->Send(ca, Text("last words"));
  ASSERT_TRUE(RunUntilDone(send));
  StatePtr disc = a.engine->Disconnect(ca);
  ASSERT_TRUE(RunUntilDone(disc));
  StatePtr r1 = b.engine->Recv(cb);
  ASSERT_TRUE(Done(r1));
  EXPECT_EQ(r1->message.AsStringView(), "last words");
  StatePtr r2 = b.engine->Recv(cb);
  ASSERT_TRUE(Done(r2));
  EXPECT_EQ(r2->status.code(), StatusCode::kUnavailable);
}

TEST_F(EngineTest, BarrierWithThreeEnginesReleasesWhenAllArrive) {
  Node& n0 = AddNode("N0");
  Node& n1 = AddNode("N1");
  Node& n2 = AddNode("N2");
  StatePtr b1 = n1.engine->BarrierArrive(n0.uri, false, /*group=*/5, /*round=*/1, 3, kNever);
  StatePtr b0 = n0.engine->BarrierArrive(n0.uri, true, 5, 1, 3, kNever);
  RunFor(50 * kNsPerMs);
  EXPECT_FALSE(Done(b0));
  EXPECT_FALSE(Done(b1));
  StatePtr b2 = n2.engine->BarrierArrive(n0.uri, false, 5, 1, 3, kNever);
  ASSERT_TRUE(RunUntil([&] { return Done(b0) && Done(b1) && Done(b2); }));
  EXPECT_TRUE(b0->status.ok()) << b0->status.ToString();
  EXPECT_TRUE(b1->status.ok()) << b1->status.ToString();
  EXPECT_TRUE(b2->status.ok()) << b2->status.ToString();

  // The next round is independent, and the coordinator may arrive last.
  StatePtr c1 = n1.engine->BarrierArrive(n0.uri, false, 5, 2, 3, kNever);
  StatePtr c2 = n2.engine->BarrierArrive(n0.uri, false, 5, 2, 3, kNever);
  RunFor(10 * kNsPerMs);
  EXPECT_FALSE(Done(c1));
  StatePtr c0 = n0.engine->BarrierArrive(n0.uri, true, 5, 2, 3, kNever);
  ASSERT_TRUE(RunUntil([&] { return Done(c0) && Done(c1) && Done(c2); }));
  EXPECT_TRUE(c0->status.ok() && c1->status.ok() && c2->status.ok());
}

TEST_F(EngineTest, BarrierDeadlineExpires) {
  Node& n0 = AddNode("N0");
  Node& n1 = AddNode("N1");
  StatePtr b1 = n1.engine->BarrierArrive(n0.uri, false, 1, 1, 3, clock_.NowNs() + 20 * kNsPerMs);
  StatePtr b0 = n0.engine->BarrierArrive(n0.uri, true, 1, 1, 3, clock_.NowNs() + 20 * kNsPerMs);
  ASSERT_TRUE(RunUntil([&] { return Done(b0) && Done(b1); }));
  EXPECT_EQ(b0->status.code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(b1->status.code(), StatusCode::kDeadlineExceeded);
}

TEST_F(EngineTest, QueuedBytesLimitRefusesSendWithResourceExhausted) {
  EngineLimits small;
  small.max_queued_bytes_per_connection = 1000;
  Node& a = AddNode("A");
  Node& b = AddNode("B", small);
  auto [ca, cb] = ConnectPair(a, b);
  StatePtr s1 = a.engine->Send(ca, Text(std::string(600, 'a')));
  ASSERT_TRUE(RunUntilDone(s1));
  EXPECT_TRUE(s1->status.ok()) << s1->status.ToString();
  StatePtr s2 = a.engine->Send(ca, Text(std::string(600, 'b')));
  ASSERT_TRUE(RunUntilDone(s2));
  EXPECT_EQ(s2->status.code(), StatusCode::kResourceExhausted) << s2->status.ToString();
  EXPECT_NE(s2->status.message().find("1000"), std::string::npos) << s2->status.message();
  // The receiver holds only the first message.
  StatePtr r1 = b.engine->Recv(cb);
  ASSERT_TRUE(Done(r1));
  EXPECT_EQ(r1->message.size(), 600u);
  StatePtr r2 = b.engine->Recv(cb);
  EXPECT_FALSE(Done(r2));
  b.engine->Cancel(r2->op_id);
}

// A send refused for back-pressure (kResourceExhausted from the receiver's
// max_queued_bytes_per_connection) must not close the sender's connection:
// once the receiver drains its queue, sending works again.
TEST_F(EngineTest, SenderCanSendAgainAfterReceiverDrainsQueue) {
  EngineLimits small;
  small.max_queued_bytes_per_connection = 1000;
  Node& a = AddNode("A");
  Node& b = AddNode("B", small);
  auto [ca, cb] = ConnectPair(a, b);
  StatePtr s1 = a.engine->Send(ca, Text(std::string(600, 'a')));
  ASSERT_TRUE(RunUntilDone(s1));
  StatePtr s2 = a.engine->Send(ca, Text(std::string(600, 'b')));
  ASSERT_TRUE(RunUntilDone(s2));
  ASSERT_EQ(s2->status.code(), StatusCode::kResourceExhausted);
  StatePtr r1 = b.engine->Recv(cb);
  ASSERT_TRUE(Done(r1));
  StatePtr s3 = a.engine->Send(ca, Text(std::string(600, 'c')));
  ASSERT_TRUE(RunUntilDone(s3));
  EXPECT_TRUE(s3->status.ok()) << s3->status.ToString();
}

TEST_F(EngineTest, PayloadOverMaxMessageBytesIsInvalidArgument) {
  EngineLimits limits;
  limits.max_message_bytes = 100;
  Node& a = AddNode("A", limits);
  Node& b = AddNode("B");
  b.engine->SetHandler(1, [](const RpcContext&, Buffer r) -> Result<Buffer> { return r; });
  auto [ca, cb] = ConnectPair(a, b);
  (void)cb;
  StatePtr send = a.engine->Send(ca, Text(std::string(101, 'x')));
  ASSERT_TRUE(Done(send));
  EXPECT_EQ(send->status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(send->status.message().find("100"), std::string::npos) << send->status.message();
  StatePtr call = a.engine->Call(b.uri, 1, Text(std::string(101, 'x')), kNever);
  ASSERT_TRUE(Done(call));
  EXPECT_EQ(call->status.code(), StatusCode::kInvalidArgument);
  // Exactly at the limit is fine.
  StatePtr ok = a.engine->Call(b.uri, 1, Text(std::string(100, 'y')), kNever);
  ASSERT_TRUE(RunUntilDone(ok));
  EXPECT_TRUE(ok->status.ok()) << ok->status.ToString();
  EXPECT_EQ(ok->message.size(), 100u);
}

TEST_F(EngineTest, OversizeHandlerResponseBecomesResourceExhausted) {
  EngineLimits limits;
  limits.max_message_bytes = 100;
  Node& a = AddNode("A");
  Node& b = AddNode("B", limits);
  b.engine->SetHandler(1, [](const RpcContext&, Buffer) -> Result<Buffer> {
    return Buffer::Copy(std::string(101, 'z'));
  });
  StatePtr call = a.engine->Call(b.uri, 1, Text("q"), kNever);
  ASSERT_TRUE(RunUntilDone(call));
  EXPECT_EQ(call->status.code(), StatusCode::kResourceExhausted) << call->status.ToString();
}

TEST_F(EngineTest, GarbageRequestFrameGetsErrorReplyAndNoCrash) {
  Node& b = AddNode("B");
  Node& raw = AddNode("RAW", EngineLimits{}, /*with_engine=*/false);
  b.engine->SetHandler(1, [](const RpcContext&, Buffer r) -> Result<Buffer> { return r; });
  Result<uint64_t> id = raw.homa->SendRequest(b.addr, Text("12345"), /*cookie=*/77);
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(RunUntil([&] { return !raw.events.empty(); }));
  homa::HomaEvent& event = raw.events.front();
  ASSERT_EQ(event.kind, homa::HomaEvent::Kind::kResponse);
  EXPECT_EQ(event.cookie, 77u);
  Result<Frame> frame = UnwrapFrame(event.message);
  ASSERT_TRUE(frame.ok()) << frame.status().ToString();
  EXPECT_EQ(frame->kind, FrameKind::kReply);
  EXPECT_EQ(frame->code, static_cast<uint32_t>(StatusCode::kInvalidArgument));
  EXPECT_FALSE(event.message.empty());  // the error text

  // A reply frame sent as a request is refused too.
  Frame reply;
  reply.kind = FrameKind::kReply;
  raw.events.clear();
  ASSERT_TRUE(raw.homa->SendRequest(b.addr, WrapFrame(reply, Buffer())).ok());
  ASSERT_TRUE(RunUntil([&] { return !raw.events.empty(); }));
  Result<Frame> f2 = UnwrapFrame(raw.events.front().message);
  ASSERT_TRUE(f2.ok());
  EXPECT_EQ(f2->code, static_cast<uint32_t>(StatusCode::kInvalidArgument));

  // A message for a connection that does not exist is NotFound.
  Frame msg;
  msg.kind = FrameKind::kMessage;
  msg.conn_id = 424242;
  raw.events.clear();
  ASSERT_TRUE(raw.homa->SendRequest(b.addr, WrapFrame(msg, Text("hi"))).ok());
  ASSERT_TRUE(RunUntil([&] { return !raw.events.empty(); }));
  Result<Frame> f3 = UnwrapFrame(raw.events.front().message);
  ASSERT_TRUE(f3.ok());
  EXPECT_EQ(f3->code, static_cast<uint32_t>(StatusCode::kNotFound));

  // B still serves a well-formed RPC afterwards.
  Node& a = AddNode("A");
  StatePtr call = a.engine->Call(b.uri, 1, Text("still alive"), kNever);
  ASSERT_TRUE(RunUntilDone(call));
  ASSERT_TRUE(call->status.ok());
  EXPECT_EQ(call->message.AsStringView(), "still alive");
}

TEST_F(EngineTest, ShutdownFailsPendingAndLaterOperations) {
  Node& a = AddNode("A");
  Node& b = AddNode("B");
  auto [ca, cb] = ConnectPair(a, b);
  (void)cb;
  StatePtr recv = a.engine->Recv(ca);
  a.engine->Shutdown(UnavailableError("host closing"));
  ASSERT_TRUE(Done(recv));
  EXPECT_EQ(recv->status.code(), StatusCode::kUnavailable);
  StatePtr call = a.engine->Call(b.uri, 1, Text("q"), kNever);
  ASSERT_TRUE(Done(call));
  EXPECT_EQ(call->status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(a.engine->pending_ops(), 0u);
}

// Large send buffers come from the engine's pool: a message sent from one
// arrives intact, and once the send is done and the buffer dropped, the next
// large allocation reuses the same block. Small ones are not pooled.
TEST_F(EngineTest, LargeSendBuffersAreReusedAndArriveIntact) {
  Node& a = AddNode("A");
  Node& b = AddNode("B");
  auto [ca, cb] = ConnectPair(a, b);
  auto counter = [&](const std::string& name) {
    for (const auto& [n, v] : a.engine->engine().Counters()) {
      if (n == name) return v;
    }
    return ~uint64_t{0};
  };
  constexpr size_t kSize = 300'000;
  const std::byte* first_block = nullptr;
  for (int round = 0; round < 2; ++round) {
    Buffer message = a.engine->engine().AllocateBuffer(kSize);
    ASSERT_EQ(message.size(), kSize);
    if (round == 0) first_block = message.data();
    EXPECT_EQ(message.data(), first_block) << "round " << round;
    for (size_t i = 0; i < kSize; ++i) message.data()[i] = std::byte(i * 7 + round);
    StatePtr send = a.engine->Send(ca, std::move(message));
    StatePtr recv = b.engine->Recv(cb);
    ASSERT_TRUE(RunUntil([&] { return Done(send) && Done(recv); }));
    ASSERT_TRUE(recv->status.ok()) << recv->status.ToString();
    ASSERT_EQ(recv->message.size(), kSize);
    size_t mismatches = 0;
    for (size_t i = 0; i < kSize; ++i) {
      mismatches += recv->message.data()[i] != std::byte(i * 7 + round);
    }
    EXPECT_EQ(mismatches, 0u) << "round " << round;
  }
  EXPECT_EQ(counter("engine.send_buffers_allocated"), 1u);
  EXPECT_EQ(counter("engine.send_buffers_reused"), 1u);
  EXPECT_GE(counter("engine.send_pool_bytes"), kSize);

  Buffer small = a.engine->engine().AllocateBuffer(1000);
  EXPECT_EQ(small.size(), 1000u);
  EXPECT_EQ(counter("engine.send_buffers_allocated") + counter("engine.send_buffers_reused"), 2u);
}

// Passive measurement: each answered call or message is one round trip of
// its peer, from the request leaving to the poll that delivered the answer
// (the link's delay both ways here); an unanswered one is one failure.
struct PeerRtts {
  uint64_t round_trips = 0, failures = 0, min_ns = 0, max_ns = 0;
  std::string scheme, peer;
};
PeerRtts TakePeerRtts(Node& node, TimeNs now) {
  PeerRtts out;
  node.engine->engine().TakePeerRtts(now, [&](std::string_view scheme, const PeerRttDelta& d) {
    out.scheme = std::string(scheme);
    out.peer = d.peer.address.ToString();
    out.round_trips += d.round_trips.Count();
    out.min_ns = d.round_trips.Min();
    out.max_ns = d.round_trips.Max();
    out.failures += d.failures;
  });
  return out;
}

TEST_F(EngineTest, AnsweredCallsAreTheirPeersRoundTripsOnTheClientOnly) {
  Node& a = AddNode("A");
  Node& b = AddNode("B");
  b.engine->SetHandler(7, [](const RpcContext&, Buffer req) -> Result<Buffer> { return req; });
  for (int i = 0; i < 2; ++i) {
    StatePtr call = a.engine->Call(b.uri, 7, Text("q"), kNever);
    ASSERT_TRUE(RunUntilDone(call));
  }
  PeerRtts got = TakePeerRtts(a, clock_.NowNs());
  EXPECT_EQ(got.scheme, "homa");
  EXPECT_EQ(got.peer, b.addr.ToString());
  EXPECT_EQ(got.round_trips, 2u);
  EXPECT_LT(got.max_ns, kNsPerMs);
  EXPECT_EQ(got.failures, 0u);
  EXPECT_EQ(b.engine->engine().peer_rtts().size(), 0u);  // the server measured nothing
  EXPECT_EQ(TakePeerRtts(a, clock_.NowNs()).round_trips, 0u);  // taken already
}

TEST_F(EngineTest, SlowAnswersShowTheirDelayAndErrorsCount) {
  Node& a = AddNode("A");
  Node& b = AddNode("B");
  transport::fake::LinkConfig slow;
  slow.delay_ns = 3 * kNsPerMs;
  net_.SetLinkBothWays("A", "B", slow);
  b.engine->SetHandler(7, [](const RpcContext&, Buffer req) -> Result<Buffer> { return req; });
  b.engine->SetHandler(8, [](const RpcContext&, Buffer) -> Result<Buffer> {
    return NotFoundError("no such key");  // an answer all the same
  });
  for (uint32_t method : {7u, 7u, 8u}) {
    StatePtr call = a.engine->Call(b.uri, method, Text("q"), kNever);
    ASSERT_TRUE(RunUntilDone(call));
  }
  PeerRtts got = TakePeerRtts(a, clock_.NowNs());
  EXPECT_EQ(got.round_trips, 3u);
  // The link's delay both ways (less a nanosecond: the clock starts at 0,
  // which the engine reads as 1), plus serialisation well under a bucket.
  EXPECT_GE(got.min_ns, 6 * kNsPerMs - 1);
  EXPECT_LT(got.max_ns, 7 * kNsPerMs);
  EXPECT_EQ(got.failures, 0u);
}

TEST_F(EngineTest, MessagesOnAConnectionAreRoundTripsToo) {
  Node& a = AddNode("A");
  Node& b = AddNode("B");
  auto [ca, cb] = ConnectPair(a, b);
  (void)cb;
  (void)TakePeerRtts(a, clock_.NowNs());
  for (int i = 0; i < 3; ++i) {
    StatePtr send = a.engine->Send(ca, Text("m"));
    ASSERT_TRUE(RunUntilDone(send));
    ASSERT_TRUE(send->status.ok());
  }
  EXPECT_EQ(TakePeerRtts(a, clock_.NowNs()).round_trips, 3u);
}

TEST_F(EngineTest, CallsThatTimeOutOrFindTheirPeerDeadAreFailures) {
  Node& a = AddNode("A");
  Node& b = AddNode("B");
  b.engine->SetHandler(1, [](const RpcContext&, Buffer req) -> Result<Buffer> { return req; });
  transport::fake::LinkConfig slow;
  slow.delay_ns = 50 * kNsPerMs;
  net_.SetLink("B", "A", slow);
  StatePtr late = a.engine->Call(b.uri, 1, Text("q"), clock_.NowNs() + 10 * kNsPerMs);
  ASSERT_TRUE(RunUntilDone(late));
  ASSERT_EQ(late->status.code(), StatusCode::kDeadlineExceeded);
  PeerRtts got = TakePeerRtts(a, clock_.NowNs());
  EXPECT_EQ(got.round_trips, 0u);
  EXPECT_EQ(got.failures, 1u);
  // A cancelled call is the application's choice, not the path's.
  StatePtr cancelled = a.engine->Call(b.uri, 1, Text("q"), kNever);
  a.engine->Cancel(cancelled->op_id);
  RunFor(200 * kNsPerMs);
  got = TakePeerRtts(a, clock_.NowNs());
  EXPECT_EQ(got.round_trips + got.failures, 0u);
}

TEST_F(EngineTest, PeerRttPeersZeroMeasuresNothing) {
  EngineLimits off;
  off.peer_rtt_peers = 0;
  Node& a = AddNode("A", off);
  Node& b = AddNode("B");
  b.engine->SetHandler(7, [](const RpcContext&, Buffer req) -> Result<Buffer> { return req; });
  StatePtr call = a.engine->Call(b.uri, 7, Text("q"), kNever);
  ASSERT_TRUE(RunUntilDone(call));
  EXPECT_TRUE(call->status.ok());
  EXPECT_EQ(a.engine->engine().peer_rtts().size(), 0u);
  EXPECT_EQ(a.engine->engine().peer_rtts().counters().round_trips, 0u);
}

}  // namespace
}  // namespace wharf::engine
