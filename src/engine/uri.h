// engine/uri.h: wharf addresses: "homa://HOST:PORT", "tcp://HOST:PORT", or
// "HOST:PORT" with the default scheme (endpoint.default_transport), each
// optionally followed by "/NAME", one of several endpoints an engine hosts
// on that port (its id on the wire is wire::EndpointIdForName(NAME)), or
// "/#ID" for an endpoint known only by its id. HOST is
// numeric IPv4, [IPv6], or a name the caller's NameResolver looks up (the
// control path; never per message). NAME is UTF-8 without control
// characters: it is shown in logs, `wharf status` and JSON.
#pragma once

#include <cstddef>
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
  // The endpoint's name as written ("kv"), or "#ID" for one known only by
  // its id (a peer as the server sees it); empty for the default endpoint.
  std::string endpoint_name;
};

// How an address names a peer's endpoint: "" (the default), the name given,
// or "#ID" for an id with no known name.
std::string EndpointSuffix(uint16_t endpoint_id);

// Turns a host name into an address. Injected so that tests can make a
// lookup slow or fail, and so that a caller that must never block (wharfd's
// loop) can parse with none at all.
class NameResolver {
 public:
  virtual ~NameResolver() = default;
  // kInvalidArgument naming `host` when it has no address.
  virtual Result<transport::NetAddress> Resolve(const std::string& host, uint16_t port) const = 0;
};

// getaddrinfo: may block for as long as the system's resolver takes
// (seconds, with an unreachable DNS server). For application threads only.
const NameResolver& SystemResolver();

// Schemes this build understands; an unknown one is InvalidArgument listing
// them. A HOST that is not numeric goes to `resolver`; with none, it is
// kInvalidArgument ("numeric addresses only").
Result<Uri> ParseUri(std::string_view text, std::string_view default_scheme = "homa",
                     const NameResolver* resolver = &SystemResolver());

// The address as ParseUri reads it back: "scheme://ADDRESS[/NAME]", with the
// address numeric (what a resolved name became).
std::string FormatUri(const Uri& uri);

}  // namespace wharf::engine

namespace wharf::engine {

// A Uri as three integers, to travel in a shared-memory ring entry
// (shm/commands.h kAddPeer): the IP's two halves, then port, endpoint id,
// scheme and family. The name is not carried (a peer known by id shows as
// "#ID"). UnpackUri checks every field: the integers come from another
// process.
struct PackedUri {
  uint64_t words[3] = {0, 0, 0};
  friend bool operator==(const PackedUri&, const PackedUri&) = default;
};
// For tables keyed by a packed address (a managed endpoint's peer handles).
struct PackedUriHash {
  size_t operator()(const PackedUri& p) const noexcept {
    uint64_t h = p.words[0] * 0x9E3779B97F4A7C15ULL ^ p.words[1];
    h = (h ^ p.words[2]) * 0xBF58476D1CE4E5B9ULL;
    return static_cast<size_t>(h ^ h >> 31);
  }
};
PackedUri PackUri(const Uri& uri);
Result<Uri> UnpackUri(const PackedUri& packed);

}  // namespace wharf::engine
