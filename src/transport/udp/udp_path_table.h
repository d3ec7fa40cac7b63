// transport/udp/udp_path_table.h: UdpPathTable, what a UdpDatagram knows
// about the paths its datagrams take: this host's own addresses (a path to
// one of them, or to loopback, is local and goes through the loopback
// device), which of them belong to software interfaces (veth, tun, dummy,
// vrf: udp_egress_device.h), the loopback route's datagram limit, and a
// cache of what the kernel's route says about each remote IP (its datagram
// limit from the route MTU, and whether it leaves from a software
// interface's address).
//
// It holds no socket of its own (it borrows the datagram's for the driver
// ioctl and opens short-lived probe sockets) and nothing of sending or
// receiving. Remote lookups cost one probe per IP, then a hash lookup;
// local ones never make a system call.
#pragma once

#include <cstddef>
#include <unordered_map>
#include <vector>

#include "transport/net_address.h"
#include "transport/udp/udp_stats.h"

namespace wharf::transport::udp {

// Owned by its UdpDatagram. Not thread-safe: the datagram's one thread calls
// every method. Borrows `stats` (counts path_cache_evictions).
class UdpPathTable {
 public:
  // Remote IPs the cache holds; when full it is cleared (a cap, not an LRU:
  // asking again costs one probe per destination).
  static constexpr size_t kMaxCacheEntries = 4096;

  explicit UdpPathTable(UdpStats* stats) : stats_(*stats) {}
  UdpPathTable(const UdpPathTable&) = delete;
  UdpPathTable& operator=(const UdpPathTable&) = delete;

  // Sets what every path is capped by and reads the host's addresses
  // (Refresh). `fd`: the datagram's socket, for the driver ioctl;
  // `ipv6_only`: the socket speaks IPv6 alone, so local paths are measured
  // over ::1 rather than 127.0.0.1.
  void Open(int fd, size_t max_datagram_bytes, bool ipv6_only);
  // Re-reads the host's interface addresses and the loopback route's limit
  // (getifaddrs and a probe socket), and forgets the remote cache.
  void Refresh();

  // Loopback addresses and this host's own addresses: no system call.
  bool IsLocal(const NetAddress& to) const;
  // The largest datagram towards `to`: the loopback route's for a local
  // path, the route's MTU (cached per IP) otherwise, never above the cap.
  size_t MaxDatagramBytesTo(const NetAddress& to);
  // A local path, or a remote one whose route leaves from an address of a
  // software interface.
  bool IsSoftware(const NetAddress& to);

  size_t cached_remotes() const { return remotes_.size(); }

 private:
  struct RemotePath {
    size_t max_bytes = 0;
    bool software = false;  // leaves from a software interface's address
  };
  // The cached entry for `to` (a remote IP), probing the route on a miss.
  const RemotePath& Remote(const NetAddress& to);

  UdpStats& stats_;
  // Set by Open.
  int fd_ = -1;
  size_t max_datagram_bytes_ = 0;
  bool ipv6_only_ = false;

  // This host's interface IPs (PathKey form), and the subset held by
  // software interfaces, as Refresh last read them.
  std::vector<NetAddress> host_ips_;
  std::vector<NetAddress> software_ips_;
  // The loopback route's datagram limit (bytes), capped.
  size_t local_max_bytes_ = 0;
  // By PathKey of remote IPs; at most kMaxCacheEntries.
  std::unordered_map<NetAddress, RemotePath> remotes_;
};

}  // namespace wharf::transport::udp
