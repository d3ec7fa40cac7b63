#include "homa/pacer.h"

#include <gtest/gtest.h>

namespace wharf::homa {
namespace {

TEST(PacerTest, AllowsUntilBacklogExceedsLimit) {
  // 10 Gbps: a 1434-byte payload (1500 on the wire) takes 1.2 us.
  Pacer pacer(10'000'000'000, 5 * kNsPerUs);
  TimeNs now = 1'000'000;
  int sent = 0;
  while (pacer.CanSend(now) && sent < 100) {
    pacer.OnSent(now, 1500 - Pacer::kWireOverheadBytes);
    ++sent;
  }
  // 0, 1.2, 2.4, 3.6, 4.8 us of backlog allow a send; 6.0 does not.
  EXPECT_EQ(sent, 5);
  EXPECT_EQ(pacer.Backlog(now), 6000);
  EXPECT_EQ(pacer.NextSendTime(), now + 1000);
  EXPECT_FALSE(pacer.CanSend(now + 999));
  EXPECT_TRUE(pacer.CanSend(now + 1000));
}

TEST(PacerTest, IdleLinkDoesNotBankCredit) {
  Pacer pacer(10'000'000'000, 5 * kNsPerUs);
  pacer.OnSent(0, 1434);
  // Long idle: the next packet starts from `now`, not from the old idle time.
  pacer.OnSent(1'000'000, 1434);
  EXPECT_EQ(pacer.Backlog(1'000'000), 1200);
}

}  // namespace
}  // namespace wharf::homa
