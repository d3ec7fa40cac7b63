// Address conversions between wharf and a UDP socket's system calls.
#include "transport/udp/udp_addresses.h"

#include <netinet/in.h>

#include <cstring>

namespace wharf::transport::udp {
namespace {

NetAddress UnmappedIpv4(const NetAddress& a, uint16_t port) {
  uint32_t be = 0;
  std::memcpy(&be, &a.ip_bytes()[12], 4);
  return NetAddress::Ipv4(ntohl(be), port);
}

}  // namespace

bool IsV4Mapped(const std::array<uint8_t, 16>& ip) {
  static constexpr uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(ip.data(), kPrefix, sizeof(kPrefix)) == 0;
}

socklen_t ToKernelAddress(const NetAddress& to, bool ipv6_socket, sockaddr_storage* out,
                          bool* ipv4_header) {
  if (ipv6_socket && to.is_v4()) {
    std::array<uint8_t, 16> mapped{};
    mapped[10] = 0xff;
    mapped[11] = 0xff;
    std::memcpy(&mapped[12], to.ip_bytes().data(), 4);
    *ipv4_header = true;
    return static_cast<socklen_t>(NetAddress::Ipv6(mapped, to.port()).ToSockaddr(out));
  }
  *ipv4_header = to.is_v4() || IsV4Mapped(to.ip_bytes());
  return static_cast<socklen_t>(to.ToSockaddr(out));
}

Result<NetAddress> FromKernelAddress(const sockaddr_storage& from, socklen_t len) {
  WHARF_ASSIGN_OR_RETURN(NetAddress address,
                         NetAddress::FromSockaddr(reinterpret_cast<const sockaddr*>(&from), len));
  if (address.is_v6() && IsV4Mapped(address.ip_bytes())) {
    return UnmappedIpv4(address, address.port());
  }
  return address;
}

bool IsLoopbackIp(const NetAddress& a) {
  const std::array<uint8_t, 16>& ip = a.ip_bytes();
  if (a.is_v4()) return ip[0] == 127;
  static constexpr std::array<uint8_t, 16> kV6Loopback = {0, 0, 0, 0, 0, 0, 0, 0,
                                                          0, 0, 0, 0, 0, 0, 0, 1};
  return ip == kV6Loopback || (IsV4Mapped(ip) && ip[12] == 127);
}

NetAddress PathKey(const NetAddress& a) {
  if (a.is_v6() && IsV4Mapped(a.ip_bytes())) return UnmappedIpv4(a, 0);
  return a.WithPort(0);
}

}  // namespace wharf::transport::udp
