// engine/peer_ref.h: PeerRef, a peer as the engine knows it: the transport
// that reaches it and its address there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "transport/net_address.h"

namespace wharf::engine {

struct PeerRef {
  uint8_t transport = 0;  // index into the engine's transports
  transport::NetAddress address;
  uint16_t endpoint = 0;  // which endpoint at that address (0: the default)
  friend bool operator==(const PeerRef&, const PeerRef&) = default;
  friend auto operator<=>(const PeerRef&, const PeerRef&) = default;
};

struct PeerRefHash {
  size_t operator()(const PeerRef& p) const noexcept {
    return std::hash<transport::NetAddress>()(p.address) ^
           ((size_t{p.endpoint} << 8 | p.transport) * 0x9E3779B97F4A7C15ULL);
  }
};

}  // namespace wharf::engine
