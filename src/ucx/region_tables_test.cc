// The remote-memory tables: ids, caps, expiry in order, a holder's or
// lender's regions taken together, and the holder's check (rights, bounds,
// expiry, unknown handles).
#include "ucx/region_tables.h"

#include <gtest/gtest.h>

#include <set>

#include "wire/ucx_region.h"

namespace wharf::ucx {
namespace {

using wire::kRegionAtomic;
using wire::kRegionRead;
using wire::kRegionWrite;

TEST(LentRegionsTest, IdsAreDistinctAndNotSequential) {
  LentRegions lent(100, 1);
  std::set<uint64_t> ids;
  uint64_t previous = 0;
  for (int i = 0; i < 50; ++i) {
    auto r = lent.Add({.holder = 1, .size = 8});
    ASSERT_TRUE(r.ok());
    EXPECT_NE(r->id, 0u);
    EXPECT_NE(r->id, previous + 1);
    // Below the asks' ids: an unasked grant would otherwise be taken for
    // an answer to an ask (and dropped), about every other loan.
    EXPECT_LT(r->id, uint64_t{1} << 63);
    previous = r->id;
    ids.insert(r->id);
  }
  EXPECT_EQ(ids.size(), 50u);
}

TEST(LentRegionsTest, CappedReleasedByTheirHolderOnlyAndExpiredInOrder) {
  LentRegions lent(3, 7);
  auto a = lent.Add({.holder = 1, .size = 8, .expires_ns = 300});
  auto b = lent.Add({.holder = 2, .size = 8, .expires_ns = 100});
  auto c = lent.Add({.holder = 1, .size = 8, .expires_ns = 200});
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(lent.Add({.holder = 3, .size = 8}).status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(lent.NextExpiry(), 100);
  EXPECT_FALSE(lent.Take(b->id, /*holder=*/1)) << "not 1's to release";
  EXPECT_TRUE(lent.Find(b->id));
  auto expired = lent.TakeExpired(200);
  ASSERT_EQ(expired.size(), 2u);
  EXPECT_EQ(expired[0].id, b->id);
  EXPECT_EQ(expired[1].id, c->id);
  EXPECT_EQ(lent.NextExpiry(), 300);
  auto held = lent.TakeHolder(1);
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].id, a->id);
  EXPECT_EQ(lent.size(), 0u);
  EXPECT_EQ(lent.NextExpiry(), kNever);
}

TEST(HeldRegionsTest, EveryOperationIsCheckedForRightsBoundsAndLifetime) {
  HeldRegions held(2);
  auto r = held.Add({.lender = 5, .remote_id = 77, .size = 4096, .access = kRegionRead,
                     .expires_ns = 1000});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(held.Check(r->handle, kRegionRead, 0, 4096, 0).ok());
  EXPECT_TRUE(held.Check(r->handle, kRegionRead, 4096, 0, 0).ok());
  EXPECT_EQ(held.Check(r->handle, kRegionWrite, 0, 8, 0).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_NE(held.Check(r->handle, kRegionAtomic, 0, 8, 0).status().message().find("without atomics"),
            std::string::npos);
  EXPECT_EQ(held.Check(r->handle, kRegionRead, 4090, 8, 0).status().code(),
            StatusCode::kOutOfRange);
  EXPECT_EQ(held.Check(r->handle, kRegionRead, ~0ull, 2, 0).status().code(),
            StatusCode::kOutOfRange) << "no wrap-around";
  EXPECT_EQ(held.Check(r->handle, kRegionRead, 0, 8, 1000).status().code(),
            StatusCode::kDeadlineExceeded);
  EXPECT_EQ(held.Check(999, kRegionRead, 0, 8, 0).status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(held.Add({.lender = 6, .remote_id = 1, .size = 8}).ok());
  EXPECT_EQ(held.Add({.lender = 6, .remote_id = 2, .size = 8}).status().code(),
            StatusCode::kResourceExhausted);
  EXPECT_FALSE(held.TakeRemote(6, 77)) << "77 is lender 5's";
  EXPECT_TRUE(held.TakeRemote(5, 77));
  EXPECT_EQ(held.TakeLender(6).size(), 1u);
  EXPECT_EQ(held.size(), 0u);
}

}  // namespace
}  // namespace wharf::ucx
