#include "transport/fake/link_model.h"

#include <gtest/gtest.h>

namespace wharf::transport::fake {
namespace {

TEST(SerializationNsTest, InfiniteRateTakesNoTime) {
  LinkConfig config;
  EXPECT_EQ(SerializationNs(config, 1472), 0);
}

TEST(SerializationNsTest, BitsOverRateRoundedUp) {
  LinkConfig config;
  config.bandwidth_bps = 10'000'000'000;  // 10 Gbps: 0.8 ns per byte
  EXPECT_EQ(SerializationNs(config, 1000), 800);
  EXPECT_EQ(SerializationNs(config, 1), 1);  // 0.8 ns rounds up
  config.per_packet_overhead_bytes = 42;
  EXPECT_EQ(SerializationNs(config, 1000), 834);  // 1042 * 0.8 = 833.6
  config.bandwidth_bps = 1'000'000'000;
  EXPECT_EQ(SerializationNs(config, 65'535 - 42), 524'280);
}

TEST(LinkModelTest, PerPairConfigOverridesDefaultInOneDirection) {
  LinkModel links;
  LinkConfig slow;
  slow.delay_ns = 50 * kNsPerUs;
  links.Set("A", "B", slow);
  EXPECT_EQ(links.Get("A", "B").delay_ns, 50 * kNsPerUs);
  EXPECT_EQ(links.Get("B", "A").delay_ns, LinkConfig().delay_ns);
  LinkConfig def;
  def.delay_ns = 7;
  links.SetDefault(def);
  EXPECT_EQ(links.Get("B", "A").delay_ns, 7);
  EXPECT_EQ(links.Get("A", "B").delay_ns, 50 * kNsPerUs);
}

TEST(LinkModelTest, InfiniteRateLinkLeavesImmediately) {
  LinkModel links;
  EXPECT_EQ(links.Transmit("A", "B", 1000, 100), 100);
  EXPECT_EQ(links.Transmit("A", "B", 1000, 100), 100);
  EXPECT_LE(links.BusyUntil("A", "B"), 100);
}

TEST(LinkModelTest, PacketsQueueFifoBehindEachOther) {
  LinkModel links;
  LinkConfig config;
  config.bandwidth_bps = 8'000'000'000;  // 1 byte per ns
  links.SetDefault(config);
  EXPECT_EQ(links.Transmit("A", "B", 1000, 0), 1000);
  EXPECT_EQ(links.Transmit("A", "B", 500, 0), 1500);    // waits for the first
  EXPECT_EQ(links.Transmit("A", "B", 100, 200), 1600);  // still queued at t=200
  EXPECT_EQ(links.BusyUntil("A", "B"), 1600);
  // Other links, including the reverse direction, are independent.
  EXPECT_EQ(links.Transmit("B", "A", 100, 0), 100);
  EXPECT_EQ(links.Transmit("A", "C", 100, 0), 100);
  // After the queue drained, a packet starts at its own send time.
  EXPECT_EQ(links.Transmit("A", "B", 100, 5000), 5100);
}

}  // namespace
}  // namespace wharf::transport::fake
