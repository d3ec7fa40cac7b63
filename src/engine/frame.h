// engine/frame.h: Frame, the 32-byte header the engine puts at the start of
// every message it hands to a transport, saying what the message is
// (connect, connection message, RPC, barrier, reply) and to which connection
// or method it belongs. Transports carry it as opaque payload.
//
//    0        1        2        4                8
//   +--------+--------+--------+----------------+
//   |  kind  | flags  |  rsvd  |      code      |   code: method id (kRpc; kConnect
//   +--------+--------+--------+----------------+         of a stream, else 0),
//                                                         StatusCode (kReply),
//   |              conn_id (u64)                |         member count (kBarrier)
//   +-------------------------------------------+
//   |                seq (u64)                  |   message sequence / round
//   +----------------------+--------------------+
//   |  deadline_us (u32)   |     rsvd (u32)     |
//   +----------------------+--------------------+
// Big-endian, like the wire packets (engine/frame.cc uses wire/byte_order.h).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "wharf/buffer.h"
#include "wharf/result.h"

namespace wharf::engine {

enum class FrameKind : uint8_t {
  kConnect = 1,     // open conn_id (a stream of method `code` if nonzero); reply OK or an error
  kMessage = 2,     // one message on conn_id, sequence seq
  kDisconnect = 3,  // close conn_id
  kRpc = 4,         // an RPC to method `code`
  kBarrier = 5,     // barrier round `seq` of group `conn_id` with `code` members
  kReply = 6,       // the response to any of the above; code = StatusCode
  kKeepAlive = 7,   // is conn_id still open at your end? reply OK or NotFound
  kCancel = 8,      // the caller withdrew its RPC whose transport id is seq
};

inline constexpr uint8_t kFrameOrdered = 0x01;  // kConnect: deliver in order

// The method a call with metadata (CallOptions::metadata) goes to: its
// request is the real method id (u32), the metadata (client/
// metadata_codec.h), then the request. The receiving library unwraps it;
// an endpoint serving any method serves this one. Wharf's reserved range
// (kFirstReservedMethod, wharf/endpoint.h).
inline constexpr uint32_t kCallWithMetadataMethod = 0xFFFF0001u;
inline constexpr size_t kFrameBytes = 32;

struct Frame {
  FrameKind kind = FrameKind::kReply;
  uint8_t flags = 0;
  uint32_t code = 0;
  uint64_t conn_id = 0;
  uint64_t seq = 0;
  uint32_t deadline_us = 0;
};

// Puts `frame` in front of `payload` (in its headroom when it has enough,
// otherwise by copying once) and returns the whole message.
Buffer WrapFrame(const Frame& frame, Buffer payload);
// Reads the frame at the start of `message` and strips it, leaving the
// payload. InvalidArgument for a short message or an unknown kind.
Result<Frame> UnwrapFrame(Buffer& message);

// A reply carrying `status`: its message text is the payload.
Buffer ErrorReply(const Status& status);

}  // namespace wharf::engine
