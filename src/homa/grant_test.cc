#include "homa/grant.h"

#include <gtest/gtest.h>

#include "homa/rpc.h"

namespace wharf::homa {
namespace {

std::vector<uint64_t> Ids(const std::vector<GrantScheduler::Ranked>& ranked) {
  std::vector<uint64_t> ids;
  for (const auto& r : ranked) ids.push_back(r.id);
  return ids;
}

TEST(GrantSchedulerTest, ShortestRemainingFirst) {
  GrantScheduler g(8, 3);
  g.Upsert(1, /*peer=*/10, 500'000, 0);
  g.Upsert(2, 11, 100'000, 1);
  g.Upsert(3, 12, 300'000, 2);
  EXPECT_EQ(Ids(g.ActiveSet()), (std::vector<uint64_t>{2, 3, 1}));
}

TEST(GrantSchedulerTest, PrioritiesDescendFromMaxAndFloorAtZero) {
  GrantScheduler g(8, 2);
  for (uint64_t i = 0; i < 5; ++i) g.Upsert(i, 100 + i, 1000 * (i + 1), 0);
  auto set = g.ActiveSet();
  ASSERT_EQ(set.size(), 5u);
  EXPECT_EQ(set[0].priority, 2);
  EXPECT_EQ(set[1].priority, 1);
  EXPECT_EQ(set[2].priority, 0);
  EXPECT_EQ(set[4].priority, 0);
}

TEST(GrantSchedulerTest, AtMostOnePerPeer) {
  GrantScheduler g(8, 3);
  g.Upsert(1, 10, 1000, 0);
  g.Upsert(2, 10, 2000, 1);  // same peer, longer: not active
  g.Upsert(3, 11, 5000, 2);
  EXPECT_EQ(Ids(g.ActiveSet()), (std::vector<uint64_t>{1, 3}));
  g.Remove(1);
  EXPECT_EQ(Ids(g.ActiveSet()), (std::vector<uint64_t>{2, 3}));
}

TEST(GrantSchedulerTest, OvercommitLimitsActiveSet) {
  GrantScheduler g(2, 3);
  for (uint64_t i = 0; i < 6; ++i) g.Upsert(i, i, 1000 + i, 0);
  EXPECT_EQ(Ids(g.ActiveSet()), (std::vector<uint64_t>{0, 1}));
}

TEST(GrantSchedulerTest, ReRankingMovesMessage) {
  GrantScheduler g(8, 3);
  g.Upsert(1, 10, 1000, 0);
  g.Upsert(2, 11, 2000, 0);
  g.Upsert(2, 11, 500, 0);
  EXPECT_EQ(Ids(g.ActiveSet()), (std::vector<uint64_t>{2, 1}));
  EXPECT_EQ(g.size(), 2u);
}

TEST(GrantSchedulerTest, OldestIsByBirthNotSize) {
  GrantScheduler g(8, 3);
  g.Upsert(1, 10, 10, 50);
  g.Upsert(2, 11, 9'000'000, 5);
  EXPECT_EQ(g.Oldest(), 2u);
  g.Remove(2);
  EXPECT_EQ(g.Oldest(), 1u);
  g.Remove(1);
  EXPECT_FALSE(g.Oldest());
  EXPECT_TRUE(g.ActiveSet().empty());
}

TEST(GrantSchedulerTest, ManyMessagesFromOnePeerCostOneSlot) {
  GrantScheduler g(8, 3);
  for (uint64_t i = 0; i < 10000; ++i) g.Upsert(i, 1, 100'000 + i, 0);
  g.Upsert(20000, 2, 999'999, 0);
  EXPECT_EQ(Ids(g.ActiveSet()), (std::vector<uint64_t>{0, 20000}));
}

TEST(GrantSchedulerTest, CarriesTheRpcOfEachMessage) {
  GrantScheduler g(8, 3);
  Rpc a;
  Rpc b;
  EXPECT_EQ(g.OldestRpc(), nullptr);
  g.Upsert(1, 10, 5000, /*birth_ns=*/2, &a);
  g.Upsert(2, 11, 1000, /*birth_ns=*/1, &b);
  std::vector<GrantScheduler::Ranked> active;
  g.ActiveSet(&active);
  ASSERT_EQ(active.size(), 2u);
  EXPECT_EQ(active[0].rpc, &b);
  EXPECT_EQ(active[1].rpc, &a);
  EXPECT_EQ(g.OldestRpc(), &b);
  g.Upsert(2, 11, 900, 1, &b);  // re-ranked, same rpc
  g.Remove(2);
  EXPECT_EQ(g.OldestRpc(), &a);
}

}  // namespace
}  // namespace wharf::homa
