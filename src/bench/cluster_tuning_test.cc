// HomaSettingsForLink on known links.
#include "bench/cluster_tuning.h"

#include <gtest/gtest.h>

namespace wharf::bench {
namespace {

using Settings = std::vector<std::string>;

TEST(HomaSettingsForLinkTest, OneGigabitAtMtu1500) {
  // RTT 50 us + 2 x 12.3 us = 74.6 us: 9.3 kB, 7 packets.
  EXPECT_EQ(HomaSettingsForLink(1'000'000'000, 1500),
            (Settings{"homa.unsched_bytes=10500", "homa.max_incoming_bytes=84000",
                      "homa.tick=1000us", "homa.max_nic_backlog=100us"}));
}

TEST(HomaSettingsForLinkTest, HundredMegabitGetsAFewPacketsAndALongerTick) {
  // RTT 50 + 2 x 123 us = 296 us: 3.7 kB, 3 packets; 125 kB take 10 ms.
  EXPECT_EQ(HomaSettingsForLink(100'000'000, 1500),
            (Settings{"homa.unsched_bytes=4500", "homa.max_incoming_bytes=36000",
                      "homa.tick=10000us", "homa.max_nic_backlog=369us"}));
}

TEST(HomaSettingsForLinkTest, ASlowLinkCountsTheWireTimeOfItsPackets) {
  // 50 us + 2 x 12.3 ms: 3.1 kB, 3 packets; 125 kB take 1 s.
  const Settings s = HomaSettingsForLink(1'000'000, 1500);
  EXPECT_EQ(s[0], "homa.unsched_bytes=4500");
  EXPECT_EQ(s[2], "homa.tick=1000000us");
}

TEST(HomaSettingsForLinkTest, AFastLinkKeepsTheOneMillisecondTick) {
  const Settings s = HomaSettingsForLink(25'000'000'000, 9000);
  EXPECT_EQ(s[2], "homa.tick=1000us");
  // 50 us + 2 x 2.9 us at 25 Gbit/s: 174 kB, 20 jumbo packets.
  EXPECT_EQ(s[0], "homa.unsched_bytes=180000");
}

}  // namespace
}  // namespace wharf::bench
