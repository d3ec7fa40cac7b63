// Socket-option probes and cmsg encoding for UdpDatagram.
#include "transport/udp/udp_socket_options.h"

#include <linux/net_tstamp.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace wharf::transport::udp {

Result<int> SetBufferBytes(int fd, BufferKind kind, int bytes) {
  const bool receive = kind == BufferKind::kReceive;
  const int force_opt = receive ? SO_RCVBUFFORCE : SO_SNDBUFFORCE;
  const int plain_opt = receive ? SO_RCVBUF : SO_SNDBUF;
  const char* name = receive ? "SO_RCVBUF" : "SO_SNDBUF";
  if (setsockopt(fd, SOL_SOCKET, force_opt, &bytes, sizeof(bytes)) != 0) {
    // EPERM without CAP_NET_ADMIN is the expected case: the plain option
    // still works, clamped to net.core.[rw]mem_max.
    if (setsockopt(fd, SOL_SOCKET, plain_opt, &bytes, sizeof(bytes)) != 0) {
      return ErrnoToStatus(errno, std::string("setsockopt ") + name + " " + std::to_string(bytes));
    }
  }
  int actual = 0;
  socklen_t len = sizeof(actual);
  if (getsockopt(fd, SOL_SOCKET, plain_opt, &actual, &len) != 0) {
    return ErrnoToStatus(errno, std::string("getsockopt ") + name);
  }
  return actual;
}

bool ProbeGso(int fd) {
  int zero = 0;
  return setsockopt(fd, IPPROTO_UDP, UDP_SEGMENT, &zero, sizeof(zero)) == 0;
}

bool EnableGro(int fd) {
  int one = 1;
  return setsockopt(fd, IPPROTO_UDP, UDP_GRO, &one, sizeof(one)) == 0;
}

size_t WriteSendControl(std::byte* control, uint16_t gso_size, int tos, bool ipv4_header,
                        bool stamp) {
  // CMSG_FIRSTHDR/NXTHDR need a msghdr to walk; a local one describing the
  // caller's buffer is enough.
  msghdr msg{};
  msg.msg_control = control;
  msg.msg_controllen = kSendControlBytes;
  std::memset(control, 0, kSendControlBytes);
  size_t used = 0;
  cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
  if (gso_size != 0) {
    cmsg->cmsg_level = IPPROTO_UDP;
    cmsg->cmsg_type = UDP_SEGMENT;
    cmsg->cmsg_len = CMSG_LEN(sizeof(uint16_t));
    std::memcpy(CMSG_DATA(cmsg), &gso_size, sizeof(gso_size));
    used += CMSG_SPACE(sizeof(uint16_t));
    cmsg = CMSG_NXTHDR(&msg, cmsg);
  }
  if (tos != kSocketTos) {
    const int value = tos;
    cmsg->cmsg_level = ipv4_header ? IPPROTO_IP : IPPROTO_IPV6;
    cmsg->cmsg_type = ipv4_header ? IP_TOS : IPV6_TCLASS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(cmsg), &value, sizeof(value));
    used += CMSG_SPACE(sizeof(int));
    cmsg = CMSG_NXTHDR(&msg, cmsg);
  }
  if (stamp) {
    const int flags = SOF_TIMESTAMPING_TX_SOFTWARE;
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SO_TIMESTAMPING;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(cmsg), &flags, sizeof(flags));
    used += CMSG_SPACE(sizeof(int));
  }
  return used;
}

bool SetSocketTos(int fd, bool ipv4_header, uint8_t tos) {
  const int value = tos;
  return setsockopt(fd, ipv4_header ? IPPROTO_IP : IPPROTO_IPV6, ipv4_header ? IP_TOS : IPV6_TCLASS,
                    &value, sizeof(value)) == 0;
}

bool SetDontFragment(int fd, bool ipv6) {
  const int v4 = IP_PMTUDISC_PROBE;
  bool ok = setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &v4, sizeof(v4)) == 0;
  if (ipv6) {
    // A dual-stack socket's IPv4 packets follow IP_MTU_DISCOVER, which a v6
    // socket may refuse when it is v6-only; its own packets follow this one.
    const int v6 = IPV6_PMTUDISC_PROBE;
    ok = setsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &v6, sizeof(v6)) == 0;
  }
  return ok;
}

int64_t RealtimeToMonotonicNs() {
  timespec mono{};
  timespec real{};
  ::clock_gettime(CLOCK_MONOTONIC, &mono);
  ::clock_gettime(CLOCK_REALTIME, &real);
  return (int64_t{mono.tv_sec} - real.tv_sec) * 1'000'000'000 + (mono.tv_nsec - real.tv_nsec);
}

bool EnableTimestamps(int fd, bool receive, bool transmit) {
  int flags = 0;
  if (receive) flags |= SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;
  if (transmit) {
    flags |= SOF_TIMESTAMPING_SOFTWARE | SOF_TIMESTAMPING_OPT_ID | SOF_TIMESTAMPING_OPT_TSONLY;
  }
  return ::setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof(flags)) == 0;
}

bool EnableReceiveTimestamps(int fd) {
  const int flags = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;
  return ::setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof(flags)) == 0;
}

std::optional<int64_t> ReadSoftwareTimestamp(const msghdr& msg) {
  for (const cmsghdr* cmsg = CMSG_FIRSTHDR(&msg); cmsg != nullptr;
       cmsg = CMSG_NXTHDR(const_cast<msghdr*>(&msg), const_cast<cmsghdr*>(cmsg))) {
    if (cmsg->cmsg_level == SOL_SOCKET && cmsg->cmsg_type == SCM_TIMESTAMPING &&
        cmsg->cmsg_len >= CMSG_LEN(3 * sizeof(timespec))) {
      // ts[0] is the software stamp; ts[2], the hardware one, is not asked for.
      timespec ts[3];
      std::memcpy(ts, CMSG_DATA(cmsg), sizeof(ts));
      if (ts[0].tv_sec == 0 && ts[0].tv_nsec == 0) return std::nullopt;
      return int64_t{ts[0].tv_sec} * 1'000'000'000 + ts[0].tv_nsec;
    }
  }
  return std::nullopt;
}

std::optional<size_t> ReadGroSegmentBytes(const msghdr& msg) {
  for (const cmsghdr* cmsg = CMSG_FIRSTHDR(&msg); cmsg != nullptr;
       cmsg = CMSG_NXTHDR(const_cast<msghdr*>(&msg), const_cast<cmsghdr*>(cmsg))) {
    if (cmsg->cmsg_level == IPPROTO_UDP && cmsg->cmsg_type == UDP_GRO &&
        cmsg->cmsg_len >= CMSG_LEN(sizeof(int))) {
      int segment = 0;
      std::memcpy(&segment, CMSG_DATA(cmsg), sizeof(segment));
      if (segment > 0) return static_cast<size_t>(segment);
    }
  }
  return std::nullopt;
}

}  // namespace wharf::transport::udp
