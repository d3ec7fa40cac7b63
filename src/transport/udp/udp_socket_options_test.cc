// Unit tests of the UDP socket-option helpers: cmsg encoding and decoding
// (pure), and buffer sizing on a real, unbound UDP socket.
#include "transport/udp/udp_socket_options.h"

#include <gtest/gtest.h>
#include <linux/net_tstamp.h>
#include <unistd.h>

#include <cstring>

namespace wharf::transport::udp {
namespace {

template <typename T>
T CmsgValue(const cmsghdr* cmsg) {
  T value{};
  std::memcpy(&value, CMSG_DATA(cmsg), sizeof(value));
  return value;
}

msghdr MsgOver(std::byte* control, size_t len) {
  msghdr msg{};
  msg.msg_control = control;
  msg.msg_controllen = len;
  return msg;
}

TEST(WriteSendControlTest, NothingNeededWritesNothing) {
  alignas(cmsghdr) std::byte control[kSendControlBytes];
  EXPECT_EQ(WriteSendControl(control, 0, kSocketTos, true), 0u);
  EXPECT_EQ(WriteSendControl(control, 0, kSocketTos, false), 0u);
}

TEST(WriteSendControlTest, GsoOnly) {
  alignas(cmsghdr) std::byte control[kSendControlBytes];
  size_t len = WriteSendControl(control, 1400, kSocketTos, true);
  ASSERT_EQ(len, CMSG_SPACE(sizeof(uint16_t)));
  msghdr msg = MsgOver(control, len);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->cmsg_level, IPPROTO_UDP);
  EXPECT_EQ(c->cmsg_type, UDP_SEGMENT);
  EXPECT_EQ(c->cmsg_len, CMSG_LEN(sizeof(uint16_t)));
  EXPECT_EQ(CmsgValue<uint16_t>(c), 1400);
  EXPECT_EQ(CMSG_NXTHDR(&msg, c), nullptr);
}

TEST(WriteSendControlTest, TosOnlyIpv4AndIpv6) {
  alignas(cmsghdr) std::byte control[kSendControlBytes];
  size_t len = WriteSendControl(control, 0, 0xb8, true);
  ASSERT_EQ(len, CMSG_SPACE(sizeof(int)));
  msghdr msg = MsgOver(control, len);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->cmsg_level, IPPROTO_IP);
  EXPECT_EQ(c->cmsg_type, IP_TOS);
  EXPECT_EQ(CmsgValue<int>(c), 0xb8);

  len = WriteSendControl(control, 0, 0x20, false);
  ASSERT_EQ(len, CMSG_SPACE(sizeof(int)));
  msg = MsgOver(control, len);
  c = CMSG_FIRSTHDR(&msg);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->cmsg_level, IPPROTO_IPV6);
  EXPECT_EQ(c->cmsg_type, IPV6_TCLASS);
  EXPECT_EQ(CmsgValue<int>(c), 0x20);
}

TEST(WriteSendControlTest, ZeroTosIsWrittenWhenTheSocketHasAnother) {
  alignas(cmsghdr) std::byte control[kSendControlBytes];
  size_t len = WriteSendControl(control, 0, 0, true);
  ASSERT_EQ(len, CMSG_SPACE(sizeof(int)));
  msghdr msg = MsgOver(control, len);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->cmsg_type, IP_TOS);
  EXPECT_EQ(CmsgValue<int>(c), 0);
}

// All three control messages fit: GSO, the TOS and the transmit stamp's
// request (never sent together by UdpDatagram, which sends a stamped
// datagram alone, but the room is there).
TEST(WriteSendControlTest, GsoTosAndStampFillTheWholeBuffer) {
  alignas(cmsghdr) std::byte control[kSendControlBytes];
  size_t len = WriteSendControl(control, 8972, 0x04, true, /*stamp=*/true);
  ASSERT_EQ(len, kSendControlBytes);
  msghdr msg = MsgOver(control, len);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->cmsg_type, UDP_SEGMENT);
  EXPECT_EQ(CmsgValue<uint16_t>(c), 8972);
  c = CMSG_NXTHDR(&msg, c);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->cmsg_level, IPPROTO_IP);
  EXPECT_EQ(c->cmsg_type, IP_TOS);
  EXPECT_EQ(CmsgValue<int>(c), 0x04);
  c = CMSG_NXTHDR(&msg, c);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->cmsg_level, SOL_SOCKET);
  EXPECT_EQ(c->cmsg_type, SO_TIMESTAMPING);
  EXPECT_EQ(CmsgValue<int>(c), SOF_TIMESTAMPING_TX_SOFTWARE);
}

// Builds a received message's control area: optionally an IP_TOS cmsg first,
// then optionally a UDP_GRO cmsg carrying `segment`.
size_t BuildReceiveControl(std::byte* control, bool tos_first, bool with_gro, int segment) {
  msghdr msg = MsgOver(control, kReceiveControlBytes);
  std::memset(control, 0, kReceiveControlBytes);
  size_t used = 0;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  if (tos_first) {
    c->cmsg_level = IPPROTO_IP;
    c->cmsg_type = IP_TOS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    int tos = 0x10;
    std::memcpy(CMSG_DATA(c), &tos, sizeof(tos));
    used += CMSG_SPACE(sizeof(int));
    msg.msg_controllen = used + CMSG_SPACE(sizeof(int));
    c = CMSG_NXTHDR(&msg, c);
  }
  if (with_gro) {
    c->cmsg_level = IPPROTO_UDP;
    c->cmsg_type = UDP_GRO;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &segment, sizeof(segment));
    used += CMSG_SPACE(sizeof(int));
  }
  return used;
}

TEST(ReadGroSegmentBytesTest, FindsTheGroSegmentSize) {
  alignas(cmsghdr) std::byte control[kReceiveControlBytes];
  size_t len = BuildReceiveControl(control, false, true, 1472);
  EXPECT_EQ(ReadGroSegmentBytes(MsgOver(control, len)), std::optional<size_t>(1472));
  len = BuildReceiveControl(control, /*tos_first=*/true, true, 1200);
  EXPECT_EQ(ReadGroSegmentBytes(MsgOver(control, len)), std::optional<size_t>(1200));
}

TEST(ReadGroSegmentBytesTest, NoneWhenAbsentOrNotPositive) {
  alignas(cmsghdr) std::byte control[kReceiveControlBytes];
  EXPECT_EQ(ReadGroSegmentBytes(MsgOver(control, 0)), std::nullopt);
  msghdr none{};
  EXPECT_EQ(ReadGroSegmentBytes(none), std::nullopt);
  size_t len = BuildReceiveControl(control, true, false, 0);
  EXPECT_EQ(ReadGroSegmentBytes(MsgOver(control, len)), std::nullopt);
  len = BuildReceiveControl(control, false, true, 0);
  EXPECT_EQ(ReadGroSegmentBytes(MsgOver(control, len)), std::nullopt);
  len = BuildReceiveControl(control, false, true, -5);
  EXPECT_EQ(ReadGroSegmentBytes(MsgOver(control, len)), std::nullopt);
}

TEST(SetBufferBytesTest, SizesAUdpSocketAndReportsTheResult) {
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  ASSERT_GE(fd, 0);
  Result<int> rcv = SetBufferBytes(fd, BufferKind::kReceive, 64 * 1024);
  ASSERT_TRUE(rcv.ok()) << rcv.status().ToString();
  int actual = 0;
  socklen_t len = sizeof(actual);
  ASSERT_EQ(getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &actual, &len), 0);
  EXPECT_EQ(*rcv, actual);
  EXPECT_GT(*rcv, 0);
  Result<int> snd = SetBufferBytes(fd, BufferKind::kSend, 64 * 1024);
  ASSERT_TRUE(snd.ok()) << snd.status().ToString();
  EXPECT_GT(*snd, 0);
  close(fd);
}

TEST(SetBufferBytesTest, BadDescriptorIsAnErrorNamingTheOption) {
  Result<int> r = SetBufferBytes(-1, BufferKind::kReceive, 4096);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("SO_RCVBUF"), std::string::npos) << r.status().message();
  Result<int> s = SetBufferBytes(-1, BufferKind::kSend, 4096);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("SO_SNDBUF"), std::string::npos) << s.status().message();
}

TEST(SocketProbesTest, BadDescriptorIsRefused) {
  EXPECT_FALSE(ProbeGso(-1));
  EXPECT_FALSE(EnableGro(-1));
  EXPECT_FALSE(SetSocketTos(-1, true, 0xe0));
  EXPECT_FALSE(SetDontFragment(-1, false));
}

TEST(SetDontFragmentTest, Ipv4AndIpv6SocketsProbeAtTheDeviceMtu) {
  int v4 = socket(AF_INET, SOCK_DGRAM, 0);
  ASSERT_GE(v4, 0);
  ASSERT_TRUE(SetDontFragment(v4, false));
  int mode = -1;
  socklen_t len = sizeof(mode);
  ASSERT_EQ(getsockopt(v4, IPPROTO_IP, IP_MTU_DISCOVER, &mode, &len), 0);
  EXPECT_EQ(mode, IP_PMTUDISC_PROBE);
  close(v4);

  int v6 = socket(AF_INET6, SOCK_DGRAM, 0);
  if (v6 < 0) GTEST_SKIP() << "no IPv6 here";
  ASSERT_TRUE(SetDontFragment(v6, true));
  len = sizeof(mode);
  ASSERT_EQ(getsockopt(v6, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &mode, &len), 0);
  EXPECT_EQ(mode, IPV6_PMTUDISC_PROBE);
  close(v6);
}

TEST(SetSocketTosTest, SetsTheIpv4TosTheSocketReports) {
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(SetSocketTos(fd, true, 0xe0));
  int tos = 0;
  socklen_t len = sizeof(tos);
  ASSERT_EQ(getsockopt(fd, IPPROTO_IP, IP_TOS, &tos, &len), 0);
  EXPECT_EQ(tos, 0xe0);
  close(fd);
}

}  // namespace
}  // namespace wharf::transport::udp
