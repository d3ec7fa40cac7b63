// Tests of WriteBatcher: the dirty list holds each open connection once, in
// the order marked; batches nest and hold messages until the outermost end,
// except for the head of a long batch.
#include "stream/write_batcher.h"

#include <gtest/gtest.h>

#include <vector>

#include "stream/testing/fake_connections.h"
#include "stream/testing/tcp_harness.h"

namespace wharf::stream {
namespace {

using Verdict = WriteBatcher::Verdict;

class WriteBatcherTest : public ::testing::Test {
 protected:
  WriteBatcherTest() : conns_(config_) { peer_.identity = testing::Loopback4(4000); }

  TcpConfig config_;
  Peer peer_;
  testing::FakeConnections conns_;
  WriteBatcher writes_;
};

TEST_F(WriteBatcherTest, MarkDirty__ListsEachConnectionOnceInTheOrderMarked) {
  Connection& a = conns_.Add(peer_);
  Connection& b = conns_.Add(peer_);
  EXPECT_FALSE(writes_.has_dirty());
  writes_.MarkDirty(b);
  writes_.MarkDirty(a);
  writes_.MarkDirty(b);
  EXPECT_TRUE(a.dirty);
  EXPECT_TRUE(writes_.has_dirty());
  std::vector<uint64_t> taken;
  EXPECT_TRUE(writes_.TakeDirty(&taken));
  EXPECT_EQ(taken, (std::vector<uint64_t>{b.id(), a.id()}));
  EXPECT_FALSE(writes_.has_dirty());
}

TEST_F(WriteBatcherTest, MarkDirty__IgnoresAClosedConnection) {
  Connection& conn = conns_.Add(peer_);
  conn.CloseSocket();
  writes_.MarkDirty(conn);
  EXPECT_FALSE(conn.dirty);
  EXPECT_FALSE(writes_.has_dirty());
}

TEST_F(WriteBatcherTest, TakeDirty__AConnectionMarkedAgainAfterItsWriteIsListedAgain) {
  Connection& conn = conns_.Add(peer_);
  writes_.MarkDirty(conn);
  std::vector<uint64_t> taken;
  ASSERT_TRUE(writes_.TakeDirty(&taken));
  conn.dirty = false;  // written
  writes_.MarkDirty(conn);
  EXPECT_TRUE(writes_.TakeDirty(&taken));
  EXPECT_EQ(taken, std::vector<uint64_t>{conn.id()}) << "the old list is replaced, not extended";
  EXPECT_FALSE(writes_.TakeDirty(&taken));
  EXPECT_TRUE(taken.empty());
}

TEST_F(WriteBatcherTest, NoteQueued__WritesAtOnceWithoutABatch) {
  EXPECT_EQ(writes_.NoteQueued(), Verdict::kWriteNow);
  EXPECT_FALSE(writes_.batch_open());
}

TEST_F(WriteBatcherTest, NoteQueued__CutsOnceAtTheHeldLimitThenHoldsTheRest) {
  writes_.Begin();
  for (size_t i = 1; i < WriteBatcher::kMaxHeldMessages; ++i) {
    EXPECT_EQ(writes_.NoteQueued(), Verdict::kHold) << "message " << i;
  }
  EXPECT_EQ(writes_.NoteQueued(), Verdict::kCut);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(writes_.NoteQueued(), Verdict::kHold);
  EXPECT_TRUE(writes_.End());
  // A new batch starts the count afresh.
  writes_.Begin();
  for (size_t i = 1; i < WriteBatcher::kMaxHeldMessages; ++i) writes_.NoteQueued();
  EXPECT_EQ(writes_.NoteQueued(), Verdict::kCut);
}

TEST_F(WriteBatcherTest, End__OnlyTheOutermostEndsTheBatchAndAnUnmatchedOneIsIgnored) {
  EXPECT_FALSE(writes_.End());
  writes_.Begin();
  writes_.Begin();
  EXPECT_EQ(writes_.NoteQueued(), Verdict::kHold);
  EXPECT_FALSE(writes_.End());
  EXPECT_TRUE(writes_.batch_open());
  EXPECT_EQ(writes_.NoteQueued(), Verdict::kHold);
  EXPECT_TRUE(writes_.End());
  EXPECT_FALSE(writes_.batch_open());
  EXPECT_FALSE(writes_.End());
  EXPECT_EQ(writes_.NoteQueued(), Verdict::kWriteNow);
}

}  // namespace
}  // namespace wharf::stream
