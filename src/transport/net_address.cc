// NetAddress parsing and conversion to/from kernel socket addresses.
#include "transport/net_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <charconv>
#include <cstring>

namespace wharf::transport {
namespace {

Result<uint16_t> ParsePort(std::string_view text, std::string_view whole) {
  unsigned value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || value > 65535) {
    return InvalidArgumentError("address '" + std::string(whole) +
                                "': expected a port from 0 to 65535 after ':', got '" +
                                std::string(text) + "'");
  }
  return static_cast<uint16_t>(value);
}

}  // namespace

NetAddress NetAddress::Ipv4(uint32_t host_order_ip, uint16_t port) {
  NetAddress a;
  a.family_ = Family::kIpv4;
  a.port_ = port;
  uint32_t be = htonl(host_order_ip);
  std::memcpy(a.ip_.data(), &be, 4);
  return a;
}

NetAddress NetAddress::Ipv6(const std::array<uint8_t, 16>& ip, uint16_t port) {
  NetAddress a;
  a.family_ = Family::kIpv6;
  a.port_ = port;
  a.ip_ = ip;
  return a;
}

Result<NetAddress> NetAddress::Parse(std::string_view text) {
  std::string host;
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return InvalidArgumentError("address '" + std::string(text) +
                                  "': expected '[ipv6]:port'");
    }
    host = std::string(text.substr(1, close - 1));
    port_text = text.substr(close + 2);
    WHARF_ASSIGN_OR_RETURN(uint16_t port, ParsePort(port_text, text));
    std::array<uint8_t, 16> ip;
    if (inet_pton(AF_INET6, host.c_str(), ip.data()) != 1) {
      return InvalidArgumentError("address '" + std::string(text) + "': '" + host +
                                  "' is not a numeric IPv6 address");
    }
    return Ipv6(ip, port);
  }
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    return InvalidArgumentError("address '" + std::string(text) +
                                "': expected 'host:port' or '[ipv6]:port'");
  }
  host = std::string(text.substr(0, colon));
  WHARF_ASSIGN_OR_RETURN(uint16_t port, ParsePort(text.substr(colon + 1), text));
  in_addr v4;
  if (inet_pton(AF_INET, host.c_str(), &v4) != 1) {
    return InvalidArgumentError("address '" + std::string(text) + "': '" + host +
                                "' is not a numeric IPv4 address (use [..] for IPv6)");
  }
  return Ipv4(ntohl(v4.s_addr), port);
}

Result<NetAddress> NetAddress::FromSockaddr(const sockaddr* sa, size_t len) {
  if (sa->sa_family == AF_INET && len >= sizeof(sockaddr_in)) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    return Ipv4(ntohl(in->sin_addr.s_addr), ntohs(in->sin_port));
  }
  if (sa->sa_family == AF_INET6 && len >= sizeof(sockaddr_in6)) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    std::array<uint8_t, 16> ip;
    std::memcpy(ip.data(), &in6->sin6_addr, 16);
    return Ipv6(ip, ntohs(in6->sin6_port));
  }
  return InvalidArgumentError("unsupported socket address family " +
                              std::to_string(sa->sa_family));
}

size_t NetAddress::ToSockaddr(sockaddr_storage* out) const {
  std::memset(out, 0, sizeof(*out));
  if (is_v6()) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(out);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(port_);
    std::memcpy(&in6->sin6_addr, ip_.data(), 16);
    return sizeof(sockaddr_in6);
  }
  auto* in = reinterpret_cast<sockaddr_in*>(out);
  in->sin_family = AF_INET;
  in->sin_port = htons(port_);
  std::memcpy(&in->sin_addr, ip_.data(), 4);
  return sizeof(sockaddr_in);
}

NetAddress NetAddress::WithPort(uint16_t port) const {
  NetAddress a = *this;
  a.port_ = port;
  return a;
}

std::string NetAddress::ToString() const {
  char buf[INET6_ADDRSTRLEN] = {};
  switch (family_) {
    case Family::kNone: return "none";
    case Family::kIpv4:
      inet_ntop(AF_INET, ip_.data(), buf, sizeof(buf));
      return std::string(buf) + ":" + std::to_string(port_);
    case Family::kIpv6:
      inet_ntop(AF_INET6, ip_.data(), buf, sizeof(buf));
      return "[" + std::string(buf) + "]:" + std::to_string(port_);
  }
  return "none";
}

}  // namespace wharf::transport

