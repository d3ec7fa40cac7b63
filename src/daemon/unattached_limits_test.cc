#include "daemon/unattached_limits.h"

#include <gtest/gtest.h>

#include <vector>

namespace wharf::daemon {
namespace {

std::optional<uint64_t> Evict(const std::vector<UnattachedConnection>& waiting, uid_t uid,
                              size_t total = 8, size_t per_uid = 3) {
  return ChooseEviction(waiting, uid, total, per_uid);
}

TEST(UnattachedLimits, ChooseEviction__NothingWhileBothCapsHold) {
  EXPECT_EQ(Evict({}, 1000), std::nullopt);
  EXPECT_EQ(Evict({{1, 1000}, {2, 1000}, {3, 0}}, 1000), std::nullopt);
}

TEST(UnattachedLimits, ChooseEviction__AUidAtItsCapLosesItsOwnOldest) {
  // uid 1000 holds 3 (its cap): its newcomer replaces its oldest, and the
  // other uid's connections are untouched.
  EXPECT_EQ(Evict({{1, 0}, {2, 1000}, {3, 1000}, {4, 1000}}, 1000), 2u);
  // uid 0 has room: nothing goes.
  EXPECT_EQ(Evict({{1, 0}, {2, 1000}, {3, 1000}, {4, 1000}}, 0), std::nullopt);
}

TEST(UnattachedLimits, ChooseEviction__PastTheTotalTheUidWithTheMostLosesItsOldest) {
  const std::vector<UnattachedConnection> waiting = {{1, 7}, {2, 1000}, {3, 1000}, {4, 1001},
                                                     {5, 1000}, {6, 1001}, {7, 8}, {8, 9}};
  EXPECT_EQ(Evict(waiting, 42, 8, 4), 2u);  // uid 1000 has 3, the most
}

TEST(UnattachedLimits, ChooseEviction__AmongEqualsTheLongestWaitingGoes) {
  const std::vector<UnattachedConnection> waiting = {{10, 5}, {11, 6}, {12, 6}, {13, 5}};
  EXPECT_EQ(Evict(waiting, 9, 4, 4), 10u);
}

}  // namespace
}  // namespace wharf::daemon
