#include "base/node_recycler.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace wharf {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kKeepsNodes = false;
#else
constexpr bool kKeepsNodes = true;
#endif

TEST(NodeRecyclerTest, MapEntriesAreTheSameAsWithPlainInsertAndErase) {
  std::map<int, std::string> map;
  NodeRecycler<std::map<int, std::string>> recycler;
  for (int round = 0; round < 3; ++round) {
    for (int k = 0; k < 10; ++k) {
      auto it = recycler.Insert(map, k, "v" + std::to_string(k + round));
      EXPECT_EQ(it->first, k);
    }
    ASSERT_EQ(map.size(), 10u);
    for (int k = 0; k < 10; ++k) EXPECT_EQ(map.at(k), "v" + std::to_string(k + round));
    while (!map.empty()) recycler.Erase(map, map.begin());
  }
  EXPECT_EQ(recycler.spares(), kKeepsNodes ? 10u : 0u);
}

TEST(NodeRecyclerTest, ANewEntryGetsItsOwnKeyAndValue) {
  std::unordered_map<uint64_t, std::string> map;
  NodeRecycler<std::unordered_map<uint64_t, std::string>> recycler;
  recycler.Insert(map, 7, "secret");
  recycler.Erase(map, map.find(7));
  auto it = recycler.Insert(map, 8, "public");
  EXPECT_EQ(it->first, 8u);
  EXPECT_EQ(it->second, "public");
  EXPECT_FALSE(map.contains(7));
  EXPECT_EQ(map.size(), 1u);
}

TEST(NodeRecyclerTest, SetKeysComeAndGoThroughKeptNodes) {
  std::unordered_set<uint64_t> set;
  NodeRecycler<std::unordered_set<uint64_t>> recycler;
  for (uint64_t k = 1; k <= 5; ++k) EXPECT_EQ(*recycler.InsertKey(set, k), k);
  for (uint64_t k = 1; k <= 5; ++k) recycler.EraseKey(set, set.find(k));
  EXPECT_TRUE(set.empty());
  EXPECT_EQ(recycler.spares(), kKeepsNodes ? 5u : 0u);
  EXPECT_EQ(*recycler.InsertKey(set, 42), 42u);
  EXPECT_EQ(*recycler.InsertKey(set, 42), 42u);  // already there: one entry
  EXPECT_EQ(set.size(), 1u);
  EXPECT_TRUE(set.contains(42));
  EXPECT_FALSE(set.contains(5));
}

TEST(NodeRecyclerTest, CustomScrubHandsTheValueElsewhere) {
  using Map = std::map<uint64_t, std::unique_ptr<std::string>>;
  Map map;
  NodeRecycler<Map> recycler;
  auto it = recycler.Insert(map, 1, std::make_unique<std::string>("first"));
  const std::string* object = it->second.get();
  std::vector<std::unique_ptr<std::string>> pool;
  // The scrub runs only when the node is kept (never under ASan).
  recycler.Erase(map, it, [&pool](std::unique_ptr<std::string>& s) { pool.push_back(std::move(s)); });
  if (kKeepsNodes) {
    ASSERT_EQ(pool.size(), 1u);
    EXPECT_EQ(pool[0].get(), object);  // the same object, now the pool's
  }
  EXPECT_TRUE(map.empty());
}

TEST(NodeRecyclerTest, MultimapKeepsDuplicateKeys) {
  std::multimap<int, int> map;
  NodeRecycler<std::multimap<int, int>> recycler;
  recycler.Insert(map, 5, 1);
  recycler.Insert(map, 5, 2);
  recycler.Erase(map, map.begin());
  recycler.Insert(map, 5, 3);
  recycler.Insert(map, 4, 4);
  ASSERT_EQ(map.size(), 3u);
  EXPECT_EQ(map.begin()->second, 4);
  EXPECT_EQ(map.count(5), 2u);
}

TEST(NodeRecyclerTest, KeepsAtMostItsLimit) {
  std::map<int, int> map;
  NodeRecycler<std::map<int, int>, 4> recycler;
  for (int k = 0; k < 10; ++k) recycler.Insert(map, k, k);
  while (!map.empty()) recycler.Erase(map, map.begin());
  EXPECT_EQ(recycler.spares(), kKeepsNodes ? 4u : 0u);
}

}  // namespace
}  // namespace wharf
