// ParseUri: scheme split, then numeric parse or a one-time name lookup
// through the caller's NameResolver.
#include "engine/uri.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <array>
#include <charconv>
#include <cstring>
#include <memory>

#include "base/text.h"
#include "wire/endpoint_id.h"

namespace wharf::engine {
namespace {

constexpr std::string_view kSchemes[] = {"homa", "tcp", "ucx"};

}  // namespace

Result<Uri> ParseUri(std::string_view text, std::string_view default_scheme,
                     const NameResolver* resolver) {
  Uri uri;
  std::string_view rest = text;
  size_t sep = text.find("://");
  if (sep != std::string_view::npos) {
    uri.scheme = std::string(text.substr(0, sep));
    rest = text.substr(sep + 3);
  } else {
    uri.scheme = std::string(default_scheme);
  }
  bool known = false;
  for (std::string_view s : kSchemes) known |= (s == uri.scheme);
  if (!known) {
    return InvalidArgumentError("address '" + PrintableText(text, 300) + "': unknown scheme '" +
                                PrintableText(uri.scheme, 64) +
                                "' (wharf speaks homa://, tcp:// and ucx://)");
  }
  // "/NAME" or "/#ID" after the port: which endpoint of that engine.
  const size_t slash = rest.find('/');
  if (slash != std::string_view::npos) {
    std::string_view name = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
    if (name.empty() || name.size() > 255 || name.find('/') != std::string_view::npos) {
      return InvalidArgumentError("address '" + PrintableText(text, 300) +
                                  "': expected /NAME (1 to 255 bytes, no '/') after the port");
    }
    // Names reach logs, terminals and JSON: printable UTF-8 only.
    if (Status s = CheckText(name, "endpoint name", 255); !s.ok()) {
      return s.WithContext("address '" + PrintableText(text, 300) + "'");
    }
    if (name.front() == '#') {
      unsigned id = 0;
      auto [end, ec] = std::from_chars(name.data() + 1, name.data() + name.size(), id);
      if (ec != std::errc() || end != name.data() + name.size() || id == 0 || id > UINT16_MAX) {
        return InvalidArgumentError("address '" + PrintableText(text, 300) +
                                    "': expected /#ID with an endpoint id from 1 to 65535");
      }
      uri.endpoint_id = static_cast<uint16_t>(id);
    } else {
      uri.endpoint_id = wire::EndpointIdForName(name);
    }
    uri.endpoint_name = std::string(name);
  }
  Result<transport::NetAddress> numeric = transport::NetAddress::Parse(rest);
  if (numeric.ok()) {
    uri.address = *numeric;
    return uri;
  }
  // Not numeric: "name:port".
  size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos || rest.empty() || rest.front() == '[') {
    return numeric.status();
  }
  uint16_t port = 0;
  auto [end, ec] = std::from_chars(rest.data() + colon + 1, rest.data() + rest.size(), port);
  if (ec != std::errc() || end != rest.data() + rest.size() || colon + 1 == rest.size()) {
    return numeric.status();
  }
  const std::string host(rest.substr(0, colon));
  if (Status s = CheckText(host, "host name", 253); !s.ok()) {
    return s.WithContext("address '" + PrintableText(text, 300) + "'");
  }
  if (resolver == nullptr) {
    return InvalidArgumentError("address '" + PrintableText(text, 300) + "': '" + host +
                                "' is a name; numeric addresses only here");
  }
  Result<transport::NetAddress> found = resolver->Resolve(host, port);
  if (!found.ok()) return found.status().WithContext("address '" + PrintableText(text, 300) + "'");
  uri.address = *found;
  return uri;
}

namespace {

class GetaddrinfoResolver final : public NameResolver {
 public:
  Result<transport::NetAddress> Resolve(const std::string& host, uint16_t port) const override {
    addrinfo hints{};
    hints.ai_socktype = SOCK_DGRAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo* found = nullptr;
    const std::string service = std::to_string(port);
    const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
    if (rc != 0 || found == nullptr) {
      return InvalidArgumentError("cannot resolve '" + host + "': " + gai_strerror(rc));
    }
    std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(found, freeaddrinfo);
    return transport::NetAddress::FromSockaddr(found->ai_addr, found->ai_addrlen);
  }
};

}  // namespace

const NameResolver& SystemResolver() {
  static const GetaddrinfoResolver resolver;
  return resolver;
}

std::string FormatUri(const Uri& uri) {
  return uri.scheme + "://" + uri.address.ToString() +
         (uri.endpoint_name.empty() ? "" : "/" + uri.endpoint_name);
}

std::string EndpointSuffix(uint16_t endpoint_id) {
  return endpoint_id == 0 ? std::string() : "/#" + std::to_string(endpoint_id);
}

// words[2]: port (bits 0-15), endpoint id (16-31), scheme (32-39: the index
// in kSchemes + 1), family (40-47: 4 or 6).
PackedUri PackUri(const Uri& uri) {
  PackedUri p;
  const auto& ip = uri.address.ip_bytes();
  std::memcpy(&p.words[0], ip.data(), 8);
  std::memcpy(&p.words[1], ip.data() + 8, 8);
  uint64_t scheme = 0;
  for (size_t i = 0; i < std::size(kSchemes); ++i) {
    if (uri.scheme == kSchemes[i]) scheme = i + 1;
  }
  const uint64_t family = uri.address.is_v4() ? 4 : uri.address.is_v6() ? 6 : 0;
  p.words[2] = uint64_t{uri.address.port()} | uint64_t{uri.endpoint_id} << 16 | scheme << 32 |
               family << 40;
  return p;
}

Result<Uri> UnpackUri(const PackedUri& packed) {
  const uint64_t w = packed.words[2];
  if ((w >> 48) != 0) return InvalidArgumentError("packed address: unknown bits set");
  const uint64_t scheme = (w >> 32) & 0xFF;
  const uint64_t family = (w >> 40) & 0xFF;
  if (scheme == 0 || scheme > std::size(kSchemes)) {
    return InvalidArgumentError("packed address: unknown scheme " + std::to_string(scheme));
  }
  std::array<uint8_t, 16> ip{};
  std::memcpy(ip.data(), &packed.words[0], 8);
  std::memcpy(ip.data() + 8, &packed.words[1], 8);
  Uri uri;
  uri.scheme = std::string(kSchemes[scheme - 1]);
  const auto port = static_cast<uint16_t>(w & 0xFFFF);
  if (family == 4) {
    uint32_t be;
    std::memcpy(&be, ip.data(), 4);
    uri.address = transport::NetAddress::Ipv4(ntohl(be), port);
  } else if (family == 6) {
    uri.address = transport::NetAddress::Ipv6(ip, port);
  } else {
    return InvalidArgumentError("packed address: unknown family " + std::to_string(family));
  }
  uri.endpoint_id = static_cast<uint16_t>((w >> 16) & 0xFFFF);
  if (uri.endpoint_id != 0) uri.endpoint_name = "#" + std::to_string(uri.endpoint_id);
  return uri;
}

}  // namespace wharf::engine
