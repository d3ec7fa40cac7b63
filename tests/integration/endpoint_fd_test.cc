// Endpoint::fd() in an application's own epoll loop. The header promises
// that fd() is "readable when Poll() has work (packets, timers, wake-ups)";
// these tests wait only on fd() (no periodic tick) and check that timer-driven
// work reaches the application.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "wharf/endpoint.h"

namespace wharf::integration {
namespace {

using namespace std::chrono_literals;

// A bound UDP socket that never reads or answers: a peer that is up but
// silent, so nothing but the client's own timers can end a call to it.
class SilentPeer {
 public:
  SilentPeer() {
    fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (fd_ >= 0 && ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      address_ = "homa://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
    }
  }
  ~SilentPeer() {
    if (fd_ >= 0) ::close(fd_);
  }
  const std::string& address() const { return address_; }

 private:
  int fd_ = -1;
  std::string address_;
};

// Drives `ep` the way an epoll application does: Poll() only when epoll says
// fd() is readable (and once up front if `poll_first`), until `c` is done or
// `bound` passes. Returns how many times fd() was reported readable.
int DriveThroughFd(Endpoint& ep, Completion& c, std::chrono::milliseconds bound,
                   bool poll_first = true) {
  int epfd = ::epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = ep.fd();
  EXPECT_EQ(::epoll_ctl(epfd, EPOLL_CTL_ADD, ep.fd(), &ev), 0);
  int readable = 0;
  if (poll_first) ep.Poll();
  const auto give_up = std::chrono::steady_clock::now() + bound;
  while (!c.done() && std::chrono::steady_clock::now() < give_up) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        give_up - std::chrono::steady_clock::now());
    epoll_event out;
    int n = ::epoll_wait(epfd, &out, 1, static_cast<int>(std::max<int64_t>(left.count(), 0)));
    if (n > 0) {
      ++readable;
      ep.Poll();
    }
  }
  ::close(epfd);
  return readable;
}

// A call's deadline is a timer of the endpoint: when it passes, fd() must
// become readable so that the Poll() that fails the call runs.
TEST(EndpointFd, BecomesReadableWhenACallDeadlineIsDue) {
  SilentPeer peer;
  ASSERT_FALSE(peer.address().empty());
  auto ep = Endpoint::Open({.address = "homa://127.0.0.1:0"});
  ASSERT_TRUE(ep.ok()) << ep.status();
  Completion c = (*ep)->ICall(peer.address(), 1, Buffer::Copy("anyone?"), {.deadline = 100ms});
  DriveThroughFd(**ep, c, 2s);
  ASSERT_TRUE(c.done()) << "the 100 ms deadline passed 1.9 s ago, but fd() never became "
                           "readable for the Poll() that would fail the call";
  EXPECT_EQ(c.status().code(), StatusCode::kDeadlineExceeded) << c.status();
}

// The application issues a call and goes straight to its epoll loop, as the
// header describes ("watch fd() and call Poll() when it is readable"): the
// call's deadline alone must make fd() readable, without a Poll() first.
TEST(EndpointFd, BecomesReadableForADeadlineSetOutsidePoll) {
  SilentPeer peer;
  ASSERT_FALSE(peer.address().empty());
  auto ep = Endpoint::Open({.address = "homa://127.0.0.1:0"});
  ASSERT_TRUE(ep.ok()) << ep.status();
  Completion c = (*ep)->ICall(peer.address(), 1, Buffer::Copy("anyone?"), {.deadline = 100ms});
  DriveThroughFd(**ep, c, 2s, /*poll_first=*/false);
  ASSERT_TRUE(c.done()) << "the 100 ms deadline passed 1.9 s ago, but fd() never became readable";
  EXPECT_EQ(c.status().code(), StatusCode::kDeadlineExceeded) << c.status();
}

// Peer-death detection is timer work too (homa.timeout_ticks of silence).
TEST(EndpointFd, BecomesReadableWhenASilentPeerTimesOut) {
  SilentPeer peer;
  ASSERT_FALSE(peer.address().empty());
  auto ep =
      Endpoint::Open({.address = "homa://127.0.0.1:0", .settings = {{"homa.timeout_ticks", "50"}}});
  ASSERT_TRUE(ep.ok()) << ep.status();
  Completion c = (*ep)->ICall(peer.address(), 1, Buffer::Copy("anyone?"), {.deadline = 0s});
  DriveThroughFd(**ep, c, 2s);
  ASSERT_TRUE(c.done()) << "the peer has been silent for far more than 50 ticks, but fd() never "
                           "became readable for the Poll() that would fail the call";
  EXPECT_EQ(c.status().code(), StatusCode::kUnavailable) << c.status();
}

}  // namespace
}  // namespace wharf::integration
