// wire/endpoint_id.h: the endpoint id a named endpoint takes within its
// host's socket (docs/protocol.md section 4). Both ends derive it from the
// name alone, so `homa://host:4000/kv` reaches endpoint "kv" with no lookup.
#pragma once

#include <cstdint>
#include <string_view>

#include "wire/packet.h"

namespace wharf::wire {

// FNV-1a-32 of the name's bytes, folded to 16 bits ((h >> 16) ^ (h & 0xffff)),
// with 0 mapped to 1 so that no name takes the default endpoint's id. The
// empty name is the default endpoint itself (`homa://host:4000` and
// `homa://host:4000/` name the same endpoint). Two names may collide: a
// socket refuses to open the second (HomaHost::OpenEndpoint).
constexpr uint16_t EndpointIdForName(std::string_view name) {
  if (name.empty()) return kDefaultEndpoint;
  uint32_t h = 2166136261u;
  for (char c : name) {
    h ^= static_cast<uint8_t>(c);
    h *= 16777619u;
  }
  const auto folded = static_cast<uint16_t>((h >> 16) ^ (h & 0xffffu));
  return folded == kDefaultEndpoint ? uint16_t{1} : folded;
}

}  // namespace wharf::wire
