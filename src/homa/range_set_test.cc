#include "homa/range_set.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace wharf::homa {
namespace {

TEST(RangeSetTest, InOrderStaysOneRange) {
  RangeSet s;
  for (uint32_t off = 0; off < 14000; off += 1400) EXPECT_EQ(s.Add(off, off + 1400), 1400u);
  EXPECT_EQ(s.num_ranges(), 1u);
  EXPECT_TRUE(s.Complete(14000));
  EXPECT_EQ(s.ContiguousPrefix(), 14000u);
  EXPECT_FALSE(s.FirstGap(14000).has_value());
}

TEST(RangeSetTest, DuplicatesAddNothing) {
  RangeSet s;
  EXPECT_EQ(s.Add(0, 100), 100u);
  EXPECT_EQ(s.Add(0, 100), 0u);
  EXPECT_EQ(s.Add(50, 150), 50u);
  EXPECT_EQ(s.covered(), 150u);
}

TEST(RangeSetTest, GapsAreFoundAndFilled) {
  RangeSet s;
  s.Add(0, 100);
  s.Add(200, 300);
  s.Add(400, 500);
  auto gap = s.FirstGap(500);
  ASSERT_TRUE(gap);
  EXPECT_EQ(*gap, std::make_pair(100u, 200u));
  EXPECT_EQ(s.ContiguousPrefix(), 100u);
  s.Add(100, 400);
  EXPECT_EQ(s.num_ranges(), 1u);
  EXPECT_TRUE(s.Complete(500));
}

TEST(RangeSetTest, GapBeyondLastRangeUpToLimit) {
  RangeSet s;
  s.Add(0, 100);
  EXPECT_EQ(*s.FirstGap(250), std::make_pair(100u, 250u));
  EXPECT_FALSE(s.FirstGap(100));
  RangeSet empty;
  EXPECT_EQ(*empty.FirstGap(10), std::make_pair(0u, 10u));
  EXPECT_TRUE(empty.Complete(0));
  EXPECT_FALSE(empty.Complete(1));
}

TEST(RangeSetTest, RandomOrderMatchesBitmap) {
  for (unsigned seed = 1; seed <= 50; ++seed) {
    std::mt19937 rng(seed);
    const uint32_t kLen = 20000;
    std::vector<bool> bits(kLen, false);
    RangeSet s;
    for (int i = 0; i < 400; ++i) {
      uint32_t b = rng() % kLen;
      uint32_t e = std::min<uint32_t>(kLen, b + 1 + rng() % 300);
      uint32_t fresh = 0;
      for (uint32_t x = b; x < e; ++x) fresh += !bits[x], bits[x] = true;
      ASSERT_EQ(s.Add(b, e), fresh);
    }
    uint64_t total = 0;
    for (bool b : bits) total += b;
    EXPECT_EQ(s.covered(), total);
    auto gap = s.FirstGap(kLen);
    uint32_t first_missing = 0;
    while (first_missing < kLen && bits[first_missing]) ++first_missing;
    if (first_missing == kLen) {
      EXPECT_FALSE(gap);
    } else {
      ASSERT_TRUE(gap);
      EXPECT_EQ(gap->first, first_missing);
    }
    EXPECT_EQ(s.ContiguousPrefix(), first_missing);
  }
}

}  // namespace
}  // namespace wharf::homa
