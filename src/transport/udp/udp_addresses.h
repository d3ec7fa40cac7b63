// transport/udp/udp_addresses.h: addresses as a UDP socket's system calls
// see them. A dual-stack IPv6 socket (UdpOptions::ipv6_only false) names
// IPv4 peers v4-mapped (::ffff:a.b.c.d); wharf names them as plain IPv4
// everywhere else, so that one peer has one NetAddress. Also the loopback
// test and the key of the per-destination path caches. Pure functions, no
// state.
#pragma once

#include <sys/socket.h>

#include <array>
#include <cstdint>

#include "transport/net_address.h"
#include "wharf/result.h"

namespace wharf::transport::udp {

// ::ffff:0:0/96.
bool IsV4Mapped(const std::array<uint8_t, 16>& ip);

// Writes `to` as the kernel wants it for a socket of the given family
// (v4-mapped for an IPv4 peer of an IPv6 socket); returns the address
// length. *ipv4_header says whether the packet leaves with an IPv4 header,
// which decides the TOS control message's level.
socklen_t ToKernelAddress(const NetAddress& to, bool ipv6_socket, sockaddr_storage* out,
                          bool* ipv4_header);

// The reverse: a source address from the kernel, IPv4 peers of a dual-stack
// socket as plain IPv4.
Result<NetAddress> FromKernelAddress(const sockaddr_storage& from, socklen_t len);

// 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104.
bool IsLoopbackIp(const NetAddress& a);

// `a` with port 0 and, when v4-mapped, as plain IPv4: the key of the path
// caches, which do not depend on the port.
NetAddress PathKey(const NetAddress& a);

}  // namespace wharf::transport::udp
