// Tests for ThreadNetns: a socket made inside the scope lives on the cluster
// host (it can bind the host's address, which the root namespace lacks), and
// the thread is back home afterwards. Skips without root.
#include "netns/thread_netns.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "netns/netns_cluster.h"

namespace wharf::netns {
namespace {

// 0 if a UDP socket made now on this thread can bind `ip`, else the errno.
int BindError(const std::string& ip) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  ::inet_pton(AF_INET, ip.c_str(), &addr.sin_addr);
  const int rc = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  const int err = rc == 0 ? 0 : errno;
  ::close(fd);
  return err;
}

TEST(ThreadNetnsTest, SocketsMadeInsideLiveOnTheHostAndTheThreadComesBack) {
  if (Status supported = NetnsCluster::CheckSupported(); !supported.ok()) {
    GTEST_SKIP() << "needs root and network namespaces: " << supported;
  }
  auto cluster = NetnsCluster::Create({.hosts = 1, .prefix = "wharfthr"});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const std::string ip = (*cluster)->address(0);
  EXPECT_EQ(BindError(ip), EADDRNOTAVAIL) << "the root namespace has no " << ip;
  {
    auto inside = ThreadNetns::Enter((*cluster)->namespace_name(0));
    ASSERT_TRUE(inside.ok()) << inside.status();
    EXPECT_EQ(BindError(ip), 0);
  }
  EXPECT_EQ(BindError(ip), EADDRNOTAVAIL) << "back in the root namespace";
}

TEST(ThreadNetnsTest, UnknownOrMalformedNamesAreErrors) {
  EXPECT_EQ(ThreadNetns::Enter("wharf-no-such-netns-x").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ThreadNetns::Enter("../net").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ThreadNetns::Enter("").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace wharf::netns
