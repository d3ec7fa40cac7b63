// Reading ICMP reports from a UDP socket's error queue.
#include "transport/udp/udp_path_errors.h"

#include <linux/errqueue.h>
#include <netinet/in.h>
#include <netinet/ip_icmp.h>

#include <cerrno>
#include <cstring>

namespace wharf::transport::udp {
namespace {

// ICMP "destination unreachable" codes that mean a firewall said no
// (RFC 1812: network / host / communication administratively prohibited).
constexpr uint8_t kIcmpNetProhibited = 9;
constexpr uint8_t kIcmpHostProhibited = 10;
constexpr uint8_t kIcmpPacketFiltered = 13;
constexpr uint8_t kIcmp6DstUnreach = 1;
constexpr uint8_t kIcmp6AdminProhibited = 1;
constexpr size_t kMaxReadsPerCall = 64;

// The address as a peer is known by: IPv4 peers of a dual-stack socket
// arrive v4-mapped.
std::optional<NetAddress> Plain(const sockaddr* sa, socklen_t len) {
  Result<NetAddress> a = NetAddress::FromSockaddr(sa, len);
  if (!a.ok()) return std::nullopt;
  const std::array<uint8_t, 16>& ip = a->ip_bytes();
  static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (a->is_v6() && std::memcmp(ip.data(), kMapped, sizeof(kMapped)) == 0) {
    uint32_t be = 0;
    std::memcpy(&be, &ip[12], 4);
    return NetAddress::Ipv4(ntohl(be), a->port());
  }
  return *a;
}

PathError::Kind KindOf(const sock_extended_err& ee) {
  if (ee.ee_origin == SO_EE_ORIGIN_ICMP && ee.ee_type == ICMP_DEST_UNREACH &&
      (ee.ee_code == kIcmpNetProhibited || ee.ee_code == kIcmpHostProhibited ||
       ee.ee_code == kIcmpPacketFiltered)) {
    return PathError::Kind::kProhibited;
  }
  if (ee.ee_origin == SO_EE_ORIGIN_ICMP6 && ee.ee_type == kIcmp6DstUnreach &&
      ee.ee_code == kIcmp6AdminProhibited) {
    return PathError::Kind::kProhibited;
  }
  switch (ee.ee_errno) {
    case ECONNREFUSED: return PathError::Kind::kPortUnreachable;
    case EHOSTUNREACH:
    case EHOSTDOWN: return PathError::Kind::kHostUnreachable;
    case ENETUNREACH:
    case ENETDOWN: return PathError::Kind::kNetUnreachable;
    case EACCES:
    case EPERM: return PathError::Kind::kProhibited;
    default: return PathError::Kind::kOther;
  }
}

}  // namespace

bool EnableRecvErr(int fd, bool ipv6, bool dual_stack) {
  const int one = 1;
  bool ok = true;
  if (!ipv6 || dual_stack) ok = setsockopt(fd, IPPROTO_IP, IP_RECVERR, &one, sizeof(one)) == 0;
  if (ipv6) ok = setsockopt(fd, IPPROTO_IPV6, IPV6_RECVERR, &one, sizeof(one)) == 0 && ok;
  return ok;
}

bool IsPathErrno(int err) {
  return err == ECONNREFUSED || err == EHOSTUNREACH || err == ENETUNREACH || err == EHOSTDOWN ||
         err == ENETDOWN;
}

std::optional<PathError> ParsePathError(const msghdr& msg) {
  for (const cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr;
       c = CMSG_NXTHDR(const_cast<msghdr*>(&msg), const_cast<cmsghdr*>(c))) {
    const bool v4 = c->cmsg_level == SOL_IP && c->cmsg_type == IP_RECVERR;
    const bool v6 = c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_RECVERR;
    if (!v4 && !v6) continue;
    if (c->cmsg_len < CMSG_LEN(sizeof(sock_extended_err))) continue;
    sock_extended_err ee;
    std::memcpy(&ee, CMSG_DATA(c), sizeof(ee));
    if (ee.ee_origin != SO_EE_ORIGIN_ICMP && ee.ee_origin != SO_EE_ORIGIN_ICMP6 &&
        ee.ee_origin != SO_EE_ORIGIN_LOCAL) {
      continue;  // timestamps, zerocopy notices: not about a destination
    }
    std::optional<NetAddress> to =
        Plain(static_cast<const sockaddr*>(msg.msg_name), static_cast<socklen_t>(msg.msg_namelen));
    if (!to) return std::nullopt;
    PathError error;
    error.to = *to;
    error.kind = KindOf(ee);
    error.error = static_cast<int>(ee.ee_errno);
    // The reporter's address follows the struct (SO_EE_OFFENDER), when the
    // control message is long enough to hold one.
    const size_t room = c->cmsg_len - CMSG_LEN(sizeof(sock_extended_err));
    const auto* offender = reinterpret_cast<const sockaddr*>(
        reinterpret_cast<const unsigned char*>(CMSG_DATA(c)) + sizeof(sock_extended_err));
    if (room >= sizeof(sockaddr_in) && offender->sa_family != AF_UNSPEC) {
      const socklen_t len = offender->sa_family == AF_INET6 ? sizeof(sockaddr_in6)
                                                            : sizeof(sockaddr_in);
      if (room >= len) {
        if (std::optional<NetAddress> from = Plain(offender, len)) error.reporter = *from;
      }
    }
    return error;
  }
  return std::nullopt;
}

size_t ReadPathErrors(int fd, std::span<PathError> out, bool* more,
                      const std::function<bool(const TransmitStamp&)>& on_stamp) {
  size_t stored = 0;
  bool empty = false;
  for (size_t reads = 0; reads < kMaxReadsPerCall && stored < out.size(); ++reads) {
    sockaddr_storage name;
    // The start of the offending datagram comes back as data; we need none
    // of it (MSG_TRUNC just says it was cut).
    std::byte data[16];
    iovec iov{data, sizeof(data)};
    alignas(cmsghdr) std::byte control[CMSG_SPACE(sizeof(sock_extended_err) +
                                                  sizeof(sockaddr_in6)) * 2 +
                                       CMSG_SPACE(3 * sizeof(timespec))];
    msghdr msg{};
    msg.msg_name = &name;
    msg.msg_namelen = sizeof(name);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    if (recvmsg(fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) {
      if (errno == EINTR) continue;
      empty = true;  // EAGAIN: the queue is empty
      break;
    }
    if (std::optional<PathError> e = ParsePathError(msg)) {
      out[stored++] = *e;
    } else if (on_stamp) {
      std::optional<TransmitStamp> stamp = ParseTransmitStamp(msg);
      if (stamp.has_value() && !on_stamp(*stamp)) break;  // `empty` stays false
    }
  }
  *more = !empty;
  return stored;
}

}  // namespace wharf::transport::udp
