#include "homa/id_map.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>

namespace wharf::homa {
namespace {

TEST(IdMapTest, InsertFindErase) {
  IdMap<int> m;
  EXPECT_EQ(m.Find(7), nullptr);
  EXPECT_FALSE(m.Erase(7));
  m.Insert(7, 70);
  m.Insert(0, 1);  // any key, 0 included
  ASSERT_NE(m.Find(7), nullptr);
  EXPECT_EQ(*m.Find(7), 70);
  EXPECT_EQ(*m.Find(0), 1);
  EXPECT_EQ(m.size(), 2u);
  EXPECT_TRUE(m.Erase(7));
  EXPECT_FALSE(m.Contains(7));
  EXPECT_TRUE(m.Contains(0));
  EXPECT_EQ(m.size(), 1u);
}

TEST(IdMapTest, OwnsMoveOnlyValues) {
  IdMap<std::unique_ptr<int>> m;
  for (uint64_t i = 0; i < 100; ++i) m.Insert(i * 2, std::make_unique<int>(static_cast<int>(i)));
  for (uint64_t i = 0; i < 100; i += 3) EXPECT_TRUE(m.Erase(i * 2));
  for (uint64_t i = 0; i < 100; ++i) {
    std::unique_ptr<int>* v = m.Find(i * 2);
    if (i % 3 == 0) {
      EXPECT_EQ(v, nullptr);
    } else {
      ASSERT_NE(v, nullptr);
      EXPECT_EQ(**v, static_cast<int>(i));
    }
  }
}

// Random inserts and erases against std::map, with keys from a small range
// so that probe runs collide, wrap around the table end and shift back.
TEST(IdMapTest, MatchesStdMapUnderRandomChurn) {
  std::mt19937_64 rng(42);
  for (uint64_t range : {uint64_t{40}, uint64_t{5000}, ~uint64_t{0}}) {
    IdMap<uint64_t> m;
    std::map<uint64_t, uint64_t> ref;
    for (int step = 0; step < 20000; ++step) {
      const uint64_t key = range == ~uint64_t{0} ? rng() : rng() % range;
      if (rng() % 3 != 0 && !ref.contains(key)) {
        m.Insert(key, key ^ 0x55);
        ref[key] = key ^ 0x55;
      } else {
        EXPECT_EQ(m.Erase(key), ref.erase(key) == 1);
      }
      ASSERT_EQ(m.size(), ref.size());
    }
    for (const auto& [k, v] : ref) {
      const uint64_t* got = m.Find(k);
      ASSERT_NE(got, nullptr) << k;
      EXPECT_EQ(*got, v);
    }
    size_t visited = 0;
    m.ForEach([&](uint64_t k, uint64_t& v) {
      EXPECT_EQ(ref.at(k), v);
      ++visited;
    });
    EXPECT_EQ(visited, ref.size());
  }
}

}  // namespace
}  // namespace wharf::homa
