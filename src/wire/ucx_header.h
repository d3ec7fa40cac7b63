// wire/ucx_header.h: the header every ucx:// active message carries, and
// its encode/decode. Pure functions over bytes: no UCX, no state.
// docs/transports.md ("UCX message transport") says what each kind means.
//
// UCX moves the message itself (eager or rendezvous) and keeps each
// connection reliable and ordered; the header says what the message is.
// 16 bytes, big-endian like wire/packet.h; reserved bytes must be zero, and
// a decoder that finds anything else is not talking to a wharf peer.
//
//    0               1               2               3
//   +---------------+---------------+---------------+---------------+
//  0|    version    |     kind      |             code              |
//   +---------------+---------------+---------------+---------------+
//  4|          reply_port           |           reserved            |
//   +---------------+---------------+---------------+---------------+
//  8|                  rpc_id (64 bits): the client's RPC id         |
//   |                                                                |
//   +---------------+---------------+---------------+---------------+
//
// Kinds:
//   REQUEST   a whole request; reply_port is the sender's listening port
//             (its identity is the connection's source IP + this port);
//             code zero.
//   RESPONSE  the whole response to rpc_id; code and reply_port zero.
//   REFUSED   the server would not take request rpc_id; code is the
//             StatusCode why (kResourceExhausted: over the server's
//             message limit or RPC table); no payload.
//   CANCEL    the client gave up on rpc_id; reply_port as in its REQUEST;
//             no payload. The server drops the call: an answer to it is
//             not sent.
// Remote memory (bodies in wire/ucx_region.h):
//   REGION_ASK      asks the receiver for a region; rpc_id pairs it with
//                   the answer: REGION_GRANT, or REFUSED with a code.
//   REGION_GRANT    a region the sender lends the receiver (answering an
//                   ask with its rpc_id, or unasked with the region's id).
//   REGION_RELEASE  either side is done with a region (rpc_id: its id).
//   IMMEDIATE       a write into the receiver's region finished, with a
//                   value for it (rpc_id: the region's id).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "wharf/result.h"

namespace wharf::wire {

inline constexpr uint8_t kUcxHeaderVersion = 1;
inline constexpr size_t kUcxHeaderBytes = 16;

enum class UcxKind : uint8_t {
  kRequest = 1,
  kResponse = 2,
  kRefused = 3,
  kCancel = 4,
  kRegionAsk = 5,
  kRegionGrant = 6,
  kRegionRelease = 7,
  kImmediate = 8,
};

struct UcxHeader {
  UcxKind kind = UcxKind::kRequest;
  uint16_t code = 0;
  uint16_t reply_port = 0;
  uint64_t rpc_id = 0;
  friend bool operator==(const UcxHeader&, const UcxHeader&) = default;
};

using UcxHeaderBytes = std::array<char, kUcxHeaderBytes>;

UcxHeaderBytes EncodeUcxHeader(const UcxHeader& header);
// InvalidArgument naming what is wrong: length, version, kind, a reserved
// or unused field not zero, a zero rpc_id.
Result<UcxHeader> DecodeUcxHeader(std::string_view bytes);

}  // namespace wharf::wire
