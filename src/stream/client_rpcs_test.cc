// Tests of ClientRpcs alone, on socketless connections: where requests are
// queued and re-queued, what ends an RPC and which event it leaves, the ack
// floor, and the client's timers. The frames a test expects are the log of
// what the connection would write (FakeConnections::Take).
#include "stream/client_rpcs.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <deque>
#include <string>

#include "stream/testing/fake_connections.h"
#include "stream/testing/tcp_harness.h"

namespace wharf::stream {
namespace {

using testing::FakeConnections;
using transport::MessageEvent;
using wire::StreamFrameType;

constexpr uint64_t kFirstId = 100;
constexpr TimeNs kStart = 1'000 * kNsPerSec;

class ClientRpcsTest : public ::testing::Test {
 protected:
  ClientRpcsTest() : conns_(config_) {
    config_.chunk_bytes = 1000;
    peer_.identity = testing::Loopback4(4000);
  }

  uint64_t Start(size_t bytes, uint64_t cookie = 0) {
    const uint64_t id = rpcs_.Start(peer_, testing::Pattern(bytes, 1), cookie, now_);
    rpcs_.AssignWaiting(peer_, now_);
    return id;
  }
  MessageEvent PopEvent() {
    EXPECT_FALSE(events_.empty());
    if (events_.empty()) return {};
    MessageEvent event = std::move(events_.front());
    events_.pop_front();
    return event;
  }
  std::vector<uint64_t> Dirty() {
    std::vector<uint64_t> ids;
    writes_.TakeDirty(&ids);
    return ids;
  }

  TcpConfig config_;
  WriteBatcher writes_;
  std::deque<MessageEvent> events_;
  TcpStats stats_;
  bool timers_dirty_ = false;
  ClientRpcs rpcs_{config_, kFirstId, &writes_, &events_, &stats_, &timers_dirty_};
  Peer peer_;
  FakeConnections conns_;
  TimeNs now_ = kStart;
};

TEST_F(ClientRpcsTest, Start__WaitsForAConnectionWithoutOne) {
  const uint64_t id = Start(10);
  EXPECT_EQ(id, kFirstId);
  EXPECT_EQ(rpcs_.size(), 1u);
  EXPECT_EQ(peer_.waiting, std::deque<uint64_t>{id});
  EXPECT_EQ(peer_.outstanding.count(id), 1u);
  EXPECT_EQ(rpcs_.Find(id)->conn, nullptr);
  EXPECT_EQ(stats_.requests_sent, 1u);
  EXPECT_FALSE(writes_.has_dirty());
}

TEST_F(ClientRpcsTest, AssignWaiting__QueuesTheRequestOnTheOpenConnection) {
  Connection& conn = conns_.Add(peer_);
  const uint64_t id = Start(10);
  EXPECT_TRUE(peer_.waiting.empty());
  EXPECT_EQ(rpcs_.Find(id)->conn, &conn);
  EXPECT_EQ(Dirty(), std::vector<uint64_t>{conn.id()});
  EXPECT_EQ(conns_.Take(conn, rpcs_.Floor(peer_)), "REQUEST id=100 10@0/10 floor=100");
}

TEST_F(ClientRpcsTest, AssignWaiting__SkipsConnectionsStillInTheirHandshake) {
  conns_.Add(peer_, Connection::State::kHandshake);
  Start(10);
  EXPECT_EQ(peer_.waiting.size(), 1u);
  Connection& open = conns_.Add(peer_);
  rpcs_.AssignWaiting(peer_, now_);
  EXPECT_EQ(conns_.Take(open), "REQUEST id=100 10@0/10");
}

TEST_F(ClientRpcsTest, AssignWaiting__FailsARequestTheOldServerProcessMayHaveRun) {
  Connection& old_conn = conns_.Add(peer_, Connection::State::kOpen, /*remote_instance=*/7);
  const uint64_t id = Start(3000);  // three chunks
  EXPECT_EQ(conns_.Take(old_conn, 0, 1500),
            "REQUEST id=100 1000@0/3000; REQUEST id=100 1000@1000/3000");
  rpcs_.OnConnectionClosed(old_conn, peer_);
  old_conn.CloseSocket();
  peer_.RemoveConnection(&old_conn);
  EXPECT_EQ(rpcs_.Find(id)->server_instance, 7u);
  conns_.Add(peer_, Connection::State::kOpen, /*remote_instance=*/8);
  rpcs_.AssignWaiting(peer_, now_);
  const MessageEvent failed = PopEvent();
  EXPECT_EQ(failed.kind, MessageEvent::Kind::kFailed);
  EXPECT_EQ(failed.client_id, id);
  EXPECT_EQ(failed.status.code(), StatusCode::kUnavailable) << failed.status;
  EXPECT_EQ(rpcs_.size(), 0u);
}

TEST_F(ClientRpcsTest, Finish__RemovesAnUnsentRequestSilently) {
  Connection& conn = conns_.Add(peer_);
  const uint64_t id = Start(10);
  rpcs_.Finish(*rpcs_.Find(id), now_);
  EXPECT_EQ(conns_.Take(conn), "");
  EXPECT_TRUE(events_.empty());
  EXPECT_EQ(stats_.aborts_sent, 0u);
}

TEST_F(ClientRpcsTest, Finish__AbortsAHalfWrittenRequest) {
  Connection& conn = conns_.Add(peer_);
  const uint64_t id = Start(3000);
  EXPECT_EQ(conns_.Take(conn, 0, 1100),
            "REQUEST id=100 1000@0/3000; REQUEST id=100 1000@1000/3000");
  rpcs_.Finish(*rpcs_.Find(id), now_);
  // The half-written chunk is finished (the stream stays framed), then ABORT.
  EXPECT_EQ(conns_.Take(conn), "ABORT id=100");
  EXPECT_EQ(stats_.aborts_sent, 1u);
  EXPECT_TRUE(peer_.outstanding.empty());
}

TEST_F(ClientRpcsTest, Finish__SchedulesAnAckWhenTheFloorRises) {
  conns_.Add(peer_);
  const uint64_t first = Start(10);
  Start(10);
  peer_.floor_sent = first;
  timers_dirty_ = false;
  rpcs_.Finish(*rpcs_.Find(first), now_);
  EXPECT_EQ(rpcs_.Floor(peer_), first + 1);
  EXPECT_EQ(peer_.ack_due_ns, now_ + config_.ack_delay_ns);
  EXPECT_TRUE(timers_dirty_);
}

TEST_F(ClientRpcsTest, Floor__IsTheOldestOutstandingIdOrTheNextOne) {
  EXPECT_EQ(rpcs_.Floor(peer_), kFirstId);
  const uint64_t a = Start(1);
  const uint64_t b = Start(1);
  EXPECT_EQ(rpcs_.Floor(peer_), a);
  rpcs_.Finish(*rpcs_.Find(a), now_);
  EXPECT_EQ(rpcs_.Floor(peer_), b);
  rpcs_.Finish(*rpcs_.Find(b), now_);
  EXPECT_EQ(rpcs_.Floor(peer_), b + 1);
}

TEST_F(ClientRpcsTest, OnFloorCarried__CancelsTheDelayedAck) {
  conns_.Add(peer_);
  const uint64_t id = Start(1);
  rpcs_.Finish(*rpcs_.Find(id), now_);
  ASSERT_NE(peer_.ack_due_ns, kNever);
  rpcs_.OnFloorCarried(peer_, id + 1);
  EXPECT_EQ(peer_.floor_sent, id + 1);
  EXPECT_EQ(peer_.ack_due_ns, kNever);
}

TEST_F(ClientRpcsTest, FailWaiting__OnlyOnTheKernelsWordAndOnlyRpcsWithoutAConnection) {
  const uint64_t id = Start(10);
  const Status why = UnavailableError("connect: refused");
  rpcs_.FailWaiting(peer_, ETIMEDOUT, why, now_);     // silence says nothing
  rpcs_.FailWaiting(peer_, ECONNREFUSED, why, now_);  // never reached: may be starting
  EXPECT_TRUE(events_.empty());
  peer_.instance = 5;  // a process answered once
  rpcs_.FailWaiting(peer_, ECONNREFUSED, why, now_);
  const MessageEvent failed = PopEvent();
  EXPECT_EQ(failed.client_id, id);
  EXPECT_EQ(failed.status.code(), StatusCode::kUnavailable);
  EXPECT_NE(failed.status.message().find("is gone"), std::string::npos) << failed.status;
  EXPECT_EQ(stats_.peer_gone_failures, 1u);
}

TEST_F(ClientRpcsTest, OnResponseStart__AcceptsAPendingRpcAndDiscardsALateOne) {
  conns_.Add(peer_);
  const uint64_t id = Start(10);
  wire::StreamFrameHeader first{
      .type = StreamFrameType::kResponse, .chunk_length = 5, .rpc_id = id, .message_length = 5};
  EXPECT_EQ(*rpcs_.OnResponseStart(peer_, first, now_), FrameParser::Decision::kAccept);
  first.rpc_id = id + 50;
  EXPECT_EQ(*rpcs_.OnResponseStart(peer_, first, now_), FrameParser::Decision::kDiscard);
  EXPECT_EQ(stats_.late_responses, 1u);
  Peer other;
  other.identity = testing::Loopback4(4001);
  first.rpc_id = id;
  EXPECT_EQ(*rpcs_.OnResponseStart(other, first, now_), FrameParser::Decision::kDiscard)
      << "only the server it was sent to answers it";
}

TEST_F(ClientRpcsTest, OnResponseStart__ALostResponseFailsWithDataLoss) {
  const uint64_t id = Start(10);
  const wire::StreamFrameHeader first{
      .type = StreamFrameType::kResponse, .flags = wire::kStreamFlagLost, .rpc_id = id};
  EXPECT_EQ(*rpcs_.OnResponseStart(peer_, first, now_), FrameParser::Decision::kDiscard);
  EXPECT_EQ(PopEvent().status.code(), StatusCode::kDataLoss);
  EXPECT_EQ(stats_.responses_lost, 1u);
}

TEST_F(ClientRpcsTest, OnResponseStart__AnOversizeResponseFailsItsRpcAndTheConnection) {
  config_.max_message_bytes = 100;
  const uint64_t id = Start(10);
  const wire::StreamFrameHeader first{
      .type = StreamFrameType::kResponse, .chunk_length = 100, .rpc_id = id, .message_length = 101};
  Result<FrameParser::Decision> decision = rpcs_.OnResponseStart(peer_, first, now_);
  EXPECT_EQ(decision.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(PopEvent().status.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(rpcs_.size(), 0u);
}

TEST_F(ClientRpcsTest, OnResponse__DeliversWithTheCookieAndEndsTheRpc) {
  conns_.Add(peer_);
  const uint64_t id = Start(10, /*cookie=*/42);
  rpcs_.OnResponse(peer_, id, Buffer::Copy("answer"), now_);
  const MessageEvent response = PopEvent();
  EXPECT_EQ(response.kind, MessageEvent::Kind::kResponse);
  EXPECT_EQ(response.client_id, id);
  EXPECT_EQ(response.cookie, 42u);
  EXPECT_EQ(response.message.size(), 6u);
  EXPECT_EQ(rpcs_.size(), 0u);
  EXPECT_EQ(stats_.responses_delivered, 1u);
  rpcs_.OnResponse(peer_, id, Buffer::Copy("copy"), now_);
  EXPECT_TRUE(events_.empty());
  EXPECT_EQ(stats_.late_responses, 1u);
}

TEST_F(ClientRpcsTest, OnResponseRefused__FailsTheRpcWithTheReason) {
  const uint64_t id = Start(10);
  rpcs_.OnResponseRefused(peer_, id, ResourceExhaustedError("too much"), now_);
  const MessageEvent failed = PopEvent();
  EXPECT_EQ(failed.kind, MessageEvent::Kind::kFailed);
  EXPECT_EQ(failed.status.message(), "too much");
}

TEST_F(ClientRpcsTest, OnRequestWritten__RecordsTheServerInstanceItReached) {
  Connection& conn = conns_.Add(peer_, Connection::State::kOpen, /*remote_instance=*/9);
  const uint64_t id = Start(10);
  std::vector<SendQueue::Finished> finished;
  conns_.Take(conn, 0, SIZE_MAX, &finished);
  ASSERT_EQ(finished.size(), 1u);
  rpcs_.OnRequestWritten(conn, finished[0]);
  EXPECT_EQ(rpcs_.Find(id)->handle, 0u);
  EXPECT_EQ(rpcs_.Find(id)->server_instance, 9u);
}

TEST_F(ClientRpcsTest, OnConnectionClosed__PutsItsRequestsBackAheadOfNewerOnes) {
  Connection& conn = conns_.Add(peer_);
  const uint64_t a = Start(10);
  const uint64_t b = Start(10);
  conn.CloseSocket();
  peer_.RemoveConnection(&conn);
  const uint64_t c = Start(10);  // waits: no connection
  rpcs_.OnConnectionClosed(conn, peer_);
  EXPECT_EQ(peer_.waiting, (std::deque<uint64_t>{a, b, c}));
  EXPECT_EQ(rpcs_.Find(a)->conn, nullptr);
  EXPECT_EQ(rpcs_.Find(a)->server_instance, 0u) << "none of it was written";
  Connection& next = conns_.Add(peer_);
  rpcs_.AssignWaiting(peer_, now_);
  EXPECT_EQ(conns_.Take(next),
            "REQUEST id=100 10@0/10; REQUEST id=101 10@0/10; REQUEST id=102 10@0/10");
  EXPECT_EQ(stats_.requests_resent, 2u);
}

TEST_F(ClientRpcsTest, ExpireSilent__FailsRpcsOnlyAfterThePeerTimeout) {
  conns_.Add(peer_);
  const uint64_t id = Start(10);
  TimeNs next = kNever;
  now_ = kStart + config_.peer_timeout_ns - 1;
  EXPECT_EQ(rpcs_.ExpireSilent(peer_, now_, &next), 0);
  EXPECT_EQ(next, kStart + config_.peer_timeout_ns);
  now_ = next;
  EXPECT_EQ(rpcs_.ExpireSilent(peer_, now_, &next), 1);
  const MessageEvent failed = PopEvent();
  EXPECT_EQ(failed.client_id, id);
  EXPECT_NE(failed.status.message().find("presumed dead"), std::string::npos) << failed.status;
  EXPECT_EQ(stats_.client_timeouts, 1u);
}

TEST_F(ClientRpcsTest, ExpireSilent__HearingThePeerKeepsItsRpcsAlive) {
  Start(10);
  peer_.last_heard_ns = kStart + config_.peer_timeout_ns / 2;
  TimeNs next = kNever;
  now_ = kStart + config_.peer_timeout_ns;
  EXPECT_EQ(rpcs_.ExpireSilent(peer_, now_, &next), 0);
  EXPECT_EQ(next, peer_.last_heard_ns + config_.peer_timeout_ns);
}

TEST_F(ClientRpcsTest, SendPings__PingsAQuietPeerOnEveryLiveConnection) {
  Connection& a = conns_.Add(peer_);
  Connection& b = conns_.Add(peer_, Connection::State::kHandshake);
  Connection& dialling = conns_.Add(peer_, Connection::State::kConnecting);
  Start(10);
  conns_.Take(a);
  TimeNs next = kNever;
  EXPECT_EQ(rpcs_.SendPings(peer_, now_, &next), 0);
  EXPECT_EQ(next, kStart + config_.ping_interval_ns);
  now_ = next;
  next = kNever;
  EXPECT_EQ(rpcs_.SendPings(peer_, now_, &next), 1);
  EXPECT_EQ(conns_.Take(a), "PING nonce=1");
  EXPECT_EQ(conns_.Take(b), "PING nonce=2");
  EXPECT_EQ(conns_.Take(dialling), "");
  EXPECT_EQ(peer_.last_ping_ns, now_);
  EXPECT_EQ(next, now_ + config_.ping_interval_ns);
  EXPECT_EQ(stats_.pings_sent, 2u);
}

TEST_F(ClientRpcsTest, SendDelayedAck__CarriesTheFloorWhenNoRequestDid) {
  Connection& conn = conns_.Add(peer_);
  const uint64_t id = Start(10);
  conns_.Take(conn);
  rpcs_.OnResponse(peer_, id, Buffer(), now_);
  TimeNs next = kNever;
  EXPECT_EQ(rpcs_.SendDelayedAck(peer_, now_, &next), 0);
  EXPECT_EQ(next, now_ + config_.ack_delay_ns);
  now_ = next;
  EXPECT_EQ(rpcs_.SendDelayedAck(peer_, now_, &next), 1);
  EXPECT_EQ(conns_.Take(conn), "ACK floor=101");
  EXPECT_EQ(peer_.floor_sent, id + 1);
  EXPECT_EQ(peer_.ack_due_ns, kNever);
  EXPECT_EQ(stats_.acks_sent, 1u);
}

}  // namespace
}  // namespace wharf::stream
