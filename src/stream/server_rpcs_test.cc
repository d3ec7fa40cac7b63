// Tests of ServerRpcs alone, on socketless connections: each request id is
// delivered once, duplicates are dropped or answered from the stored copy,
// responses wait for a connection and survive one closing, floors and the
// byte bound release them. The frames a test expects are the log of what
// the connection would write (FakeConnections::Take).
#include "stream/server_rpcs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <string>
#include <vector>

#include "stream/testing/fake_connections.h"
#include "stream/testing/tcp_harness.h"

namespace wharf::stream {
namespace {

using testing::FakeConnections;
using transport::MessageEvent;
using wire::StreamFrameType;

class ServerRpcsTest : public ::testing::Test {
 protected:
  ServerRpcsTest() : conns_(config_) {
    config_.chunk_bytes = 1000;
    client_.identity = testing::Loopback4(5000);
    client_.instance = 3;
  }

  static wire::StreamFrameHeader First(uint64_t id, uint32_t length) {
    return {.type = StreamFrameType::kRequest,
            .chunk_length = std::min<uint32_t>(length, 1000),
            .rpc_id = id,
            .message_length = length};
  }
  // Delivers request `id` whole, as the parser would: start, then message.
  void Deliver(Connection& conn, uint64_t id, size_t bytes = 10) {
    ASSERT_EQ(server_.OnRequestStart(client_, conn, First(id, static_cast<uint32_t>(bytes))),
              FrameParser::Decision::kAccept);
    server_.OnRequest(client_, id, testing::Pattern(bytes, 2));
  }
  transport::ServerRpcKey Key(uint64_t id) const {
    return {.client = client_.identity, .client_port = 0, .client_id = id};
  }
  std::vector<uint64_t> Delivered() {
    std::vector<uint64_t> ids;
    for (const MessageEvent& e : events_) ids.push_back(e.client_id);
    events_.clear();
    return ids;
  }

  TcpConfig config_;
  WriteBatcher writes_;
  std::deque<MessageEvent> events_;
  TcpStats stats_;
  ServerRpcs server_{config_, &writes_, &events_, &stats_};
  Peer client_;
  FakeConnections conns_;
};

TEST_F(ServerRpcsTest, OnRequestStart__ANewRequestIsAcceptedAndDeliveredOnce) {
  Connection& conn = conns_.Add(client_);
  Deliver(conn, 7);
  ASSERT_EQ(events_.size(), 1u);
  EXPECT_EQ(events_[0].kind, MessageEvent::Kind::kRequest);
  EXPECT_EQ(events_[0].server_key.client, client_.identity);
  EXPECT_EQ(events_[0].server_key.client_id, 7u);
  EXPECT_TRUE(events_[0].status.ok());
  EXPECT_EQ(stats_.requests_delivered, 1u);
  EXPECT_EQ(server_.table().num_rpcs(), 1u);
  EXPECT_TRUE(server_.HoldsRequestsOf(client_.identity));
}

TEST_F(ServerRpcsTest, OnRequestStart__ACopyOfARequestInProgressIsDiscarded) {
  Connection& conn = conns_.Add(client_);
  Deliver(conn, 7);
  EXPECT_EQ(server_.OnRequestStart(client_, conn, First(7, 10)), FrameParser::Decision::kDiscard);
  EXPECT_EQ(stats_.duplicate_requests, 1u);
  EXPECT_EQ(Delivered(), std::vector<uint64_t>{7});
  EXPECT_EQ(conns_.Take(conn), "");
}

TEST_F(ServerRpcsTest, OnRequestStart__AnAnsweredRequestGetsTheStoredResponseAgain) {
  Connection& first = conns_.Add(client_);
  Deliver(first, 7);
  ASSERT_TRUE(server_.Respond(Key(7), testing::Pattern(20, 3), &client_).ok());
  std::vector<SendQueue::Finished> finished;
  EXPECT_EQ(conns_.Take(first, 0, SIZE_MAX, &finished), "RESPONSE id=7 20@0/20");
  ASSERT_EQ(finished.size(), 1u);
  server_.OnResponseWritten(first, client_, finished[0]);
  // The client never got it (its connection died): it re-sends the request.
  Connection& second = conns_.Add(client_);
  EXPECT_EQ(server_.OnRequestStart(client_, second, First(7, 10)), FrameParser::Decision::kDiscard);
  EXPECT_EQ(conns_.Take(second), "RESPONSE id=7 20@0/20");
  EXPECT_EQ(stats_.responses_resent, 1u);
  EXPECT_EQ(Delivered(), std::vector<uint64_t>{7});
}

TEST_F(ServerRpcsTest, OnRequestStart__AnOversizeRequestIsDeliveredEmptyAsAnError) {
  config_.max_message_bytes = 100;
  Connection& conn = conns_.Add(client_);
  EXPECT_EQ(server_.OnRequestStart(client_, conn, First(7, 101)), FrameParser::Decision::kDiscard);
  ASSERT_EQ(events_.size(), 1u);
  EXPECT_EQ(events_[0].status.code(), StatusCode::kResourceExhausted) << events_[0].status;
  EXPECT_EQ(events_[0].message.size(), 0u);
  EXPECT_EQ(stats_.oversize_refused, 1u);
  EXPECT_EQ(stats_.requests_delivered, 0u);
  // Answered like any request.
  EXPECT_TRUE(server_.Respond(Key(7), Buffer(), &client_).ok());
  EXPECT_EQ(conns_.Take(conn), "RESPONSE id=7 0@0/0");
}

TEST_F(ServerRpcsTest, OnRequest__ACopyThatFinishedSecondIsDropped) {
  Connection& a = conns_.Add(client_);
  Connection& b = conns_.Add(client_);
  ASSERT_EQ(server_.OnRequestStart(client_, a, First(7, 10)), FrameParser::Decision::kAccept);
  ASSERT_EQ(server_.OnRequestStart(client_, b, First(7, 10)), FrameParser::Decision::kAccept);
  server_.OnRequest(client_, 7, testing::Pattern(10, 1));
  server_.OnRequest(client_, 7, testing::Pattern(10, 1));
  EXPECT_EQ(Delivered(), std::vector<uint64_t>{7});
  EXPECT_EQ(stats_.duplicate_requests, 1u);
}

TEST_F(ServerRpcsTest, OnRequestRefused__DeliversTheRefusalOnce) {
  server_.OnRequestRefused(client_, 7, ResourceExhaustedError("no room"));
  server_.OnRequestRefused(client_, 7, ResourceExhaustedError("no room"));
  ASSERT_EQ(events_.size(), 1u);
  EXPECT_EQ(events_[0].status.message(), "no room");
}

TEST_F(ServerRpcsTest, Respond__ChecksTheRpc) {
  Connection& conn = conns_.Add(client_);
  Deliver(conn, 7);
  EXPECT_EQ(server_.Respond(Key(8), Buffer(), &client_).code(), StatusCode::kNotFound);
  transport::ServerRpcKey other_port = Key(7);
  other_port.client_port = 1;
  EXPECT_EQ(server_.Respond(other_port, Buffer(), &client_).code(), StatusCode::kNotFound);
  config_.max_message_bytes = 4;
  EXPECT_EQ(server_.Respond(Key(7), testing::Pattern(5, 0), &client_).code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(server_.Respond(Key(7), testing::Pattern(4, 0), &client_).ok());
  EXPECT_EQ(server_.Respond(Key(7), Buffer(), &client_).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(stats_.responses_sent, 1u);
  EXPECT_FALSE(server_.HoldsRequestsOf(client_.identity));
}

TEST_F(ServerRpcsTest, Respond__WaitsWithoutAConnectionUntilOneOpens) {
  Connection& conn = conns_.Add(client_);
  Deliver(conn, 7);
  conn.CloseSocket();
  client_.RemoveConnection(&conn);
  ASSERT_TRUE(server_.Respond(Key(7), testing::Pattern(20, 3), &client_).ok());
  EXPECT_FALSE(writes_.has_dirty());
  Connection& next = conns_.Add(client_);
  server_.QueueUnwritten(client_, next);
  EXPECT_EQ(conns_.Take(next), "RESPONSE id=7 20@0/20");
  EXPECT_TRUE(writes_.has_dirty());
}

TEST_F(ServerRpcsTest, OnConnectionClosed__KeepsItsResponsesForTheNextConnection) {
  Connection& conn = conns_.Add(client_);
  Deliver(conn, 7);
  Deliver(conn, 8);
  ASSERT_TRUE(server_.Respond(Key(7), testing::Pattern(20, 3), &client_).ok());
  ASSERT_TRUE(server_.Respond(Key(8), testing::Pattern(30, 3), &client_).ok());
  server_.OnConnectionClosed(conn, client_);
  conn.CloseSocket();
  client_.RemoveConnection(&conn);
  Connection& next = conns_.Add(client_);
  server_.QueueUnwritten(client_, next);
  EXPECT_EQ(conns_.Take(next), "RESPONSE id=7 20@0/20; RESPONSE id=8 30@0/30");
}

TEST_F(ServerRpcsTest, AdvanceFloor__ReleasesAcknowledgedRpcsAndAbortsAHalfSentResponse) {
  Connection& conn = conns_.Add(client_);
  Deliver(conn, 7);
  Deliver(conn, 8);
  ASSERT_TRUE(server_.Respond(Key(7), testing::Pattern(3000, 3), &client_).ok());
  EXPECT_EQ(conns_.Take(conn, 0, 1100), "RESPONSE id=7 1000@0/3000; RESPONSE id=7 1000@1000/3000");
  server_.AdvanceFloor(client_, 8);
  EXPECT_EQ(conns_.Take(conn), "ABORT id=7 response");
  EXPECT_EQ(stats_.aborts_sent, 1u);
  EXPECT_EQ(server_.table().num_rpcs(), 1u);
  EXPECT_EQ(server_.table().stored_bytes(), 0u);
  // An id below the floor is a copy of an acknowledged request.
  EXPECT_EQ(server_.OnRequestStart(client_, conn, First(7, 10)), FrameParser::Decision::kDiscard);
}

TEST_F(ServerRpcsTest, EvictStoredResponses__DropsWrittenOnesOverTheBoundAndSaysSoOnAResend) {
  config_.max_stored_response_bytes = 50;
  ServerRpcs server(config_, &writes_, &events_, &stats_);
  Connection& conn = conns_.Add(client_);
  for (uint64_t id : {7, 8}) {
    ASSERT_EQ(server.OnRequestStart(client_, conn, First(id, 10)), FrameParser::Decision::kAccept);
    server.OnRequest(client_, id, testing::Pattern(10, 1));
    ASSERT_TRUE(server.Respond(Key(id), testing::Pattern(40, 3), &client_).ok());
  }
  std::vector<SendQueue::Finished> finished;
  EXPECT_EQ(conns_.Take(conn, 0, SIZE_MAX, &finished),
            "RESPONSE id=7 40@0/40; RESPONSE id=8 40@0/40");
  for (const SendQueue::Finished& f : finished) server.OnResponseWritten(conn, client_, f);
  server.EvictStoredResponses();
  EXPECT_EQ(stats_.responses_evicted, 1u);
  EXPECT_EQ(server.table().stored_bytes(), 40u);
  EXPECT_EQ(server.OnRequestStart(client_, conn, First(7, 10)), FrameParser::Decision::kDiscard);
  EXPECT_EQ(conns_.Take(conn), "RESPONSE id=7 0@0/0 lost");
}

TEST_F(ServerRpcsTest, Forget__DropsTheClientAndItsQueuedResponses) {
  Connection& conn = conns_.Add(client_);
  Deliver(conn, 7);
  ASSERT_TRUE(server_.Respond(Key(7), testing::Pattern(20, 3), &client_).ok());
  EXPECT_TRUE(server_.Forget(client_.identity));
  EXPECT_FALSE(server_.Forget(client_.identity));
  EXPECT_EQ(server_.table().num_clients(), 0u);
  EXPECT_EQ(conns_.Take(conn), "") << "an unstarted response leaves without a trace";
  EXPECT_EQ(server_.Respond(Key(7), Buffer(), &client_).code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace wharf::stream
