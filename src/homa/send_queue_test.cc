#include "homa/send_queue.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <utility>
#include <vector>

namespace wharf::homa {
namespace {

std::vector<Rpc> MakeRpcs(size_t n) {
  std::vector<Rpc> rpcs(n);
  for (size_t i = 0; i < n; ++i) rpcs[i].handle = i + 1;
  return rpcs;
}

TEST(SendQueueTest, FewestRemainingFirstThenOldest) {
  std::vector<Rpc> r = MakeRpcs(4);
  SendQueue q;
  EXPECT_TRUE(q.empty());
  q.Set(r[0], 500);
  q.Set(r[1], 100);
  q.Set(r[2], 100);
  q.Set(r[3], 300);
  EXPECT_EQ(q.size(), 4u);
  EXPECT_EQ(&q.Top(), &r[1]);  // 100 bytes, older than r[2]
  q.Remove(r[1]);
  EXPECT_FALSE(SendQueue::Contains(r[1]));
  EXPECT_EQ(&q.Top(), &r[2]);
  q.Set(r[0], 50);  // re-ranked ahead
  EXPECT_EQ(&q.Top(), &r[0]);
  q.Set(r[0], 1000);  // and behind (a restart)
  EXPECT_EQ(&q.Top(), &r[2]);
  q.Remove(r[1]);  // not queued: nothing
  EXPECT_EQ(q.size(), 3u);
}

// Random operations against std::set<(key, handle)>, the structure it
// replaces: the head must always be the set's first element.
TEST(SendQueueTest, MatchesOrderedSetUnderRandomChurn) {
  std::mt19937 rng(7);
  std::vector<Rpc> r = MakeRpcs(200);
  SendQueue q;
  std::set<std::pair<uint32_t, uint64_t>> ref;
  for (int step = 0; step < 50000; ++step) {
    Rpc& rpc = r[rng() % r.size()];
    if (rng() % 4 == 0) {
      if (SendQueue::Contains(rpc)) ref.erase({rpc.send_key, rpc.handle});
      q.Remove(rpc);
    } else {
      const auto key = static_cast<uint32_t>(rng() % 50);
      if (SendQueue::Contains(rpc)) ref.erase({rpc.send_key, rpc.handle});
      q.Set(rpc, key);
      ref.emplace(key, rpc.handle);
    }
    ASSERT_EQ(q.size(), ref.size());
    if (!ref.empty()) {
      ASSERT_EQ(q.Top().handle, ref.begin()->second);
      ASSERT_EQ(q.Top().send_key, ref.begin()->first);
    }
  }
}

}  // namespace
}  // namespace wharf::homa
