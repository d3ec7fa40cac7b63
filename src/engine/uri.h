// engine/uri.h: wharf addresses: "homa://HOST:PORT", "tcp://HOST:PORT", or
// "HOST:PORT" with the default scheme (endpoint.default_transport). HOST is
// numeric IPv4, [IPv6], or a name resolved here (the control path; never per
// message).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "transport/net_address.h"
#include "wharf/result.h"

namespace wharf::engine {

struct Uri {
  std::string scheme;  // "homa" or "tcp"
  transport::NetAddress address;
  // Which endpoint of the engine at `address` (homa://host:4000/NAME): the
  // id its name maps to on the wire; 0, the default endpoint, without one.
  uint16_t endpoint_id = 0;
};

// Schemes this build understands; an unknown one is InvalidArgument listing them.
Result<Uri> ParseUri(std::string_view text, std::string_view default_scheme = "homa");

}  // namespace wharf::engine
