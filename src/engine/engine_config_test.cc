#include "engine/engine_config.h"

#include <cstdio>
#include <fstream>

#include <gtest/gtest.h>
#include <unistd.h>

namespace wharf::engine {
namespace {

std::string WriteTemp(const std::string& text) {
  std::string path = "/tmp/wharf_engine_config_" + std::to_string(getpid()) + "_" +
                     std::to_string(reinterpret_cast<uintptr_t>(&text)) + ".yaml";
  std::ofstream(path) << text;
  return path;
}

TEST(EngineConfigTest, DefaultsWithoutFileOrOverrides) {
  auto c = LoadEngineConfig("", {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->homa.overcommit, 8);
  EXPECT_EQ(c->mtu, 65535u);
}

TEST(EngineConfigTest, FileThenOverrides) {
  std::string path = WriteTemp(
      "homa:\n  overcommit: 4\n  unsched_bytes: 40KB\n  link_rate: 10Gbps\n  tick: 2ms\n"
      "udp:\n  mtu: 9000\n");
  auto c = LoadEngineConfig(path, {{"homa.overcommit", "6"}, {"endpoint.spin", "10us"}});
  std::remove(path.c_str());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->homa.overcommit, 6);
  EXPECT_EQ(c->homa.unsched_bytes, 40'000u);
  EXPECT_EQ(c->homa.link_bps, 10'000'000'000u);
  EXPECT_EQ(c->homa.tick_ns, 2 * kNsPerMs);
  EXPECT_EQ(c->mtu, 9000u);
  EXPECT_EQ(c->spin_ns, 10 * kNsPerUs);
}

TEST(EngineConfigTest, UnknownKeyNamesFileLineAndSuggestion) {
  std::string path = WriteTemp("homa:\n  overcomit: 4\n");
  auto c = LoadEngineConfig(path, {});
  std::remove(path.c_str());
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find(":2:"), std::string::npos) << c.status();
  EXPECT_NE(c.status().message().find("homa.overcommit"), std::string::npos) << c.status();
}

TEST(EngineConfigTest, DefaultTransportIsHomaTcpOrUcx) {
  auto d = LoadEngineConfig("", {});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->default_scheme, "homa");
  auto t = LoadEngineConfig("", {{"endpoint.default_transport", "tcp"}});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->default_scheme, "tcp");
  auto bad = LoadEngineConfig("", {{"endpoint.default_transport", "udp"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("endpoint.default_transport: expected homa or tcp or ucx, got 'udp'"),
            std::string::npos)
      << bad.status();
}

TEST(EngineConfigTest, UcxKeysAreReadAndCheckedNamingTheKey) {
  auto d = LoadEngineConfig("", {});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->ucx.tls, "");
  EXPECT_TRUE(d->ucx.detect_peer_failure);
  EXPECT_EQ(d->ucx.idle_timeout_ns, 60 * kNsPerSec);
  auto c = LoadEngineConfig("", {{"ucx.tls", "sm,tcp"},
                                 {"ucx.devices", "eth0"},
                                 {"ucx.detect_peer_failure", "false"},
                                 {"ucx.max_peers", "16"},
                                 {"ucx.max_server_rpcs", "100"},
                                 {"ucx.idle_timeout", "5s"},
                                 {"ucx.pool_bytes", "1MiB"},
                                 {"ucx.max_regions", "3"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->ucx.tls, "sm,tcp");
  EXPECT_EQ(c->ucx.devices, "eth0");
  EXPECT_FALSE(c->ucx.detect_peer_failure);
  EXPECT_EQ(c->ucx.max_peers, 16u);
  EXPECT_EQ(c->ucx.max_server_rpcs, 100u);
  EXPECT_EQ(c->ucx.idle_timeout_ns, 5 * kNsPerSec);
  EXPECT_EQ(c->ucx.pool_bytes, 1u << 20);
  EXPECT_EQ(c->ucx.max_regions, 3u);
  for (const auto& [key, value, why] :
       {std::tuple{"ucx.tls", "tcp sm", "printable characters without spaces"},
        std::tuple{"ucx.devices", "\x01", "printable characters without spaces"},
        std::tuple{"ucx.max_peers", "0", "expected > 0"},
        std::tuple{"ucx.idle_timeout", "0s", "expected > 0"},
        std::tuple{"ucx.max_regions", "0", "expected > 0"},
        std::tuple{"ucx.detect_peer_failure", "maybe", "ucx.detect_peer_failure"}}) {
    auto bad = LoadEngineConfig("", {{key, value}});
    ASSERT_FALSE(bad.ok()) << key << "=" << value;
    EXPECT_NE(bad.status().message().find(key), std::string::npos) << bad.status();
    EXPECT_NE(bad.status().message().find(why), std::string::npos) << bad.status();
  }
}

TEST(EngineConfigTest, SpinYieldIsAutoByDefaultSoManagedEndpointsYield) {
  using SY = EngineConfig::SpinYield;
  auto c = LoadEngineConfig("", {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->spin_yield, SY::kAuto);
  EXPECT_TRUE(c->YieldsWhileSpinning(/*managed=*/true));
  EXPECT_FALSE(c->YieldsWhileSpinning(/*managed=*/false));
  auto always = LoadEngineConfig("", {{"endpoint.spin_yield", "true"}});
  ASSERT_TRUE(always.ok());
  EXPECT_TRUE(always->YieldsWhileSpinning(false));
  auto never = LoadEngineConfig("", {{"endpoint.spin_yield", "false"}});
  ASSERT_TRUE(never.ok());
  EXPECT_FALSE(never->YieldsWhileSpinning(true));
  auto bad = LoadEngineConfig("", {{"endpoint.spin_yield", "sometimes"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("endpoint.spin_yield: expected auto or true or false"),
            std::string::npos)
      << bad.status().ToString();
}

TEST(EngineConfigTest, LinkRateIsAutoUnlessARateIsGiven) {
  auto d = LoadEngineConfig("", {});
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_TRUE(d->homa.link_rate_auto);
  EXPECT_EQ(d->homa.link_bps, 25'000'000'000u);
  auto explicit_rate = LoadEngineConfig("", {{"homa.link_rate", "10Gbps"}});
  ASSERT_TRUE(explicit_rate.ok()) << explicit_rate.status().ToString();
  EXPECT_FALSE(explicit_rate->homa.link_rate_auto);
  EXPECT_EQ(explicit_rate->homa.link_bps, 10'000'000'000u);
  auto back = LoadEngineConfig("", {{"homa.link_rate", "auto"}});
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->homa.link_rate_auto);
  auto bad = LoadEngineConfig("", {{"homa.link_rate", "fast"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("homa.link_rate"), std::string::npos);
  EXPECT_NE(bad.status().message().find("or 'auto'"), std::string::npos) << bad.status().ToString();
}

TEST(EngineConfigTest, GroLoopbackIsAdaptiveByDefault) {
  using GL = EngineConfig::GroLoopback;
  auto c = LoadEngineConfig("", {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->gro_loopback, GL::kAdaptive);
  EXPECT_TRUE(c->gro);
  for (auto [text, want] : {std::pair{"adaptive", GL::kAdaptive}, std::pair{"true", GL::kAlways},
                            std::pair{"false", GL::kNever}}) {
    auto set = LoadEngineConfig("", {{"udp.gro_loopback", text}});
    ASSERT_TRUE(set.ok()) << text << ": " << set.status().ToString();
    EXPECT_EQ(set->gro_loopback, want) << text;
  }
  // From a file, a bare YAML boolean reads as its word.
  std::string path = WriteTemp("udp:\n  gro: true\n  gro_loopback: false\n");
  auto file = LoadEngineConfig(path, {});
  std::remove(path.c_str());
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ(file->gro_loopback, GL::kNever);
  for (const char* text : {"sometimes", "yes", "1", ""}) {
    auto bad = LoadEngineConfig("", {{"udp.gro_loopback", text}});
    ASSERT_FALSE(bad.ok()) << text;
    EXPECT_NE(bad.status().message().find("udp.gro_loopback: expected adaptive or true or false"),
              std::string::npos)
        << bad.status().ToString();
  }
}

TEST(EngineConfigTest, GsoCopyBytesIsASizeUpToOneDatagram) {
  auto c = LoadEngineConfig("", {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->gso_copy_bytes, 8u << 10);
  auto off = LoadEngineConfig("", {{"udp.gso_copy_bytes", "0"}});
  ASSERT_TRUE(off.ok()) << off.status().ToString();
  EXPECT_EQ(off->gso_copy_bytes, 0u);
  auto set = LoadEngineConfig("", {{"udp.gso_copy_bytes", "16KiB"}});
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set->gso_copy_bytes, 16u << 10);
  auto big = LoadEngineConfig("", {{"udp.gso_copy_bytes", "1MiB"}});
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("udp.gso_copy_bytes: expected at most 65535 bytes"),
            std::string::npos)
      << big.status().ToString();
}

TEST(EngineConfigTest, RpcSizeLimitsAreSizesAndNoneByDefault) {
  auto c = LoadEngineConfig("", {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->rpc.max_request_bytes, 0u);
  EXPECT_EQ(c->rpc.max_response_bytes, 0u);
  auto set = LoadEngineConfig("", {{"rpc.max_request_bytes", "4KiB"},
                                   {"rpc.max_response_bytes", "1MiB"}});
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set->rpc.max_request_bytes, 4096u);
  EXPECT_EQ(set->rpc.max_response_bytes, 1u << 20);
  auto bad = LoadEngineConfig("", {{"rpc.max_request_bytes", "lots"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("rpc.max_request_bytes"), std::string::npos)
      << bad.status();
}

TEST(EngineConfigTest, BadValueNamesKeyAndExpectation) {
  auto c = LoadEngineConfig("", {{"homa.link_rate", "fast"}});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("homa.link_rate"), std::string::npos) << c.status();
  auto d = LoadEngineConfig("", {{"homa.overcommit", "0"}});
  EXPECT_FALSE(d.ok());
  auto e = LoadEngineConfig("", {{"overcommit", "3"}});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("section.name"), std::string::npos);
}

TEST(EngineConfigTest, OverrideValuesCannotInjectStructure) {
  auto c = LoadEngineConfig("", {{"homa.overcommit", "4\nudp:\n  mtu: 1"}});
  EXPECT_FALSE(c.ok());
  auto d = LoadEngineConfig("", {{"homa.overcommit", "{a: 1}"}});
  EXPECT_FALSE(d.ok());
}

TEST(EngineConfigTest, CutoffsNeedEightEntries) {
  auto c = LoadEngineConfig("", {});
  ASSERT_TRUE(c.ok());
  std::string path = WriteTemp("homa:\n  unsched_cutoffs: [1, 2, 3]\n");
  auto d = LoadEngineConfig(path, {});
  std::remove(path.c_str());
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("expected 8"), std::string::npos);
}

TEST(EngineConfigTest, MissingFileIsNotFound) {
  auto c = LoadEngineConfig("/nonexistent/wharf.yaml", {});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace wharf::engine
