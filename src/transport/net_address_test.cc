#include "transport/net_address.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <unordered_set>

#include <gtest/gtest.h>

namespace wharf::transport {
namespace {

TEST(NetAddressTest, ParsesIpv4AndRoundTrips) {
  auto a = NetAddress::Parse("198.18.0.2:4000");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->is_v4());
  EXPECT_EQ(a->port(), 4000);
  EXPECT_EQ(a->ToString(), "198.18.0.2:4000");
}

TEST(NetAddressTest, ParsesIpv6InBrackets) {
  auto a = NetAddress::Parse("[::1]:80");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->is_v6());
  EXPECT_EQ(a->ToString(), "[::1]:80");
}

TEST(NetAddressTest, RejectsMalformedWithReason) {
  for (const char* bad : {"", "1.2.3.4", "1.2.3.4:", "1.2.3.4:99999", "1.2.3.4:8x", "host:80",
                          "[::1]", "[::1]80", "[zz]:80", "::1:80"}) {
    auto a = NetAddress::Parse(bad);
    EXPECT_FALSE(a.ok()) << bad;
    EXPECT_EQ(a.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(a.status().message().find("address '"), std::string::npos) << bad;
  }
}

TEST(NetAddressTest, SockaddrRoundTripBothFamilies) {
  for (const char* text : {"127.0.0.1:9", "[fe80::1]:65535"}) {
    NetAddress a = *NetAddress::Parse(text);
    sockaddr_storage ss;
    size_t len = a.ToSockaddr(&ss);
    auto back = NetAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&ss), len);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, a) << text;
  }
}

TEST(NetAddressTest, FromSockaddrRejectsShortOrForeign) {
  sockaddr_storage ss{};
  ss.ss_family = AF_UNIX;
  EXPECT_FALSE(NetAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&ss), sizeof(ss)).ok());
  ss.ss_family = AF_INET;
  EXPECT_FALSE(NetAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&ss), 4).ok());
}

TEST(NetAddressTest, HashAndEqualityDistinguishPorts) {
  std::unordered_set<NetAddress> set;
  set.insert(*NetAddress::Parse("10.0.0.1:1"));
  set.insert(*NetAddress::Parse("10.0.0.1:2"));
  set.insert(*NetAddress::Parse("10.0.0.1:1"));
  EXPECT_EQ(set.size(), 2u);
  EXPECT_EQ(NetAddress::Parse("10.0.0.1:1")->WithPort(2), *NetAddress::Parse("10.0.0.1:2"));
}

}  // namespace
}  // namespace wharf::transport
