// ParseUri: scheme split, then numeric parse or a one-time name lookup.
#include "engine/uri.h"

#include <netdb.h>
#include <sys/socket.h>

#include <charconv>
#include <memory>

#include "wire/endpoint_id.h"

namespace wharf::engine {
namespace {

constexpr std::string_view kSchemes[] = {"homa", "tcp"};

}  // namespace

Result<Uri> ParseUri(std::string_view text, std::string_view default_scheme) {
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
    return InvalidArgumentError("address '" + std::string(text) + "': unknown scheme '" +
                                uri.scheme + "' (this build speaks homa:// and tcp://)");
  }
  // "/NAME" or "/#ID" after the port: which endpoint of that engine.
  const size_t slash = rest.find('/');
  if (slash != std::string_view::npos) {
    std::string_view name = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
    if (name.empty() || name.size() > 255 || name.find('/') != std::string_view::npos) {
      return InvalidArgumentError("address '" + std::string(text) +
                                  "': expected /NAME (1 to 255 characters, no '/') after the port");
    }
    if (name.front() == '#') {
      unsigned id = 0;
      auto [end, ec] = std::from_chars(name.data() + 1, name.data() + name.size(), id);
      if (ec != std::errc() || end != name.data() + name.size() || id == 0 || id > UINT16_MAX) {
        return InvalidArgumentError("address '" + std::string(text) +
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
  // Not numeric: resolve "name:port" once.
  size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos || rest.empty() || rest.front() == '[') {
    return numeric.status();
  }
  std::string host(rest.substr(0, colon));
  std::string port(rest.substr(colon + 1));
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0 || found == nullptr) {
    return InvalidArgumentError("address '" + std::string(text) + "': cannot resolve '" + host +
                                "': " + gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(found, freeaddrinfo);
  WHARF_ASSIGN_OR_RETURN(uri.address, transport::NetAddress::FromSockaddr(found->ai_addr,
                                                                           found->ai_addrlen));
  return uri;
}

std::string EndpointSuffix(uint16_t endpoint_id) {
  return endpoint_id == 0 ? std::string() : "/#" + std::to_string(endpoint_id);
}

}  // namespace wharf::engine
