// daemon/daemon_config_test.cc: LoadDaemonConfig's daemon keys from
// overrides (`--set`), the form wharfd's command line and the tests use.
#include "daemon/daemon_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace wharf::daemon {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(DaemonConfigTest, AllowedUidsFromASetAreACommaSeparatedList) {
  auto c = LoadDaemonConfig("", {{"daemon.allowed_uids", "1000, 1001,0"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(c->allowed_uids, ElementsAre(1000u, 1001u, 0u));
  c = LoadDaemonConfig("", {{"daemon.allowed_uids", "[7]"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(c->allowed_uids, ElementsAre(7u));
  c = LoadDaemonConfig("", {{"daemon.allowed_uids", ""}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->allowed_uids.empty());
}

TEST(DaemonConfigTest, AllowedUidsMustBeNumbers) {
  auto c = LoadDaemonConfig("", {{"daemon.allowed_uids", "1000,root"}});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr("'root'"));
}

// A wharfd that probes asks for the kernel's receive and transmit stamps
// on its sockets, unless told not to; one that does not probe leaves them
// off.
TEST(DaemonConfigTest, ProbingTurnsOnKernelTimestampsUnlessToldOtherwise) {
  Result<DaemonConfig> plain = LoadDaemonConfig("", {});
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_FALSE(plain->engine.rx_timestamps);
  EXPECT_FALSE(plain->engine.tx_timestamps);
  Result<DaemonConfig> probing = LoadDaemonConfig("", {{"mesh.pinglist", "/etc/wharf/p.yaml"}});
  ASSERT_TRUE(probing.ok()) << probing.status();
  EXPECT_TRUE(probing->engine.rx_timestamps);
  EXPECT_TRUE(probing->engine.tx_timestamps);
  Result<DaemonConfig> off = LoadDaemonConfig(
      "", {{"mesh.pinglist", "/etc/wharf/p.yaml"}, {"udp.rx_timestamps", "false"}});
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_FALSE(off->engine.rx_timestamps);
  EXPECT_TRUE(off->engine.tx_timestamps);
  Result<DaemonConfig> tx_off = LoadDaemonConfig(
      "", {{"mesh.pinglist", "/etc/wharf/p.yaml"}, {"udp.tx_timestamps", "false"}});
  ASSERT_TRUE(tx_off.ok()) << tx_off.status();
  EXPECT_TRUE(tx_off->engine.rx_timestamps);
  EXPECT_FALSE(tx_off->engine.tx_timestamps);
}

TEST(DaemonConfigTest, BusySpinIsADurationOfAtMostASecond) {
  auto c = LoadDaemonConfig("", {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->busy_spin_ns, kNsPerMs);
  c = LoadDaemonConfig("", {{"daemon.busy_spin", "0us"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->busy_spin_ns, 0);
  c = LoadDaemonConfig("", {{"daemon.busy_spin", "250us"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->busy_spin_ns, 250 * kNsPerUs);
  c = LoadDaemonConfig("", {{"daemon.busy_spin", "2s"}});
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("daemon.busy_spin"));
  c = LoadDaemonConfig("", {{"daemon.busy_spin", "5"}});
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("daemon.busy_spin"));
}

TEST(DaemonConfigTest, LimitsFromSets) {
  auto c = LoadDaemonConfig("", {{"limits.max_inflight", "8"},
                                 {"limits.max_connections", "3"},
                                 {"limits.heap_bytes", "1MiB"},
                                 {"limits.max_applications", "2"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->limits.max_inflight, 8u);
  EXPECT_EQ(c->limits.max_connections, 3u);
  EXPECT_EQ(c->limits.heap_bytes, 1u << 20);
  EXPECT_EQ(c->max_applications, 2u);
  // The engines wharfd runs for applications take the tighter connection cap.
  EXPECT_EQ(c->engine.limits.max_connections, 3u);
}

}  // namespace
}  // namespace wharf::daemon
