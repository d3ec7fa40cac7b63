// Unit tests of DeadlineHeap: order, lazy removal of finished operations,
// the bound on stale entries, and expiry that re-enters the heap.
#include "engine/deadline_heap.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

namespace wharf::engine {
namespace {

// The owner's side: op id -> deadline, as the engine's ops_ would say.
struct Ops {
  std::map<uint64_t, TimeNs> live;
  bool IsLive(const DeadlineHeap::Entry& e) const {
    auto it = live.find(e.op_id);
    return it != live.end() && it->second == e.deadline_ns;
  }
  auto Pred() const {
    return [this](const DeadlineHeap::Entry& e) { return IsLive(e); };
  }
};

TEST(DeadlineHeapTest, ExpiresDueEntriesEarliestFirstAndKeepsTheRest) {
  DeadlineHeap heap;
  Ops ops;
  const std::vector<std::pair<uint64_t, TimeNs>> deadlines{{1, 30}, {2, 10}, {3, 20}, {4, 50}};
  for (auto [id, at] : deadlines) {
    ops.live[id] = at;
    heap.Push(at, id);
  }
  EXPECT_EQ(heap.Earliest(), 10);
  std::vector<uint64_t> expired;
  heap.Expire(30, ops.Pred(), [&](uint64_t id) {
    expired.push_back(id);
    ops.live.erase(id);
  });
  EXPECT_EQ(expired, (std::vector<uint64_t>{2, 3, 1}));
  EXPECT_EQ(heap.Earliest(), 50);
  EXPECT_EQ(heap.size(), 1u);
}

TEST(DeadlineHeapTest, NeverIsNotRecorded) {
  DeadlineHeap heap;
  heap.Push(kNever, 7);
  EXPECT_EQ(heap.size(), 0u);
  EXPECT_EQ(heap.Earliest(), kNever);
}

TEST(DeadlineHeapTest, AFinishedOperationNeverExpiresAndLeavesTheTop) {
  DeadlineHeap heap;
  Ops ops;
  ops.live = {{1, 10}, {2, 20}};
  heap.Push(10, 1);
  heap.Push(20, 2);
  ops.live.erase(1);  // finished early
  heap.Finished(10, ops.live.size(), ops.Pred());
  EXPECT_EQ(heap.Earliest(), 20) << "the stale top left";
  std::vector<uint64_t> expired;
  heap.Expire(100, ops.Pred(), [&](uint64_t id) { expired.push_back(id); });
  EXPECT_EQ(expired, std::vector<uint64_t>{2});
}

TEST(DeadlineHeapTest, FinishedLooksAtTheTopOnlyForTheEarliestDeadline) {
  DeadlineHeap heap;
  Ops ops;
  ops.live = {{1, 10}, {2, 20}, {3, 30}};
  for (const auto& [id, at] : ops.live) heap.Push(at, id);
  int looks = 0;
  auto counting = [&](const DeadlineHeap::Entry& e) {
    ++looks;
    return ops.IsLive(e);
  };
  ops.live.erase(2);  // not the earliest: the top is not looked at
  heap.Finished(20, ops.live.size(), counting);
  EXPECT_EQ(looks, 0);
  EXPECT_EQ(heap.Earliest(), 10);
  ops.live.erase(1);  // the earliest: it and the stale 2 below it leave
  heap.Finished(10, ops.live.size(), counting);
  EXPECT_EQ(heap.Earliest(), 30);
  EXPECT_EQ(heap.size(), 1u);
  EXPECT_EQ(looks, 3);
}

TEST(DeadlineHeapTest, AReDatedOperationExpiresOnlyAtItsNewDeadline) {
  DeadlineHeap heap;
  Ops ops;
  ops.live[5] = 10;
  heap.Push(10, 5);
  ops.live[5] = 40;  // the same id, a new deadline (an id reused)
  heap.Push(40, 5);
  std::vector<TimeNs> fired;
  heap.Expire(30, ops.Pred(), [&](uint64_t) { fired.push_back(30); });
  EXPECT_TRUE(fired.empty()) << "the old entry is stale";
  heap.Expire(40, ops.Pred(), [&](uint64_t) { fired.push_back(40); });
  EXPECT_EQ(fired, std::vector<TimeNs>{40});
}

TEST(DeadlineHeapTest, StaleEntriesStayBoundedWhenOperationsFinishOutOfOrder) {
  // Newest-first finishes never bring a stale entry to the top: only the
  // compaction bounds them.
  DeadlineHeap heap;
  Ops ops;
  ops.live[0] = 1'000'000;  // one long operation holds the top throughout
  heap.Push(1'000'000, 0);
  for (uint64_t id = 1; id <= 100'000; ++id) {
    const TimeNs at = 2'000'000 + static_cast<TimeNs>(id);
    ops.live[id] = at;
    heap.Push(at, id);
    ops.live.erase(id);
    heap.Finished(at, ops.live.size(), ops.Pred());
    ASSERT_LE(heap.size(), 2 * ops.live.size() + DeadlineHeap::kSlack + 1) << "after " << id;
  }
  EXPECT_EQ(heap.Earliest(), 1'000'000);
  std::vector<uint64_t> expired;
  heap.Expire(kNever - 1, ops.Pred(), [&](uint64_t id) { expired.push_back(id); });
  EXPECT_EQ(expired, std::vector<uint64_t>{0});
  EXPECT_EQ(heap.size(), 0u);
}

TEST(DeadlineHeapTest, ExpiryMayPushAndTrimMeanwhile) {
  DeadlineHeap heap;
  Ops ops;
  ops.live = {{1, 10}, {2, 10}, {3, 60}};
  heap.Push(10, 1);
  heap.Push(10, 2);
  heap.Push(60, 3);
  std::vector<uint64_t> expired;
  heap.Expire(50, ops.Pred(), [&](uint64_t id) {
    expired.push_back(id);
    const TimeNs at = ops.live.at(id);
    ops.live.erase(id);
    if (id == 1) {  // an expiry that starts an operation (a cancel notice)
      ops.live[9] = 20;
      heap.Push(20, 9);
    }
    heap.Finished(at, ops.live.size(), ops.Pred());
  });
  EXPECT_EQ(expired, (std::vector<uint64_t>{1, 2, 9}));
  EXPECT_EQ(heap.Earliest(), 60);
}

}  // namespace
}  // namespace wharf::engine
