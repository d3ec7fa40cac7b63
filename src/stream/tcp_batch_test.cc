// Tests of TcpMessageTransport's send batching over loopback: between
// BeginBatch and the outermost EndBatch, requests and responses only queue
// their frames on the connection, and EndBatch (or a Poll) writes the
// connection once; without a batch every message is written at once.
// tcp.writes (writev calls that moved bytes) and tcp.batched_flushes tell.
#include <gtest/gtest.h>

#include <vector>

#include "base/sim_clock.h"
#include "stream/tcp_transport.h"
#include "stream/testing/tcp_harness.h"

namespace wharf::stream {
namespace {

using testing::Harness;
using testing::MatchesPattern;
using testing::Node;
using testing::Pattern;

constexpr int kBurst = 10;

uint64_t Call(Node& client, const Node& server, size_t size, uint8_t seed) {
  auto id = client.t->SendRequest(server.address(), Pattern(size, seed));
  EXPECT_TRUE(id.ok()) << id.status();
  return id.ok() ? *id : 0;
}

// A client whose one connection to the server is up (a first RPC answered),
// so later requests are written at once rather than when it connects.
// Virtual time, which moves only inside RunUntil: no timer (acks, pings)
// writes while a test counts writes.
struct Connected {
  Connected() : h(&clock), client(h.AddNode()), server(h.AddNode()) {
    const uint64_t first = Call(client, server, 10, 0);
    EXPECT_TRUE(h.RunUntil([&] { return client.Completed(first); }));
    EXPECT_EQ(client.t->num_connections(), 1u);
  }
  SimClock clock;
  Harness h;
  Node& client;
  Node& server;
};

TEST(TcpBatchTest, WithoutABatchEachRequestIsWrittenAtOnce) {
  Connected c;
  const uint64_t writes = c.client.t->stats().writes;
  for (int i = 0; i < kBurst; ++i) {
    Call(c.client, c.server, 100, static_cast<uint8_t>(i));
    EXPECT_EQ(c.client.t->stats().writes, writes + i + 1) << "request " << i;
  }
  EXPECT_EQ(c.client.t->stats().batched_flushes, 0u);
}

TEST(TcpBatchTest, RequestsOfABatchAreWrittenWithOneWritevAtEndBatch) {
  Connected c;
  const TcpStats& s = c.client.t->stats();
  const uint64_t writes = s.writes;
  const uint64_t bytes = s.bytes_sent;
  std::vector<uint64_t> ids;
  c.client.t->BeginBatch();
  for (int i = 0; i < kBurst; ++i) {
    ids.push_back(Call(c.client, c.server, 100, static_cast<uint8_t>(i + 1)));
    EXPECT_EQ(s.writes, writes) << "request " << i << " was written before EndBatch";
  }
  EXPECT_EQ(s.bytes_sent, bytes);
  c.client.t->EndBatch();
  EXPECT_EQ(s.writes, writes + 1);
  EXPECT_GT(s.bytes_sent, bytes + kBurst * 100);
  EXPECT_EQ(s.batched_flushes, 1u);
  ASSERT_TRUE(c.h.RunUntil([&] { return c.client.done.size() == kBurst + 1; }));
  for (int i = 0; i < kBurst; ++i) {
    EXPECT_TRUE(MatchesPattern(c.client.done.at(ids[i]).message, 100, static_cast<uint8_t>(i + 1)));
  }
  EXPECT_EQ(c.server.MaxHandled(), 1);
}

TEST(TcpBatchTest, TheHeadOfABatchIsWrittenAtOnceAndTheRestAtEndBatch) {
  Connected c;
  const TcpStats& s = c.client.t->stats();
  const uint64_t writes = s.writes;
  std::vector<uint64_t> ids;
  c.client.t->BeginBatch();
  for (int i = 0; i < 15; ++i) {
    ids.push_back(Call(c.client, c.server, 100, static_cast<uint8_t>(i)));
  }
  EXPECT_EQ(s.writes, writes);
  ids.push_back(Call(c.client, c.server, 100, 15));  // the 16th: the head leaves
  EXPECT_EQ(s.writes, writes + 1);
  EXPECT_EQ(s.batch_cuts, 1u);
  // Once per batch: the rest waits for EndBatch.
  for (int i = 16; i < 40; ++i) {
    ids.push_back(Call(c.client, c.server, 100, static_cast<uint8_t>(i)));
  }
  EXPECT_EQ(s.writes, writes + 1);
  c.client.t->EndBatch();
  EXPECT_EQ(s.writes, writes + 2);
  EXPECT_EQ(s.batch_cuts, 1u);
  ASSERT_TRUE(c.h.RunUntil([&] { return c.client.done.size() == ids.size() + 1; }));
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_TRUE(MatchesPattern(c.client.done.at(ids[i]).message, 100, static_cast<uint8_t>(i)));
  }
}

TEST(TcpBatchTest, NestedBatchesWriteOnlyAtTheOutermostEndBatch) {
  Connected c;
  const TcpStats& s = c.client.t->stats();
  const uint64_t writes = s.writes;
  c.client.t->BeginBatch();
  Call(c.client, c.server, 100, 1);
  c.client.t->BeginBatch();
  Call(c.client, c.server, 100, 2);
  c.client.t->EndBatch();
  EXPECT_EQ(s.writes, writes) << "the inner EndBatch wrote";
  Call(c.client, c.server, 100, 3);
  c.client.t->EndBatch();
  EXPECT_EQ(s.writes, writes + 1);
  EXPECT_EQ(s.batched_flushes, 1u);
  ASSERT_TRUE(c.h.RunUntil([&] { return c.client.done.size() == 4; }));
}

TEST(TcpBatchTest, AnUnmatchedEndBatchIsIgnored) {
  Connected c;
  const TcpStats& s = c.client.t->stats();
  c.client.t->EndBatch();
  c.client.t->EndBatch();
  const uint64_t writes = s.writes;
  // Not left below zero: a request is written at once, and a batch holds.
  Call(c.client, c.server, 100, 1);
  EXPECT_EQ(s.writes, writes + 1);
  c.client.t->BeginBatch();
  Call(c.client, c.server, 100, 2);
  EXPECT_EQ(s.writes, writes + 1);
  c.client.t->EndBatch();
  EXPECT_EQ(s.writes, writes + 2);
  EXPECT_EQ(s.batched_flushes, 1u);
}

TEST(TcpBatchTest, PollWritesWhatTheBatchQueued) {
  Connected c;
  const TcpStats& s = c.client.t->stats();
  const uint64_t writes = s.writes;
  c.client.t->BeginBatch();
  Call(c.client, c.server, 100, 1);
  Call(c.client, c.server, 100, 2);
  EXPECT_EQ(s.writes, writes);
  c.client.t->Poll();
  EXPECT_EQ(s.writes, writes + 1);
  // Still in the batch: the next request waits again.
  Call(c.client, c.server, 100, 3);
  EXPECT_EQ(s.writes, writes + 1);
  c.client.t->EndBatch();
  EXPECT_EQ(s.writes, writes + 2);
  // An EndBatch that finds nothing queued is no batched flush.
  c.client.t->BeginBatch();
  c.client.t->EndBatch();
  EXPECT_EQ(s.batched_flushes, 1u);
  ASSERT_TRUE(c.h.RunUntil([&] { return c.client.done.size() == 4; }));
}

TEST(TcpBatchTest, ResponsesOfABatchAreWrittenWithOneWritev) {
  Connected c;
  c.server.auto_respond = false;
  for (int i = 0; i < kBurst; ++i) Call(c.client, c.server, 100, static_cast<uint8_t>(i));
  ASSERT_TRUE(c.h.RunUntil([&] { return c.server.held.size() == kBurst; }));
  const TcpStats& s = c.server.t->stats();
  const uint64_t writes = s.writes;
  c.server.t->BeginBatch();
  for (auto& e : c.server.held) {
    ASSERT_TRUE(c.server.t->SendResponse(e.server_key, std::move(e.message)).ok());
    EXPECT_EQ(s.writes, writes);
  }
  c.server.t->EndBatch();
  EXPECT_EQ(s.writes, writes + 1);
  EXPECT_EQ(s.batched_flushes, 1u);
  ASSERT_TRUE(c.h.RunUntil([&] { return c.client.done.size() == kBurst + 1; }));
}

}  // namespace
}  // namespace wharf::stream
