// Tests of UdpPathTable: local paths need no system call, remote ones are
// probed once per IP and capped, and the cache stays bounded.
#include "transport/udp/udp_path_table.h"

#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace wharf::transport::udp {
namespace {

constexpr size_t kMax = 65507;  // the IPv4 UDP payload ceiling

class UdpPathTableTest : public ::testing::Test {
 protected:
  UdpPathTableTest() : fd_(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_UDP)) {}
  ~UdpPathTableTest() override { close(fd_); }

  const int fd_;
  UdpStats stats_;
  UdpPathTable paths_{&stats_};
};

TEST_F(UdpPathTableTest, IsLocal__LoopbackAndTheHostsOwnAddressesWithoutAProbe) {
  paths_.Open(fd_, kMax, /*ipv6_only=*/false);
  EXPECT_TRUE(paths_.IsLocal(NetAddress::Ipv4(0x7f010203, 5)));  // 127.1.2.3
  std::array<uint8_t, 16> v6_loopback{};
  v6_loopback[15] = 1;
  EXPECT_TRUE(paths_.IsLocal(NetAddress::Ipv6(v6_loopback, 5)));
  EXPECT_FALSE(paths_.IsLocal(NetAddress::Ipv4(0xC6120063, 5)));  // 198.18.0.99
  // Every address of an interface here is local, whatever the port.
  ifaddrs* list = nullptr;
  ASSERT_EQ(getifaddrs(&list), 0);
  for (const ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    Result<NetAddress> mine = NetAddress::FromSockaddr(i->ifa_addr, sizeof(sockaddr_in));
    ASSERT_TRUE(mine.ok());
    EXPECT_TRUE(paths_.IsLocal(mine->WithPort(4000))) << mine->ToString();
  }
  freeifaddrs(list);
  EXPECT_EQ(paths_.cached_remotes(), 0u) << "no probe for any of these";
}

TEST_F(UdpPathTableTest, MaxDatagramBytesTo__ALocalPathTakesTheLoopbackRouteUnderTheCap) {
  paths_.Open(fd_, kMax, false);
  // Loopback's MTU (65536) is above the cap: the cap decides.
  EXPECT_EQ(paths_.MaxDatagramBytesTo(NetAddress::Ipv4(0x7f000001, 5)), kMax);
  UdpPathTable narrow(&stats_);
  narrow.Open(fd_, 1000, false);
  EXPECT_EQ(narrow.MaxDatagramBytesTo(NetAddress::Ipv4(0x7f000001, 5)), 1000u);
  EXPECT_TRUE(narrow.IsSoftware(NetAddress::Ipv4(0x7f000001, 5))) << "local paths have no wire";
}

TEST_F(UdpPathTableTest, MaxDatagramBytesTo__ARemotePathIsProbedOncePerIp) {
  paths_.Open(fd_, 1200, false);
  const NetAddress remote = NetAddress::Ipv4(0xC6120063, 5);  // 198.18.0.99
  EXPECT_LE(paths_.MaxDatagramBytesTo(remote), 1200u);
  EXPECT_EQ(paths_.cached_remotes(), 1u);
  (void)paths_.MaxDatagramBytesTo(remote.WithPort(6));
  (void)paths_.IsSoftware(remote);
  EXPECT_EQ(paths_.cached_remotes(), 1u) << "one entry per IP, whatever the port";
  (void)paths_.MaxDatagramBytesTo(NetAddress::Ipv4(0xC6120064, 5));
  EXPECT_EQ(paths_.cached_remotes(), 2u);
  paths_.Refresh();
  EXPECT_EQ(paths_.cached_remotes(), 0u);
}

TEST_F(UdpPathTableTest, MaxDatagramBytesTo__AFullCacheIsClearedAndCounted) {
  paths_.Open(fd_, kMax, false);
  for (uint32_t i = 0; i < UdpPathTable::kMaxCacheEntries; ++i) {
    (void)paths_.MaxDatagramBytesTo(NetAddress::Ipv4(0xC6120000 + i, 5));  // 198.18.x.y
  }
  EXPECT_EQ(paths_.cached_remotes(), UdpPathTable::kMaxCacheEntries);
  EXPECT_EQ(stats_.path_cache_evictions, 0u);
  (void)paths_.MaxDatagramBytesTo(NetAddress::Ipv4(0xC6130000, 5));
  EXPECT_EQ(paths_.cached_remotes(), 1u);
  EXPECT_EQ(stats_.path_cache_evictions, UdpPathTable::kMaxCacheEntries);
}

}  // namespace
}  // namespace wharf::transport::udp
