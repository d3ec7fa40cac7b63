// Tests of BackgroundCloser: fds handed over are closed on its thread, a
// close that blocks there does not block the caller, and a lingering TCP
// socket is made to abort instead.
#include "shm/background_closer.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <thread>

namespace wharf::shm {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;


TEST(BackgroundCloser, Close__ClosesOnItsThread) {
  BackgroundCloser closer;
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const int read_end = pipe_fds[0];
  closer.Close(UniqueFd(read_end));
  ASSERT_TRUE(closer.WaitIdle(milliseconds(2000)));
  // The write end sees the reader gone: the read end really was closed.
  ::signal(SIGPIPE, SIG_IGN);
  EXPECT_EQ(::write(pipe_fds[1], "x", 1), -1);
  EXPECT_EQ(errno, EPIPE);
  ::close(pipe_fds[1]);
  EXPECT_EQ(closer.counters().queued, 1u);
  EXPECT_EQ(closer.counters().closed, 1u);
}

TEST(BackgroundCloser, Close__InvalidFdIsIgnored) {
  BackgroundCloser closer;
  closer.Close(UniqueFd());
  EXPECT_EQ(closer.counters().queued, 0u);
}

// A TCP connection nobody reads, with a full send queue and a linger of
// `linger_s` seconds: its last close() would block that long.
struct LingeringSocket {
  UniqueFd listener;
  UniqueFd client;
};

LingeringSocket MakeLingeringSocket(int linger_s) {
  LingeringSocket s;
  s.listener = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  EXPECT_EQ(::bind(s.listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  EXPECT_EQ(::listen(s.listener.get(), 1), 0);
  EXPECT_EQ(::getsockname(s.listener.get(), reinterpret_cast<sockaddr*>(&addr), &len), 0);
  s.client = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const int small = 4096;
  ::setsockopt(s.client.get(), SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  EXPECT_EQ(::connect(s.client.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  // Never accepted, never read: fill the queues until a send would block.
  ::fcntl(s.client.get(), F_SETFL, O_NONBLOCK);
  char chunk[4096] = {};
  while (::send(s.client.get(), chunk, sizeof chunk, MSG_NOSIGNAL) > 0) {
  }
  const linger l{.l_onoff = 1, .l_linger = linger_s};
  EXPECT_EQ(::setsockopt(s.client.get(), SOL_SOCKET, SO_LINGER, &l, sizeof l), 0);
  ::fcntl(s.client.get(), F_SETFL, 0);  // a blocking close honours the linger
  return s;
}

TEST(BackgroundCloser, Close__ALingeringSocketIsAbortedNotWaitedFor) {
  BackgroundCloser closer;
  LingeringSocket s = MakeLingeringSocket(30);
  const auto start = steady_clock::now();
  closer.Close(std::move(s.client));
  ASSERT_TRUE(closer.WaitIdle(milliseconds(5000)));
  EXPECT_LT(steady_clock::now() - start, milliseconds(1000))
      << "a 30 s linger was waited for";
  EXPECT_EQ(closer.counters().sockets_aborted, 1u);
}

TEST(BackgroundCloser, Close__NeverBlocksTheCallerWhileAnotherCloseBlocks) {
  // A Unix socket whose queue holds a lingering TCP socket: closing the
  // Unix socket drops the message, and the TCP socket's last close runs in
  // the closing thread, lingering (the closer cannot reach it to abort it).
  LingeringSocket s = MakeLingeringSocket(2);
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair), 0);
  char data = 'x';
  iovec iov{.iov_base = &data, .iov_len = 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  const int tcp = s.client.get();
  std::memcpy(CMSG_DATA(c), &tcp, sizeof tcp);
  ASSERT_EQ(::sendmsg(pair[0], &msg, 0), 1);
  s.client.Reset();  // the message holds the last reference now
  ::close(pair[0]);

  BackgroundCloser closer(milliseconds(5000));
  const auto start = steady_clock::now();
  closer.Close(UniqueFd(pair[1]));
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  closer.Close(UniqueFd(pipe_fds[0]));
  closer.Close(UniqueFd(pipe_fds[1]));
  EXPECT_LT(steady_clock::now() - start, milliseconds(100)) << "the caller waited";
  ASSERT_TRUE(closer.WaitIdle(milliseconds(10000)));
  EXPECT_EQ(closer.counters().closed, 3u);
}

}  // namespace
}  // namespace wharf::shm
