// engine/pending_ops_test.cc: the books of pending operations alone:
// taking them out once, deadlines falling due, and the count of those
// awaiting an answer.
#include "engine/pending_ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace wharf::engine {
namespace {

TEST(PendingOps, Take__AnOperationLeavesOnce) {
  PendingOps ops;
  ops.Add(7, Op{.kind = OpKind::kCall, .rpc_id = 3});
  ASSERT_NE(ops.Find(7), nullptr);
  EXPECT_EQ(ops.Find(7)->rpc_id, 3u);
  std::optional<Op> taken = ops.Take(7);
  ASSERT_TRUE(taken.has_value());
  EXPECT_EQ(taken->kind, OpKind::kCall);
  EXPECT_FALSE(ops.Take(7).has_value());
  EXPECT_EQ(ops.Find(7), nullptr);
  EXPECT_TRUE(ops.empty());
}

TEST(PendingOps, Add__CountsWhatAwaitsAnAnswer) {
  PendingOps ops;
  ops.Add(1, Op{.kind = OpKind::kCall});
  ops.Add(2, Op{.kind = OpKind::kRecv});
  ops.Add(3, Op{.kind = OpKind::kAccept});
  ops.Add(4, Op{.kind = OpKind::kBarrier});
  ops.Add(5, Op{.kind = OpKind::kSend});
  EXPECT_EQ(ops.size(), 5u);
  EXPECT_EQ(ops.awaiting_answer(), 2u);
  (void)ops.Take(1);
  (void)ops.Take(2);
  EXPECT_EQ(ops.awaiting_answer(), 1u);
}

TEST(PendingOps, Expire__DueOperationsEarliestFirst) {
  PendingOps ops;
  ops.Add(1, Op{.kind = OpKind::kCall, .deadline_ns = 300});
  ops.Add(2, Op{.kind = OpKind::kCall, .deadline_ns = 100});
  ops.Add(3, Op{.kind = OpKind::kCall, .deadline_ns = 200});
  ops.Add(4, Op{.kind = OpKind::kRecv});  // no deadline
  (void)ops.Take(3);  // finished before its deadline
  EXPECT_EQ(ops.Earliest(), 100);
  std::vector<uint64_t> due;
  ops.Expire(250, [&](uint64_t id) {
    EXPECT_EQ(ops.Find(id)->deadline_ns, kNever);
    due.push_back(id);
    (void)ops.Take(id);
  });
  EXPECT_EQ(due, std::vector<uint64_t>{2});
  EXPECT_EQ(ops.Earliest(), 300);
  ops.Expire(1000, [&](uint64_t id) { due.push_back(id); });  // left pending
  EXPECT_EQ(due, (std::vector<uint64_t>{2, 1}));
  EXPECT_EQ(ops.Find(1)->deadline_ns, kNever);
  EXPECT_EQ(ops.Earliest(), kNever);
}

TEST(PendingOps, NewInternalId__NeverMeetsAHostId) {
  PendingOps ops;
  const uint64_t a = ops.NewInternalId();
  const uint64_t b = ops.NewInternalId();
  EXPECT_GE(a, uint64_t{1} << 63);
  EXPECT_EQ(b, a + 1);
}

TEST(PendingOps, Ids__EveryPendingOne) {
  PendingOps ops;
  ops.Add(9, Op{.kind = OpKind::kSend, .deadline_ns = 50});
  ops.Add(4, Op{.kind = OpKind::kSend});
  std::vector<uint64_t> ids = ops.Ids();
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<uint64_t>{4, 9}));
  ops.ClearDeadlinesIfEmpty();  // not empty: kept
  EXPECT_EQ(ops.Earliest(), 50);
  (void)ops.Take(9);
  (void)ops.Take(4);
  ops.ClearDeadlinesIfEmpty();
  EXPECT_EQ(ops.Earliest(), kNever);
}

}  // namespace
}  // namespace wharf::engine
