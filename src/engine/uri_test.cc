#include "engine/uri.h"

#include <gtest/gtest.h>

namespace wharf::engine {
namespace {

TEST(UriTest, SchemeAndDefault) {
  auto a = ParseUri("homa://127.0.0.1:4000");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->scheme, "homa");
  EXPECT_EQ(a->address.ToString(), "127.0.0.1:4000");
  auto b = ParseUri("[::1]:9");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->scheme, "homa");
  EXPECT_TRUE(b->address.is_v6());
}

TEST(UriTest, TcpSchemeAndTcpDefault) {
  auto a = ParseUri("tcp://198.18.0.2:4000");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->scheme, "tcp");
  auto b = ParseUri("198.18.0.2:4000", "tcp");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->scheme, "tcp");
  EXPECT_EQ(b->address, a->address);
}

TEST(UriTest, ResolvesLocalhost) {
  auto a = ParseUri("homa://localhost:7");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->address.port(), 7);
}

TEST(UriTest, UnknownSchemeAndBadHostAreClearErrors) {
  auto a = ParseUri("smtp://1.2.3.4:25");
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("unknown scheme 'smtp'"), std::string::npos);
  auto b = ParseUri("homa://no-such-host.invalid:1");
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("cannot resolve"), std::string::npos);
  EXPECT_FALSE(ParseUri("homa://1.2.3.4").ok());
}

}  // namespace
}  // namespace wharf::engine
