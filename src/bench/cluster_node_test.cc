// Tests for the cluster node's transport options: --link-rate default (and
// 0) leave homa's link rate to wharf, --endpoint-defaults keeps the node
// from overriding wharf's idle spin, and what the cluster sets otherwise.
#include "bench/cluster_node.h"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <algorithm>

namespace wharf::bench {
namespace {

bool HasSetting(const EndpointOptions& o, const std::string& key) {
  return std::any_of(o.settings.begin(), o.settings.end(),
                     [&](const auto& kv) { return kv.first == key; });
}

ClusterNodeOptions Parse(std::vector<std::string> args) {
  ClusterNodeOptions options;
  CLI::App app;
  AddClusterNodeFlags(app, options, {"homa", "tcp"});
  std::vector<std::string> argv = {"--host", "0", "--addresses", "127.0.0.1,127.0.0.2", "--out",
                                   "/dev/null"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::reverse(argv.begin(), argv.end());  // CLI11 takes them back to front
  app.parse(argv);
  return options;
}

TEST(ClusterNodeTransportTest, LinkRateDefaultOrZeroLeavesWharfsDefault) {
  for (const char* rate : {"default", "0"}) {
    SCOPED_TRACE(rate);
    Result<NodeTransportConfig> c = NodeTransportFromOptions(Parse({"--link-rate", rate}));
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->link_bps, 0u);
    EXPECT_FALSE(HasSetting(WharfEndpointOptions(*c, "homa://127.0.0.1:0"), "homa.link_rate"));
  }
  Result<NodeTransportConfig> set = NodeTransportFromOptions(Parse({"--link-rate", "1gbit"}));
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->link_bps, 1'000'000'000u);
  EXPECT_TRUE(HasSetting(WharfEndpointOptions(*set, "homa://127.0.0.1:0"), "homa.link_rate"));
  EXPECT_FALSE(NodeTransportFromOptions(Parse({"--link-rate", "fast"})).ok());
}

TEST(ClusterNodeTransportTest, EndpointDefaultsKeepsWharfsIdleSpin) {
  Result<NodeTransportConfig> cluster = NodeTransportFromOptions(Parse({}));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  EXPECT_TRUE(HasSetting(WharfEndpointOptions(*cluster, "homa://127.0.0.1:0"), "endpoint.spin"));
  Result<NodeTransportConfig> defaults =
      NodeTransportFromOptions(Parse({"--endpoint-defaults", "--link-rate", "default"}));
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_TRUE(defaults->endpoint_defaults);
  const EndpointOptions o = WharfEndpointOptions(*defaults, "homa://127.0.0.1:0");
  EXPECT_TRUE(o.settings.empty()) << o.settings.size() << " settings, first " << o.settings[0].first;
}

TEST(ClusterNodeTransportTest, SetMustBeKeyValue) {
  Result<NodeTransportConfig> bad = NodeTransportFromOptions(Parse({"--set", "novalue"}));
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  Result<NodeTransportConfig> good =
      NodeTransportFromOptions(Parse({"--set", "homa.max_nic_backlog=100us"}));
  ASSERT_TRUE(good.ok()) << good.status();
  ASSERT_EQ(good->settings.size(), 1u);
  EXPECT_EQ(good->settings[0].second, "100us");
}

}  // namespace
}  // namespace wharf::bench
