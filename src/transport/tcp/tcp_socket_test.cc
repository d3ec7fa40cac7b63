// Tests of the TCP socket helpers over loopback: listening on an ephemeral
// port, accept with and without a pending connection, non-blocking connect
// and its outcome, the options the stream transport sets (read back), the
// syscall seam's SIGPIPE-free writes, and error messages that name the
// address.
#include "transport/tcp/tcp_socket.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <string>

#include "transport/tcp/tcp_syscalls.h"

namespace wharf::transport::tcp {
namespace {

NetAddress Loopback(uint16_t port = 0) { return NetAddress::Ipv4(0x7F000001, port); }

bool WaitWritable(int fd) {
  pollfd p{fd, POLLOUT, 0};
  return poll(&p, 1, 3000) == 1;
}

TEST(TcpSocketTest, ListenerReportsItsEphemeralPort) {
  Result<int> fd = OpenListener(Loopback(), true, 16);
  ASSERT_TRUE(fd.ok()) << fd.status();
  Result<NetAddress> local = LocalAddressOf(*fd);
  ASSERT_TRUE(local.ok());
  EXPECT_NE(local->port(), 0);
  EXPECT_TRUE(local->is_v4());
  // Nothing pending: no connection, no error.
  Result<std::optional<Accepted>> none = Accept(*fd);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  close(*fd);
}

TEST(TcpSocketTest, BindConflictNamesTheAddress) {
  Result<int> first = OpenListener(Loopback(), true, 16);
  ASSERT_TRUE(first.ok());
  const NetAddress taken = *LocalAddressOf(*first);
  Result<int> second = OpenListener(taken, true, 16);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("bind " + taken.ToString()), std::string::npos)
      << second.status();
  EXPECT_FALSE(OpenListener(NetAddress(), true, 16).ok());
  close(*first);
}

TEST(TcpSocketTest, ConnectAcceptAndOptions) {
  Result<int> listener = OpenListener(Loopback(), true, 16);
  ASSERT_TRUE(listener.ok());
  const NetAddress server = *LocalAddressOf(*listener);
  bool done = false;
  Result<int> client = StartConnect(server, &done);
  ASSERT_TRUE(client.ok()) << client.status();
  if (!done) {
    ASSERT_TRUE(WaitWritable(*client));
  }
  EXPECT_TRUE(FinishConnect(*client, server).ok());
  Result<std::optional<Accepted>> accepted = Accept(*listener);
  ASSERT_TRUE(accepted.ok() && accepted->has_value());
  const Accepted& a = **accepted;
  EXPECT_EQ(a.peer, *LocalAddressOf(*client));
  EXPECT_EQ(*PeerAddressOf(*client), server);

  SocketOptions options{.no_delay = true,
                        .notsent_lowat_bytes = 128 << 10,
                        .user_timeout_ms = 250,
                        .send_buffer_bytes = 1 << 20};
  ASSERT_TRUE(ApplyOptions(a.fd, options).ok());
  EXPECT_EQ(*GetIntOption(a.fd, IPPROTO_TCP, TCP_NODELAY), 1);
  EXPECT_EQ(*GetIntOption(a.fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT), 128 << 10);
  EXPECT_EQ(*GetIntOption(a.fd, IPPROTO_TCP, TCP_USER_TIMEOUT), 250);
  EXPECT_GE(*GetIntOption(a.fd, SOL_SOCKET, SO_SNDBUF), 1 << 20);  // the kernel doubles it
  close(a.fd);
  close(*client);
  close(*listener);
}

TEST(TcpSocketTest, ConnectFromASpecificSourceIp) {
  Result<int> listener = OpenListener(Loopback(), true, 16);
  ASSERT_TRUE(listener.ok());
  const NetAddress server = *LocalAddressOf(*listener);
  // 127.0.0.2 is loopback too: the server sees it as the source.
  const NetAddress from = NetAddress::Ipv4(0x7F000002, 4321);
  bool done = false;
  Result<int> client = StartConnect(server, &done, from);
  ASSERT_TRUE(client.ok()) << client.status();
  if (!done) {
    ASSERT_TRUE(WaitWritable(*client));
  }
  ASSERT_TRUE(FinishConnect(*client, server).ok());
  Result<NetAddress> local = LocalAddressOf(*client);
  ASSERT_TRUE(local.ok());
  EXPECT_EQ(local->WithPort(0), from.WithPort(0));
  EXPECT_NE(local->port(), 4321) << "the port is the kernel's choice";
  close(*client);
  // A wildcard source is left to the route.
  Result<int> any = StartConnect(server, &done, NetAddress::Ipv4(0, 0));
  ASSERT_TRUE(any.ok());
  close(*any);
  close(*listener);
}

TEST(TcpSocketTest, RefusedConnectNamesTheAddress) {
  // A port nobody listens on: bind, note it, close.
  Result<int> listener = OpenListener(Loopback(), true, 16);
  ASSERT_TRUE(listener.ok());
  const NetAddress gone = *LocalAddressOf(*listener);
  close(*listener);
  bool done = false;
  Result<int> client = StartConnect(gone, &done);
  if (!client.ok()) {
    EXPECT_NE(client.status().message().find(gone.ToString()), std::string::npos);
    return;
  }
  ASSERT_TRUE(WaitWritable(*client));
  Status s = FinishConnect(*client, gone);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s;
  EXPECT_NE(s.message().find("connect " + gone.ToString()), std::string::npos) << s;
  close(*client);
  EXPECT_FALSE(StartConnect(NetAddress(), &done).ok());
}

// A socket whose source port is the port it connects to, on a host where
// nothing listens there, connects to itself (TCP's simultaneous open): the
// kernel picks such a source port now and then when a client retries a
// server that is not up yet. That is nobody: refused, as the peer gone.
TEST(TcpSocketTest, AConnectionToItselfIsARefusal) {
  Result<int> listener = OpenListener(Loopback(), true, 16);
  ASSERT_TRUE(listener.ok());
  const NetAddress self = *LocalAddressOf(*listener);
  close(*listener);
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_storage address{};
  const auto len = static_cast<socklen_t>(self.ToSockaddr(&address));
  ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&address), len), 0) << errno;
  const int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&address), len);
  ASSERT_TRUE(rc == 0 || errno == EINPROGRESS) << errno;
  ASSERT_TRUE(WaitWritable(fd));
  int error = 0;
  Status s = FinishConnect(fd, self, &error);
  EXPECT_FALSE(s.ok()) << "a socket connected to itself passed for a peer";
  EXPECT_EQ(error, ECONNREFUSED);
  EXPECT_TRUE(PeerGone(error));
  EXPECT_NE(s.message().find("connected to itself"), std::string::npos) << s;
  close(fd);
}

TEST(TcpSocketTest, RefusedConnectReportsItsErrnoAsThePeerGone) {
  Result<int> listener = OpenListener(Loopback(), true, 16);
  ASSERT_TRUE(listener.ok());
  const NetAddress gone = *LocalAddressOf(*listener);
  close(*listener);
  bool done = false;
  int error = 0;
  Result<int> client = StartConnect(gone, &done, NetAddress(), &error);
  if (client.ok()) {
    ASSERT_TRUE(WaitWritable(*client));
    EXPECT_FALSE(FinishConnect(*client, gone, &error).ok());
    close(*client);
  }
  EXPECT_EQ(error, ECONNREFUSED);
  EXPECT_TRUE(PeerGone(error));
}

TEST(TcpSocketTest, PeerGoneIsTheKernelsWordNotSilence) {
  EXPECT_TRUE(PeerGone(ECONNREFUSED));
  EXPECT_TRUE(PeerGone(EHOSTUNREACH));
  EXPECT_TRUE(PeerGone(ENETUNREACH));
  EXPECT_FALSE(PeerGone(ETIMEDOUT));  // a paused peer looks the same
  EXPECT_FALSE(PeerGone(ECONNRESET));  // the process may have restarted: reconnect first
  EXPECT_FALSE(PeerGone(0));
}

TEST(TcpSocketTest, KernelWritevToAClosedPeerIsEpipeNotSigpipe) {
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  close(pair[1]);
  std::array<char, 4> bytes{'w', 'h', 'a', 'r'};
  iovec iov{bytes.data(), bytes.size()};
  // Without MSG_NOSIGNAL this would kill the test process.
  EXPECT_EQ(TcpSyscalls::Kernel().Writev(pair[0], &iov, 1), -1);
  EXPECT_EQ(errno, EPIPE);
  close(pair[0]);
}

TEST(TcpSocketTest, KernelReadvIsNonBlockingAndScatters) {
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  std::array<char, 2> a{};
  std::array<char, 8> b{};
  iovec iov[2] = {{a.data(), a.size()}, {b.data(), b.size()}};
  EXPECT_EQ(TcpSyscalls::Kernel().Readv(pair[0], iov, 2), -1);
  EXPECT_TRUE(errno == EAGAIN || errno == EWOULDBLOCK);
  ASSERT_EQ(write(pair[1], "hello", 5), 5);
  EXPECT_EQ(TcpSyscalls::Kernel().Readv(pair[0], iov, 2), 5);
  EXPECT_EQ(std::string(a.data(), 2), "he");
  EXPECT_EQ(std::string(b.data(), 3), "llo");
  close(pair[0]);
  close(pair[1]);
}

TEST(TcpSocketTest, Ipv6ListenerIsV6Only) {
  std::array<uint8_t, 16> ip{};
  ip[15] = 1;
  Result<int> fd = OpenListener(NetAddress::Ipv6(ip, 0), true, 16);
  if (!fd.ok()) GTEST_SKIP() << "no IPv6 loopback: " << fd.status();
  EXPECT_EQ(*GetIntOption(*fd, IPPROTO_IPV6, IPV6_V6ONLY), 1);
  EXPECT_TRUE(LocalAddressOf(*fd)->is_v6());
  close(*fd);
}

}  // namespace
}  // namespace wharf::transport::tcp
