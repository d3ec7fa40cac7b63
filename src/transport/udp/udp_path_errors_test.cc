// Tests for reading ICMP reports: the decoder on a hand-built error-queue
// message, and UdpDatagram::TakePathErrors over real loopback sockets, where
// a datagram to a closed port draws a real "port unreachable".
#include "transport/udp/udp_path_errors.h"

#include <gtest/gtest.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <netinet/ip_icmp.h>
#include <poll.h>

#include <cerrno>
#include <cstring>

#include "transport/udp/udp_datagram.h"
#include "transport/udp/udp_test_support.h"

namespace wharf::transport {
namespace {

using udp_testing::Family;
using udp_testing::Loopback;
using udp_testing::MakeOutgoing;
using udp_testing::MustOpen;
using udp_testing::OptionsFor;
using udp_testing::SendAll;

TEST(ParsePathErrorTest, DecodesAnIcmpPortUnreachable) {
  sockaddr_storage name;
  const NetAddress dest = NetAddress::Ipv4(0x7f000005, 4321);
  socklen_t name_len = static_cast<socklen_t>(dest.ToSockaddr(&name));
  alignas(cmsghdr) std::byte control[CMSG_SPACE(sizeof(sock_extended_err) + sizeof(sockaddr_in))];
  msghdr msg{};
  msg.msg_name = &name;
  msg.msg_namelen = name_len;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_IP;
  c->cmsg_type = IP_RECVERR;
  c->cmsg_len = CMSG_LEN(sizeof(sock_extended_err) + sizeof(sockaddr_in));
  sock_extended_err ee{};
  ee.ee_errno = ECONNREFUSED;
  ee.ee_origin = SO_EE_ORIGIN_ICMP;
  ee.ee_type = ICMP_DEST_UNREACH;
  ee.ee_code = ICMP_PORT_UNREACH;
  std::memcpy(CMSG_DATA(c), &ee, sizeof(ee));
  sockaddr_storage offender;
  NetAddress::Ipv4(0x7f000005, 0).ToSockaddr(&offender);
  std::memcpy(reinterpret_cast<unsigned char*>(CMSG_DATA(c)) + sizeof(ee), &offender,
              sizeof(sockaddr_in));

  std::optional<PathError> e = udp::ParsePathError(msg);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->to, dest);
  EXPECT_EQ(e->kind, PathError::Kind::kPortUnreachable);
  EXPECT_EQ(e->error, ECONNREFUSED);
  EXPECT_EQ(e->reporter, NetAddress::Ipv4(0x7f000005, 0));
  EXPECT_TRUE(e->unreachable());
}

TEST(ParsePathErrorTest, IgnoresOtherControlMessagesAndKnowsProhibited) {
  sockaddr_storage name;
  const NetAddress dest = NetAddress::Ipv4(0x0a000001, 80);
  socklen_t name_len = static_cast<socklen_t>(dest.ToSockaddr(&name));
  alignas(cmsghdr) std::byte control[CMSG_SPACE(sizeof(sock_extended_err))];
  msghdr msg{};
  msg.msg_name = &name;
  msg.msg_namelen = name_len;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_IP;
  c->cmsg_type = IP_RECVERR;
  c->cmsg_len = CMSG_LEN(sizeof(sock_extended_err));
  sock_extended_err ee{};
  ee.ee_errno = EHOSTUNREACH;
  ee.ee_origin = SO_EE_ORIGIN_ICMP;
  ee.ee_type = ICMP_DEST_UNREACH;
  ee.ee_code = 13;  // communication administratively prohibited
  std::memcpy(CMSG_DATA(c), &ee, sizeof(ee));
  std::optional<PathError> e = udp::ParsePathError(msg);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->kind, PathError::Kind::kProhibited);
  EXPECT_EQ(e->reporter.family(), NetAddress::Family::kNone);

  ee.ee_origin = SO_EE_ORIGIN_TIMESTAMPING;
  std::memcpy(CMSG_DATA(c), &ee, sizeof(ee));
  EXPECT_FALSE(udp::ParsePathError(msg).has_value());
}

// A port that was just ours and is now closed.
uint16_t ClosedPort(Family family) {
  auto gone = MustOpen(OptionsFor(family));
  return gone ? gone->LocalAddress().port() : 0;
}

// Polls the sender's sockets until one reports POLLERR / POLLIN or a few
// seconds pass, then lets Receive meet the kernel's error.
std::vector<PathError> WaitForPathErrors(UdpDatagram& sender) {
  std::vector<PathError> got(8);
  for (int attempt = 0; attempt < 50; ++attempt) {
    std::vector<InDatagram> in(4);
    (void)sender.Receive(in);
    size_t n = sender.TakePathErrors(got);
    if (n > 0) {
      got.resize(n);
      return got;
    }
    pollfd fds[2] = {{sender.ReadableFd(), POLLIN, 0}, {sender.hot_fd(), POLLIN, 0}};
    (void)poll(fds, sender.hot_fd() >= 0 ? 2 : 1, 100);
  }
  return {};
}

TEST(UdpPathErrorsTest, NothingPendingReadsNothing) {
  auto sender = MustOpen(OptionsFor(Family::kIpv4));
  ASSERT_TRUE(sender);
  std::vector<PathError> out(4);
  EXPECT_EQ(sender->TakePathErrors(out), 0u);
  EXPECT_EQ(sender->stats().path_errors, 0u);
}

TEST(UdpPathErrorsTest, DatagramToAClosedPortReportsPortUnreachable) {
  auto sender = MustOpen(OptionsFor(Family::kIpv4));
  ASSERT_TRUE(sender);
  const NetAddress closed = Loopback(Family::kIpv4, ClosedPort(Family::kIpv4));
  auto out = MakeOutgoing(closed, {20});
  SendAll(*sender, out.datagrams);
  std::vector<PathError> errors = WaitForPathErrors(*sender);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].to, closed);
  EXPECT_EQ(errors[0].kind, PathError::Kind::kPortUnreachable);
  EXPECT_EQ(errors[0].error, ECONNREFUSED);
  EXPECT_EQ(sender->stats().path_errors, 1u);
  // Drained: nothing more, and the socket no longer polls with an error.
  std::vector<PathError> more(4);
  EXPECT_EQ(sender->TakePathErrors(more), 0u);
  pollfd pfd{sender->ReadableFd(), POLLIN, 0};
  EXPECT_EQ(poll(&pfd, 1, 0), 0);
}

// Transmit stamps and ICMP reports share the error queue: whichever read
// meets the other's entry keeps it, so neither is lost.
TEST(UdpPathErrorsTest, AStampAndAReportInOneErrorQueueBothArrive) {
  UdpOptions options = OptionsFor(Family::kIpv4);
  options.tx_timestamps = true;
  options.hot_peer_socket = false;
  auto sender = MustOpen(options);
  ASSERT_TRUE(sender);
  const NetAddress closed = Loopback(Family::kIpv4, ClosedPort(Family::kIpv4));
  auto out = MakeOutgoing(closed, {20});
  out.datagrams[0].departure_token = 5;
  SendAll(*sender, out.datagrams);
  // The report follows the stamp (the ICMP comes back from the loopback).
  pollfd pfd{sender->ReadableFd(), POLLIN, 0};
  (void)poll(&pfd, 1, 1000);
  std::vector<Departure> departures(4);
  departures.resize(sender->TakeDepartures(departures));
  ASSERT_EQ(departures.size(), 1u);
  EXPECT_EQ(departures[0].token, 5u);
  // The departures' read met the report and kept it.
  std::vector<PathError> errors = WaitForPathErrors(*sender);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].to, closed);
  EXPECT_EQ(errors[0].kind, PathError::Kind::kPortUnreachable);
  // The other way round: a report read first keeps the stamp behind it.
  auto again = MakeOutgoing(closed, {20});
  again.datagrams[0].departure_token = 6;
  SendAll(*sender, again.datagrams);
  errors = WaitForPathErrors(*sender);
  ASSERT_EQ(errors.size(), 1u);
  departures.assign(4, {});
  departures.resize(sender->TakeDepartures(departures));
  ASSERT_EQ(departures.size(), 1u);
  EXPECT_EQ(departures[0].token, 6u);
}

TEST(UdpPathErrorsTest, Ipv6ClosedPortReportsPortUnreachable) {
  if (!udp_testing::Ipv6LoopbackUsable()) GTEST_SKIP() << "no IPv6 loopback";
  auto sender = MustOpen(OptionsFor(Family::kIpv6));
  ASSERT_TRUE(sender);
  const NetAddress closed = Loopback(Family::kIpv6, ClosedPort(Family::kIpv6));
  auto out = MakeOutgoing(closed, {20});
  SendAll(*sender, out.datagrams);
  std::vector<PathError> errors = WaitForPathErrors(*sender);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].to, closed);
  EXPECT_EQ(errors[0].kind, PathError::Kind::kPortUnreachable);
}

// The connected hot-peer socket hears of its peer's death too.
TEST(UdpPathErrorsTest, HotPeerSocketReportsItsPeersDeath) {
  auto sender = MustOpen(OptionsFor(Family::kIpv4));
  auto receiver = MustOpen(OptionsFor(Family::kIpv4));
  ASSERT_TRUE(sender && receiver);
  const NetAddress to = receiver->LocalAddress();
  auto out = MakeOutgoing(to, {10});
  for (size_t i = 0; i < UdpDatagram::kHotAfterSends; ++i) SendAll(*sender, out.datagrams);
  ASSERT_GE(sender->hot_fd(), 0);
  (void)udp_testing::ReceiveUpTo(*receiver, UdpDatagram::kHotAfterSends);
  receiver.reset();
  SendAll(*sender, out.datagrams);
  std::vector<PathError> errors = WaitForPathErrors(*sender);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].to, to);
  EXPECT_EQ(errors[0].kind, PathError::Kind::kPortUnreachable);
}

TEST(UdpPathsTest, LoopbackAndHostAddressesAreLocalWithoutAskingTheKernel) {
  auto sender = MustOpen(OptionsFor(Family::kIpv4));
  ASSERT_TRUE(sender);
  EXPECT_TRUE(sender->IsLocalPath(NetAddress::Ipv4(0x7f010203, 5)));
  EXPECT_FALSE(sender->IsLocalPath(NetAddress::Ipv4(0xC6120063, 5)));  // 198.18.0.99
  EXPECT_EQ(sender->MaxDatagramBytesTo(NetAddress::Ipv4(0x7f000001, 5)),
            sender->MaxDatagramBytes());
}

}  // namespace
}  // namespace wharf::transport
