// daemon/send_loans_test.cc: lending send-area ranges as Buffers and
// telling which operations' ranges came back, over a real region.
#include "daemon/send_loans.h"

#include <gtest/gtest.h>

#include <vector>

#include "daemon/testing/region_parts.h"

namespace wharf::daemon {
namespace {

using testing::RegionParts;

// The cookies of the kSendReleased entries DrainReleased emits, in order,
// one vector per entry.
std::vector<std::vector<uint64_t>> Drain(SendLoans& loans) {
  std::vector<std::vector<uint64_t>> entries;
  loans.DrainReleased([&](const shm::Descriptor& d) {
    EXPECT_EQ(d.opcode, static_cast<uint16_t>(shm::Opcode::kSendReleased));
    std::vector<uint64_t> cookies = {d.cookie};
    for (uint64_t a : d.aux) {
      if (a != 0) cookies.push_back(a);
    }
    entries.push_back(cookies);
  });
  return entries;
}

TEST(SendLoans, Lend__WrapsTheRangeInPlaceWithTheHeadroomBeforeIt) {
  RegionParts parts;
  parts.Write(1000, "request");
  Buffer lent = parts.loans->Lend(7, 1000, 7);
  EXPECT_EQ(parts.OffsetOf(lent), 1000u);
  EXPECT_EQ(lent.AsStringView(), "request");
  EXPECT_EQ(lent.headroom(), Buffer::kHeadroom);
  EXPECT_EQ(parts.loans->lent(), 1u);
  EXPECT_EQ(parts.loans->bytes_lent(), 7u);
  // At the start of the heap there is no room in front.
  Buffer first = parts.loans->Lend(8, 10, 4);
  EXPECT_EQ(first.headroom(), 10u);
  EXPECT_TRUE(parts.loans->Lend(9, 2000, 0).empty());
  EXPECT_EQ(parts.loans->lent(), 2u);
}

TEST(SendLoans, NoteReleased__TheOperationIsToldOnce) {
  RegionParts parts;
  Buffer lent = parts.loans->Lend(7, 1000, 100);
  EXPECT_FALSE(parts.loans->TakeReleased(7));
  lent = Buffer();  // the engine is done with it
  EXPECT_EQ(parts.loans->lent(), 0u);
  EXPECT_TRUE(parts.loans->has_released());
  EXPECT_TRUE(parts.loans->TakeReleased(7));
  EXPECT_FALSE(parts.loans->TakeReleased(7));
  EXPECT_FALSE(parts.loans->has_released());
}

TEST(SendLoans, NoteReleased__SameRangeLentTwiceTellsBoth) {
  RegionParts parts;
  Buffer first = parts.loans->Lend(7, 1000, 100);
  Buffer second = parts.loans->Lend(8, 1000, 100);
  EXPECT_EQ(parts.loans->lent(), 2u);
  first = Buffer();
  second = Buffer();
  EXPECT_EQ(parts.loans->lent(), 0u);
  // Each lending is told once (the Buffers are alike: the older lending
  // is told first).
  EXPECT_EQ(Drain(*parts.loans), (std::vector<std::vector<uint64_t>>{{7, 8}}));
}

TEST(SendLoans, TakeReleased__LooksNearTheFrontOnly) {
  RegionParts parts;
  for (uint64_t cookie = 1; cookie <= 10; ++cookie) {
    (void)parts.loans->Lend(cookie, 1000 + cookie * 100, 10);  // released at once
  }
  EXPECT_FALSE(parts.loans->TakeReleased(10));  // ninth from the front
  EXPECT_TRUE(parts.loans->TakeReleased(3));
  EXPECT_TRUE(parts.loans->TakeReleased(1));
  EXPECT_EQ(Drain(*parts.loans),
            (std::vector<std::vector<uint64_t>>{{2, 4, 5, 6}, {7, 8, 9, 10}}));
  EXPECT_FALSE(parts.loans->has_released());
}

TEST(SendLoans, DrainReleased__FourCookiesAnEntry) {
  RegionParts parts;
  for (uint64_t cookie = 1; cookie <= 6; ++cookie) {
    (void)parts.loans->Lend(cookie, 1000 + cookie * 100, 10);
  }
  EXPECT_EQ(Drain(*parts.loans), (std::vector<std::vector<uint64_t>>{{1, 2, 3, 4}, {5, 6}}));
  EXPECT_TRUE(Drain(*parts.loans).empty());
}

TEST(SendLoans, StopTelling__LaterReleasesAreNotTold) {
  RegionParts parts;
  Buffer lent = parts.loans->Lend(7, 1000, 100);
  parts.loans->StopTelling();
  lent = Buffer();
  EXPECT_EQ(parts.loans->lent(), 0u);
  EXPECT_FALSE(parts.loans->has_released());
}

TEST(SendLoans, Destructor__ABufferOutlivingTheLoansTellsNobody) {
  RegionParts parts;
  parts.Write(1000, "payload");
  Buffer lent = parts.loans->Lend(7, 1000, 7);
  parts.outbox.reset();  // borrows the loans
  parts.loans.reset();
  EXPECT_EQ(lent.AsStringView(), "payload");  // the Buffer holds the region
  lent = Buffer();
}

}  // namespace
}  // namespace wharf::daemon
