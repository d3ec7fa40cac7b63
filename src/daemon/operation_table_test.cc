// daemon/operation_table_test.cc: the books of operations in flight and
// connections held, as the engine completes them.
#include "daemon/operation_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace wharf::daemon {
namespace {

using Ended = OperationTable::Ended;

TEST(OperationTable, Finish__ALiveOperationEndsOnce) {
  OperationTable ops;
  ops.Start(7);
  EXPECT_TRUE(ops.live(7));
  EXPECT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops.Finish(7, true, 0), Ended::kOperation);
  EXPECT_FALSE(ops.live(7));
  EXPECT_EQ(ops.Finish(7, true, 0), Ended::kUnknown);
  EXPECT_EQ(ops.Finish(8, true, 0), Ended::kUnknown);  // never started
  EXPECT_EQ(ops.connections(), 0u);
}

TEST(OperationTable, Finish__AConnectThatSucceedsAddsItsConnection) {
  OperationTable ops;
  ops.Start(1);
  ops.StartOpening(1, /*accept=*/false);
  ops.Start(2);
  ops.StartOpening(2, /*accept=*/false);
  EXPECT_EQ(ops.opening(), 2u);
  EXPECT_EQ(ops.Finish(1, true, 100), Ended::kOperation);
  EXPECT_EQ(ops.Finish(2, false, 101), Ended::kOperation);
  EXPECT_TRUE(ops.owns(100));
  EXPECT_FALSE(ops.owns(101));
  EXPECT_EQ(ops.connections(), 1u);
  EXPECT_EQ(ops.opening(), 0u);
}

TEST(OperationTable, Finish__AnAcceptThatSucceedsSaysSo) {
  OperationTable ops;
  ops.Start(1);
  ops.StartOpening(1, /*accept=*/true);
  ops.Start(2);
  ops.StartOpening(2, /*accept=*/true);
  EXPECT_EQ(ops.Finish(1, true, 5), Ended::kAccepted);
  EXPECT_EQ(ops.Finish(2, false, 6), Ended::kOperation);  // timed out: no peer to name
  EXPECT_TRUE(ops.owns(5));
  EXPECT_FALSE(ops.owns(6));
}

TEST(OperationTable, Forget__ARefusedOperationIsNoLongerLive) {
  OperationTable ops;
  ops.Start(3);
  ops.Forget(3);
  ops.Forget(4);  // never started: nothing
  EXPECT_EQ(ops.size(), 0u);
  EXPECT_EQ(ops.Finish(3, true, 0), Ended::kUnknown);
}

TEST(OperationTable, Release__OnlyAConnectionHeld) {
  OperationTable ops;
  ops.Start(1);
  ops.StartOpening(1, false);
  ASSERT_EQ(ops.Finish(1, true, 9), Ended::kOperation);
  EXPECT_FALSE(ops.Release(10));
  EXPECT_TRUE(ops.Release(9));
  EXPECT_FALSE(ops.Release(9));
  EXPECT_EQ(ops.connections(), 0u);
}

TEST(OperationTable, Operations__ListsWhatIsLiveUntilCleared) {
  OperationTable ops;
  for (uint64_t op : {5, 3, 9}) ops.Start(op);
  ops.Start(1);
  ops.StartOpening(1, false);
  ASSERT_EQ(ops.Finish(1, true, 40), Ended::kOperation);
  std::vector<uint64_t> live = ops.Operations();
  std::sort(live.begin(), live.end());
  EXPECT_EQ(live, (std::vector<uint64_t>{3, 5, 9}));
  EXPECT_EQ(ops.Connections(), std::vector<uint64_t>{40});
  ops.ClearOperations();
  ops.ClearConnections();
  EXPECT_EQ(ops.size(), 0u);
  EXPECT_EQ(ops.connections(), 0u);
}

}  // namespace
}  // namespace wharf::daemon
