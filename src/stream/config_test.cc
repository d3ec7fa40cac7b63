// Tests of ResolveTcpConfig: the defaults that follow tcp.peer_timeout, and
// that every invalid value is refused naming its key.
#include "stream/config.h"

#include <gtest/gtest.h>

#include <string>

#include "stream/testing/tcp_harness.h"

namespace wharf::stream {
namespace {

TcpConfig Bound() {
  TcpConfig config;
  config.bind = testing::Loopback4();
  return config;
}

void ExpectRefusedNaming(const TcpConfig& config, const std::string& key) {
  Result<TcpConfig> resolved = ResolveTcpConfig(config);
  ASSERT_FALSE(resolved.ok()) << key;
  EXPECT_EQ(resolved.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(resolved.status().message().find(key), std::string::npos) << resolved.status();
}

TEST(TcpConfigTest, ResolveTcpConfig__TheDefaultsAreValid) {
  Result<TcpConfig> resolved = ResolveTcpConfig(Bound());
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(resolved->ping_interval_ns, TcpConfig{}.ping_interval_ns);
  EXPECT_EQ(resolved->idle_timeout_ns, TcpConfig{}.idle_timeout_ns);
}

TEST(TcpConfigTest, ResolveTcpConfig__DefaultPingAndIdleFollowTheChosenPeerTimeout) {
  TcpConfig config = Bound();
  config.peer_timeout_ns = 50 * kNsPerMs;  // alone: valid
  Result<TcpConfig> resolved = ResolveTcpConfig(config);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(resolved->ping_interval_ns, 5 * kNsPerMs);
  config.peer_timeout_ns = 120 * kNsPerSec;
  resolved = ResolveTcpConfig(config);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(resolved->ping_interval_ns, TcpConfig{}.ping_interval_ns);
  EXPECT_EQ(resolved->idle_timeout_ns, 120 * kNsPerSec);
}

TEST(TcpConfigTest, ResolveTcpConfig__AChosenPingIntervalIsKept) {
  TcpConfig config = Bound();
  config.peer_timeout_ns = 50 * kNsPerMs;
  config.ping_interval_ns = 20 * kNsPerMs;
  Result<TcpConfig> resolved = ResolveTcpConfig(config);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(resolved->ping_interval_ns, 20 * kNsPerMs);
}

TEST(TcpConfigTest, ResolveTcpConfig__InvalidValuesNameTheirKey) {
  TcpConfig c = Bound();
  c.chunk_bytes = 10;
  ExpectRefusedNaming(c, "tcp.chunk_bytes");
  c = Bound();
  c.ping_interval_ns = c.peer_timeout_ns;
  ExpectRefusedNaming(c, "tcp.ping_interval");
  c = Bound();
  c.idle_timeout_ns = c.peer_timeout_ns - 1;
  ExpectRefusedNaming(c, "tcp.idle_timeout");
  c = Bound();
  c.connections_per_peer = 0;
  ExpectRefusedNaming(c, "tcp.connections_per_peer");
  c = Bound();
  c.reconnect_max_ns = c.reconnect_min_ns - 1;
  ExpectRefusedNaming(c, "tcp.reconnect_max");
  c = Bound();
  c.max_incoming_bytes = c.chunk_bytes - 1;
  ExpectRefusedNaming(c, "tcp.max_incoming_bytes");
  c = Bound();
  c.max_peers = 0;
  ExpectRefusedNaming(c, "tcp.max_peers");
  ExpectRefusedNaming(TcpConfig{}, "TcpConfig::bind");
}

}  // namespace
}  // namespace wharf::stream
