// engine/barrier_rounds_test.cc: rounds a coordinator holds, alone: which
// arrivals complete a round, which are refused, and rounds expiring.
#include "engine/barrier_rounds.h"

#include <gtest/gtest.h>

#include <vector>

namespace wharf::engine {
namespace {

constexpr DurationNs kTimeout = 60 * kNsPerSec;

ServerCallRef Member(uint64_t client_id) {
  ServerCallRef ref;
  ref.key.client_id = client_id;
  return ref;
}

TEST(BarrierRounds, ArriveRemote__TheLocalMemberCompletesTheRound) {
  BarrierRounds rounds(16, kTimeout);
  BarrierRounds::Release release;
  ASSERT_TRUE(rounds.ArriveRemote(Member(1), /*group=*/5, /*round=*/0, 3, 0, &release).ok());
  EXPECT_EQ(release.local_op, 0u);
  ASSERT_TRUE(rounds.ArriveRemote(Member(2), 5, 0, 3, 0, &release).ok());
  EXPECT_EQ(release.local_op, 0u);  // the coordinator's own member is missing
  BarrierRounds::Release done = rounds.ArriveLocal(5, 0, 3, /*op_id=*/77);
  EXPECT_EQ(done.local_op, 77u);
  EXPECT_EQ(done.members, (std::vector<ServerCallRef>{Member(1), Member(2)}));
  EXPECT_EQ(rounds.size(), 0u);
}

TEST(BarrierRounds, ArriveLocal__TheLastRemoteMemberCompletesTheRound) {
  BarrierRounds rounds(16, kTimeout);
  EXPECT_EQ(rounds.ArriveLocal(5, 1, 2, 77).local_op, 0u);
  EXPECT_EQ(rounds.next_expiry_ns(), kNever);  // its own member is here
  BarrierRounds::Release release;
  ASSERT_TRUE(rounds.ArriveRemote(Member(1), 5, 1, 2, 0, &release).ok());
  EXPECT_EQ(release.local_op, 77u);
  EXPECT_EQ(release.members, std::vector<ServerCallRef>{Member(1)});
  // Another round of the group is another round.
  EXPECT_EQ(rounds.ArriveLocal(5, 2, 2, 78).local_op, 0u);
  EXPECT_EQ(rounds.size(), 1u);
}

TEST(BarrierRounds, ArriveRemote__ARoundOfNoMembersIsRefused) {
  BarrierRounds rounds(16, kTimeout);
  BarrierRounds::Release release;
  Status s = rounds.ArriveRemote(Member(1), 5, 0, 0, 0, &release);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "barrier with 0 members");
  EXPECT_EQ(rounds.size(), 0u);
}

TEST(BarrierRounds, ArriveRemote__RoundsPastTheCapAreRefused) {
  BarrierRounds rounds(2, kTimeout);
  BarrierRounds::Release release;
  ASSERT_TRUE(rounds.ArriveRemote(Member(1), 5, 0, 3, 0, &release).ok());
  ASSERT_TRUE(rounds.ArriveRemote(Member(1), 5, 1, 3, 0, &release).ok());
  Status s = rounds.ArriveRemote(Member(1), 5, 2, 3, 0, &release);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(), "coordinator holds 2 open barrier rounds (endpoint.max_barrier_rounds)");
  EXPECT_EQ(rounds.refused(), 1u);
  // An arrival at a round already open is no new round.
  EXPECT_TRUE(rounds.ArriveRemote(Member(2), 5, 1, 3, 0, &release).ok());
}

TEST(BarrierRounds, ArriveRemote__MoreArrivalsThanMembersAreRefused) {
  BarrierRounds rounds(16, kTimeout);
  BarrierRounds::Release release;
  ASSERT_TRUE(rounds.ArriveRemote(Member(1), 5, 0, 2, 0, &release).ok());
  ASSERT_TRUE(rounds.ArriveRemote(Member(2), 5, 0, 2, 0, &release).ok());
  Status s = rounds.ArriveRemote(Member(3), 5, 0, 2, 0, &release);
  EXPECT_EQ(s.message(), "barrier round already has all 2 members");
}

TEST(BarrierRounds, Expire__ARoundWhoseLocalMemberNeverCameExpires) {
  BarrierRounds rounds(16, kTimeout);
  BarrierRounds::Release release;
  ASSERT_TRUE(rounds.ArriveRemote(Member(1), 5, 0, 3, /*now=*/1000, &release).ok());
  ASSERT_TRUE(rounds.ArriveRemote(Member(2), 5, 0, 3, 2000, &release).ok());
  ASSERT_TRUE(rounds.ArriveRemote(Member(3), 6, 0, 3, 5000, &release).ok());
  EXPECT_EQ(rounds.next_expiry_ns(), 1000 + kTimeout);
  std::vector<ServerCallRef> expired;
  rounds.Expire(1000 + kTimeout - 1, &expired);
  EXPECT_TRUE(expired.empty());
  rounds.Expire(1000 + kTimeout, &expired);
  EXPECT_EQ(expired, (std::vector<ServerCallRef>{Member(1), Member(2)}));
  EXPECT_EQ(rounds.expired(), 1u);
  EXPECT_EQ(rounds.size(), 1u);
  EXPECT_EQ(rounds.next_expiry_ns(), 5000 + kTimeout);
}

TEST(BarrierRounds, LocalGone__TheRoundWaitsTheTimeoutForAnotherArrival) {
  BarrierRounds rounds(16, kTimeout);
  ASSERT_EQ(rounds.ArriveLocal(5, 0, 3, 77).local_op, 0u);
  rounds.LocalGone(77, /*now=*/10);
  EXPECT_EQ(rounds.next_expiry_ns(), 10 + kTimeout);
  // The local member comes again in time: the round no longer expires.
  ASSERT_EQ(rounds.ArriveLocal(5, 0, 3, 78).local_op, 0u);
  std::vector<ServerCallRef> expired;
  rounds.Expire(10 + kTimeout, &expired);
  EXPECT_EQ(rounds.size(), 1u);
  EXPECT_EQ(rounds.expired(), 0u);
  EXPECT_EQ(rounds.next_expiry_ns(), kNever);
}

TEST(BarrierRounds, Clear__ForgetsEveryRound) {
  BarrierRounds rounds(16, kTimeout);
  (void)rounds.ArriveLocal(5, 0, 3, 77);
  rounds.Clear();
  EXPECT_EQ(rounds.size(), 0u);
}

}  // namespace
}  // namespace wharf::engine
