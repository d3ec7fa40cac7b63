// UdpPathTable: local addresses, software interfaces and route probes.
#include "transport/udp/udp_path_table.h"

#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include "transport/udp/udp_addresses.h"
#include "transport/udp/udp_egress_device.h"

namespace wharf::transport::udp {
namespace {

constexpr size_t kUdpHeaderBytes = 8;

// What the kernel's route towards `to` says (connect() on a UDP socket only
// looks up the route; nothing is sent): its datagram limit from IP_MTU, at
// most `limit`, and the source address it would use (kNone if unknown).
struct Route {
  size_t max_bytes;
  NetAddress source;
};
Route RouteTo(const NetAddress& to, size_t limit) {
  Route route{limit, NetAddress()};
  const bool v6 = to.is_v6();
  int probe = socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_UDP);
  if (probe < 0) return route;
  sockaddr_storage address;
  auto len =
      static_cast<socklen_t>(to.WithPort(to.port() == 0 ? 9 : to.port()).ToSockaddr(&address));
  int mtu = 0;
  socklen_t mtu_len = sizeof(mtu);
  if (connect(probe, reinterpret_cast<const sockaddr*>(&address), len) == 0) {
    if (getsockopt(probe, v6 ? IPPROTO_IPV6 : IPPROTO_IP, v6 ? IPV6_MTU : IP_MTU, &mtu, &mtu_len) ==
            0 &&
        mtu > 0) {
      const size_t headers = (v6 ? 40 : 20) + kUdpHeaderBytes;
      if (static_cast<size_t>(mtu) > headers) {
        route.max_bytes = std::min(route.max_bytes, static_cast<size_t>(mtu) - headers);
      }
    }
    sockaddr_storage source;
    socklen_t source_len = sizeof(source);
    if (getsockname(probe, reinterpret_cast<sockaddr*>(&source), &source_len) == 0) {
      Result<NetAddress> from =
          NetAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&source), source_len);
      if (from.ok()) route.source = PathKey(*from);
    }
  }
  close(probe);
  return route;
}

}  // namespace

void UdpPathTable::Open(int fd, size_t max_datagram_bytes, bool ipv6_only) {
  fd_ = fd;
  max_datagram_bytes_ = max_datagram_bytes;
  ipv6_only_ = ipv6_only;
  Refresh();
}

void UdpPathTable::Refresh() {
  host_ips_.clear();
  software_ips_.clear();
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) == 0) {
    for (const ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
      const sockaddr* sa = i->ifa_addr;
      if (sa == nullptr || (sa->sa_family != AF_INET && sa->sa_family != AF_INET6)) continue;
      const socklen_t len = sa->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
      Result<NetAddress> mine = NetAddress::FromSockaddr(sa, len);
      if (!mine.ok()) continue;
      host_ips_.push_back(PathKey(*mine));
      if (IsSoftwareDriver(InterfaceDriver(fd_, i->ifa_name))) {
        software_ips_.push_back(PathKey(*mine));
      }
    }
    freeifaddrs(list);
  }
  // Every local path goes through the loopback device, whatever address it
  // names, so one route answers for all of them.
  local_max_bytes_ =
      RouteTo(ipv6_only_ ? NetAddress::Ipv6({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 9)
                         : NetAddress::Ipv4(0x7f000001, 9),
              max_datagram_bytes_)
          .max_bytes;
  remotes_.clear();
}

bool UdpPathTable::IsLocal(const NetAddress& to) const {
  if (IsLoopbackIp(to)) return true;
  const NetAddress key = PathKey(to);
  return std::find(host_ips_.begin(), host_ips_.end(), key) != host_ips_.end();
}

size_t UdpPathTable::MaxDatagramBytesTo(const NetAddress& to) {
  if (IsLocal(to)) return local_max_bytes_;
  return Remote(to).max_bytes;
}

bool UdpPathTable::IsSoftware(const NetAddress& to) { return IsLocal(to) || Remote(to).software; }

const UdpPathTable::RemotePath& UdpPathTable::Remote(const NetAddress& to) {
  const NetAddress key = PathKey(to);
  auto cached = remotes_.find(key);
  if (cached != remotes_.end()) return cached->second;
  if (remotes_.size() >= kMaxCacheEntries) {
    stats_.path_cache_evictions += remotes_.size();
    remotes_.clear();
  }
  const Route route = RouteTo(to, max_datagram_bytes_);
  RemotePath path{.max_bytes = route.max_bytes, .software = false};
  if (route.source.family() != NetAddress::Family::kNone) {
    path.software =
        std::find(software_ips_.begin(), software_ips_.end(), route.source) != software_ips_.end();
  }
  return remotes_.emplace(key, path).first->second;
}

}  // namespace wharf::transport::udp
