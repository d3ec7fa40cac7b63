// Unit tests of the --config / --set flag handling shared by subcommands.
#include "tools/common_flags.h"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>

namespace wharf::tools {
namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

TEST(ParseSettingsTest, SplitsKeyValueAtFirstEquals) {
  auto r = ParseSettings({"homa.overcommit=4", "a.b=x=y", "empty="});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, (Pairs{{"homa.overcommit", "4"}, {"a.b", "x=y"}, {"empty", ""}}));
}

TEST(ParseSettingsTest, EmptyListIsOk) {
  auto r = ParseSettings({});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty());
}

TEST(ParseSettingsTest, MissingEqualsIsAnErrorNamingTheEntry) {
  auto r = ParseSettings({"homa.overcommit=4", "homa.tick_ns"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("'homa.tick_ns'"), std::string::npos)
      << r.status().message();
}

TEST(ParseSettingsTest, EmptyKeyIsAnError) {
  auto r = ParseSettings({"=4"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("'=4'"), std::string::npos) << r.status().message();
}

TEST(EndpointFlagsTest, SetIsRepeatable) {
  CLI::App app;
  EndpointFlags flags;
  AddEndpointFlags(app, flags);
  const char* argv[] = {"wharf", "--set", "a=1", "--set", "b=2"};
  ASSERT_NO_THROW(app.parse(5, argv));
  EXPECT_EQ(flags.settings, (std::vector<std::string>{"a=1", "b=2"}));
  EXPECT_TRUE(flags.config_file.empty());
}

TEST(EndpointFlagsTest, ConfigMustExist) {
  CLI::App app;
  EndpointFlags flags;
  AddEndpointFlags(app, flags);
  const char* argv[] = {"wharf", "--config", "/nonexistent/wharf-test.yaml"};
  EXPECT_THROW(app.parse(3, argv), CLI::ValidationError);
}

}  // namespace
}  // namespace wharf::tools
