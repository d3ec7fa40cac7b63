// transport/udp/udp_gso_plan.h: decides which consecutive outgoing datagrams
// can share one UDP GSO send. Pure logic over OutDatagram spans, so the rules
// are unit-tested without sockets; udp_datagram.cc turns each run into one
// sendmmsg message.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <span>

#include "transport/datagram.h"

namespace wharf::transport::udp {

// Kernel limits on one GSO send.
struct GsoLimits {
  // UDP_MAX_SEGMENTS in the kernel: 64 on every kernel that has UDP GSO
  // (newer ones allow more, but 64 works everywhere).
  size_t max_segments = 64;
  // The coalesced payload travels as one IP packet until segmentation, so it
  // must fit a 16-bit IPv4 total length: 65535 - 20 (IP) - 8 (UDP).
  size_t max_payload_bytes = 65507;
};

// How many datagrams from the front of `rest` go out as one message (>= 1
// when rest is non-empty, 0 when it is empty). A run longer than one shares
// the destination and priority of its first datagram, every member but the
// last has the first one's size() (bytes and payload together), and the last
// is no longer than that and not empty (the kernel splits the payload every
// `size` bytes, so an empty tail would vanish and a longer one would be
// split in two). With `gso` false every run has length 1, and a datagram
// with a departure_token is always a run of its own.
size_t NextGsoRun(std::span<const OutDatagram> rest, bool gso, const GsoLimits& limits);

// Appends `part` to iovs[0, count) and returns the new count. A part that
// starts where the last iovec ends extends it instead: homa packs its
// headers and short payloads back to back, and the kernel copies each iovec
// of a GSO send separately (~50 ns each here). An empty part adds nothing.
size_t AppendPart(iovec* iovs, size_t count, std::span<const std::byte> part);

}  // namespace wharf::transport::udp
