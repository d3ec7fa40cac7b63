// transport/net_address.h: NetAddress, an IPv4 or IPv6 address plus UDP/TCP
// port, as a small value type (no sockaddr in its interface, so homa/ and the
// fake network can use it without socket headers).
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>

#include "wharf/result.h"

struct sockaddr;
struct sockaddr_storage;

namespace wharf::transport {

class NetAddress {
 public:
  enum class Family : uint8_t { kNone, kIpv4, kIpv6 };

  NetAddress() = default;
  static NetAddress Ipv4(uint32_t host_order_ip, uint16_t port);
  static NetAddress Ipv6(const std::array<uint8_t, 16>& ip, uint16_t port);

  // Parses numeric "1.2.3.4:80", "[::1]:80" (no DNS). A port is required.
  static Result<NetAddress> Parse(std::string_view text);
  // From/to the kernel's socket address; FromSockaddr fails on other families.
  static Result<NetAddress> FromSockaddr(const sockaddr* sa, size_t len);
  // Writes into `out`; returns the length to pass to the kernel.
  size_t ToSockaddr(sockaddr_storage* out) const;

  Family family() const { return family_; }
  bool is_v4() const { return family_ == Family::kIpv4; }
  bool is_v6() const { return family_ == Family::kIpv6; }
  uint16_t port() const { return port_; }
  NetAddress WithPort(uint16_t port) const;
  // IPv4 addresses use the first 4 bytes, network order.
  const std::array<uint8_t, 16>& ip_bytes() const { return ip_; }

  // "1.2.3.4:80" or "[::1]:80"; "none" for a default-constructed address.
  std::string ToString() const;

  friend bool operator==(const NetAddress&, const NetAddress&) = default;
  friend auto operator<=>(const NetAddress&, const NetAddress&) = default;

 private:
  Family family_ = Family::kNone;
  uint16_t port_ = 0;
  std::array<uint8_t, 16> ip_{};
};

}  // namespace wharf::transport

template <>
struct std::hash<wharf::transport::NetAddress> {
  // Word-wise: two multiplies instead of FNV's one per byte (every packet
  // and every answer hashes its peer's address, some more than once).
  size_t operator()(const wharf::transport::NetAddress& a) const noexcept {
    uint64_t lo = 0;
    uint64_t hi = 0;
    std::memcpy(&lo, a.ip_bytes().data(), 8);
    std::memcpy(&hi, a.ip_bytes().data() + 8, 8);
    const uint64_t tag =
        uint64_t{a.port()} << 48 | uint64_t{static_cast<uint8_t>(a.family())} << 40;
    uint64_t h = (lo ^ tag) * 0x9E3779B97F4A7C15ULL;
    h ^= hi + 0x632BE59BD9B4E019ULL + (h << 6) + (h >> 2);
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 32;
    return static_cast<size_t>(h);
  }
};
