// Tests of the UDP address conversions: v4-mapped on the way into a
// dual-stack socket, plain IPv4 on the way out, loopback and cache keys.
#include "transport/udp/udp_addresses.h"

#include <gtest/gtest.h>
#include <netinet/in.h>

namespace wharf::transport::udp {
namespace {

NetAddress Parse(const char* text) {
  Result<NetAddress> a = NetAddress::Parse(text);
  EXPECT_TRUE(a.ok()) << text << ": " << a.status();
  return a.ok() ? *a : NetAddress();
}

TEST(UdpAddressesTest, ToKernelAddress__MapsIpv4ForAnIpv6Socket) {
  sockaddr_storage out;
  bool ipv4_header = false;
  const socklen_t len =
      ToKernelAddress(Parse("10.1.2.3:80"), /*ipv6_socket=*/true, &out, &ipv4_header);
  EXPECT_EQ(len, sizeof(sockaddr_in6));
  EXPECT_TRUE(ipv4_header);
  Result<NetAddress> back = NetAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&out), len);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->ToString(), "[::ffff:10.1.2.3]:80");
}

TEST(UdpAddressesTest, ToKernelAddress__KeepsEachFamilyOnItsOwnSocket) {
  sockaddr_storage out;
  bool ipv4_header = true;
  EXPECT_EQ(ToKernelAddress(Parse("[::1]:80"), true, &out, &ipv4_header), sizeof(sockaddr_in6));
  EXPECT_FALSE(ipv4_header);
  EXPECT_EQ(ToKernelAddress(Parse("10.1.2.3:80"), false, &out, &ipv4_header), sizeof(sockaddr_in));
  EXPECT_TRUE(ipv4_header);
}

TEST(UdpAddressesTest, FromKernelAddress__UnmapsIpv4Peers) {
  sockaddr_storage in;
  const auto len = static_cast<socklen_t>(Parse("[::ffff:10.1.2.3]:81").ToSockaddr(&in));
  Result<NetAddress> from = FromKernelAddress(in, len);
  ASSERT_TRUE(from.ok()) << from.status();
  EXPECT_TRUE(from->is_v4());
  EXPECT_EQ(*from, Parse("10.1.2.3:81"));
  const auto v6_len = static_cast<socklen_t>(Parse("[fe80::1]:82").ToSockaddr(&in));
  EXPECT_EQ(*FromKernelAddress(in, v6_len), Parse("[fe80::1]:82"));
}

TEST(UdpAddressesTest, IsLoopbackIp__AllThreeShapes) {
  EXPECT_TRUE(IsLoopbackIp(Parse("127.0.0.1:1")));
  EXPECT_TRUE(IsLoopbackIp(Parse("127.9.9.9:1")));
  EXPECT_TRUE(IsLoopbackIp(Parse("[::1]:1")));
  EXPECT_TRUE(IsLoopbackIp(Parse("[::ffff:127.0.0.1]:1")));
  EXPECT_FALSE(IsLoopbackIp(Parse("10.0.0.1:1")));
  EXPECT_FALSE(IsLoopbackIp(Parse("[::2]:1")));
  EXPECT_FALSE(IsLoopbackIp(Parse("[::ffff:10.0.0.1]:1")));
}

TEST(UdpAddressesTest, PathKey__DropsThePortAndTheMapping) {
  EXPECT_EQ(PathKey(Parse("10.1.2.3:80")), Parse("10.1.2.3:0"));
  EXPECT_EQ(PathKey(Parse("[::ffff:10.1.2.3]:80")), Parse("10.1.2.3:0"));
  EXPECT_EQ(PathKey(Parse("[fe80::1]:80")), Parse("[fe80::1]:0"));
}

}  // namespace
}  // namespace wharf::transport::udp
