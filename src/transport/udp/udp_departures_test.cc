// DepartureStamps: numbers matched to tokens per socket, stamps lost or
// forged counted and never matched to the wrong datagram, bounds.
#include "transport/udp/udp_departures.h"

#include <gtest/gtest.h>

#include <vector>

namespace wharf::transport::udp {
namespace {

using Socket = DepartureStamps::Socket;

std::vector<Departure> TakeAll(DepartureStamps& d) {
  std::vector<Departure> out(DepartureStamps::kMaxOutstanding);
  out.resize(d.Take(out));
  return out;
}

TEST(DepartureStampsTest, EachSocketsNumbersMatchTheirOwnTokens) {
  DepartureStamps d;
  d.NoteSent(Socket::kMain, 100, 1);  // key 0 on main
  d.NoteSent(Socket::kHot, 200, 1);   // key 0 on hot
  d.NoteSent(Socket::kMain, 101, 2);  // key 1 on main
  EXPECT_TRUE(d.awaiting(Socket::kMain));
  d.OnStamp(Socket::kMain, 1, 5001);
  d.OnStamp(Socket::kHot, 0, 5002);
  d.OnStamp(Socket::kMain, 0, 5000);
  std::vector<Departure> got = TakeAll(d);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].token, 101u);
  EXPECT_EQ(got[0].sent_ns, 5001);
  EXPECT_EQ(got[1].token, 200u);
  EXPECT_EQ(got[2].token, 100u);
  EXPECT_FALSE(d.awaiting_any());
  EXPECT_EQ(d.counters().reported, 3u);
  EXPECT_EQ(d.counters().lost, 0u);
  EXPECT_TRUE(TakeAll(d).empty());
}

TEST(DepartureStampsTest, AStampForANumberNeverHandedOutOrTwiceIsLostNotMatched) {
  DepartureStamps d;
  d.NoteSent(Socket::kMain, 7, 1);
  d.OnStamp(Socket::kMain, 5, 10);    // never sent
  d.OnStamp(Socket::kMain, 0, 10);    // good
  d.OnStamp(Socket::kMain, 0, 11);    // again
  d.OnStamp(Socket::kHot, 0, 12);     // nothing sent on hot
  std::vector<Departure> got = TakeAll(d);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].token, 7u);
  EXPECT_EQ(d.counters().lost, 3u);
}

TEST(DepartureStampsTest, StampsNeverReportedAreGivenUpAfterASecond) {
  DepartureStamps d;
  d.NoteSent(Socket::kMain, 1, 0);
  d.NoteSent(Socket::kMain, 2, kNsPerSec / 2);
  d.Expire(kNsPerSec - 1);
  EXPECT_EQ(d.counters().lost, 0u);
  d.Expire(kNsPerSec);
  EXPECT_EQ(d.counters().lost, 1u);
  EXPECT_TRUE(d.awaiting(Socket::kMain));
  d.OnStamp(Socket::kMain, 0, 3);  // too late: given up
  d.OnStamp(Socket::kMain, 1, 4);
  std::vector<Departure> got = TakeAll(d);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].token, 2u);
  EXPECT_FALSE(d.awaiting_any());
}

TEST(DepartureStampsTest, AwaitedStampsAndReadyOnesAreBounded) {
  DepartureStamps d;
  const size_t n = DepartureStamps::kMaxOutstanding;
  for (size_t i = 0; i < n + 10; ++i) d.NoteSent(Socket::kMain, i + 1, 1);
  // The first ten slots were taken over by the last ten sends.
  EXPECT_EQ(d.counters().lost, 10u);
  for (uint32_t key = 0; key < n + 10; ++key) d.OnStamp(Socket::kMain, key, key);
  // Keys 0..9 were given up; the rest matched, but only kMaxOutstanding fit
  // the ready queue.
  EXPECT_EQ(d.counters().reported, n);
  EXPECT_EQ(d.counters().lost, 20u);
  EXPECT_EQ(TakeAll(d).size(), n);
}

TEST(DepartureStampsTest, ANewHotSocketStartsItsNumbersAgain) {
  DepartureStamps d;
  d.NoteSent(Socket::kHot, 1, 1);
  d.NoteSent(Socket::kHot, 2, 1);
  d.ResetSocket(Socket::kHot);
  EXPECT_EQ(d.counters().lost, 2u);
  EXPECT_FALSE(d.awaiting_any());
  d.NoteSent(Socket::kHot, 3, 1);
  d.OnStamp(Socket::kHot, 0, 9);
  std::vector<Departure> got = TakeAll(d);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].token, 3u);
}

}  // namespace
}  // namespace wharf::transport::udp
