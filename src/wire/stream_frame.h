// wire/stream_frame.h: the frames of wharf's message protocol over TCP
// (tcp://), and their encode/decode. Pure functions over byte spans: no
// sockets, no state. docs/transports.md ("TCP message transport") describes
// what each frame means; this file fixes the bytes.
//
// A TCP connection carries a sequence of frames in each direction. Every frame
// is a 32-byte header, big-endian like wire/packet.h, followed by
// `chunk_length` payload bytes. Reserved bytes and the fields a type does not
// use must be zero: a decoder that finds anything else is talking to something
// that is not a wharf peer (or a broken one), and the connection is closed.
//
//    0               1               2               3
//   +---------------+---------------+---------------+---------------+
//  0|    version    |     type      |     flags     |   reserved    |
//   +---------------+---------------+---------------+---------------+
//  4|                  chunk_length (payload bytes that follow)      |
//   +---------------+---------------+---------------+---------------+
//  8|                  rpc_id (64 bits): the client's RPC id;        |
//   |                  PING/PONG: a nonce                            |
//   +---------------+---------------+---------------+---------------+
// 16|                  message_length: total bytes of the message    |
//   +---------------+---------------+---------------+---------------+
// 20|                  chunk_offset: where this chunk's payload sits |
//   +---------------+---------------+---------------+---------------+
// 24|                  ack_floor (64 bits): every client RPC id of   |
//   |                  the sender below it has its response          |
//   +---------------+---------------+---------------+---------------+
//
// Per type (fields not listed are zero):
//   HELLO     first frame on a connection, each way. chunk_length = 16; the
//             payload is the HELLO body:
//               0 magic u32 "WHRF" (0x57485246)
//               4 listen_port u16  the sender's listening port (its identity
//                                  is the connection's source IP + this port)
//               6 reserved u16     zero
//               8 instance_id u64  differs per process lifetime; non-zero
//   REQUEST   one chunk of a request: rpc_id (non-zero), message_length,
//             chunk_offset, chunk_length, and ack_floor (0 = no claim).
//             chunk_offset + chunk_length <= message_length; chunk_length > 0
//             unless message_length == 0; chunk_length <= the receiver's
//             chunk limit.
//   RESPONSE  one chunk of a response, as REQUEST without ack_floor. With
//             flag kStreamFlagLost (and message_length 0) it says "I answered
//             this RPC but no longer hold the response".
//   ACK       ack_floor (non-zero): the sender's ack floor, sent when no
//             request carried it for tcp.ack_delay.
//   PING      rpc_id = a nonce; asks the peer for a PONG.
//   PONG      rpc_id = the nonce of the PING it answers.
//   ABORT     rpc_id (non-zero): the sender stopped sending its message with
//             this id part-way; the receiver drops what it assembled. The
//             message is the sender's REQUEST, or with flag
//             kStreamFlagAbortResponse its RESPONSE.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "wharf/result.h"

namespace wharf::wire {

inline constexpr uint8_t kStreamVersion = 1;

enum class StreamFrameType : uint8_t {
  kHello = 1,
  kRequest = 2,
  kResponse = 3,
  kAck = 4,
  kPing = 5,
  kPong = 6,
  kAbort = 7,
};

// "HELLO", "REQUEST", ...; "UNKNOWN" for values outside the enum.
std::string_view StreamFrameTypeName(StreamFrameType type);

// RESPONSE flag: the server answered but dropped its stored copy (memory).
inline constexpr uint8_t kStreamFlagLost = 0x01;
// ABORT flag: the aborted message is a RESPONSE (else a REQUEST).
inline constexpr uint8_t kStreamFlagAbortResponse = 0x02;

inline constexpr size_t kStreamHeaderBytes = 32;
inline constexpr size_t kStreamHelloBytes = 16;
inline constexpr uint32_t kStreamHelloMagic = 0x57485246;  // "WHRF"
// The largest chunk a decoder may be configured to accept. A header claiming
// more than the receiver's own limit is malformed (the codec never asks
// anyone to buffer a claimed length).
inline constexpr uint32_t kStreamMaxChunkLimit = 16u << 20;

struct StreamFrameHeader {
  StreamFrameType type = StreamFrameType::kPing;
  uint8_t flags = 0;
  uint32_t chunk_length = 0;
  uint64_t rpc_id = 0;
  uint32_t message_length = 0;
  uint32_t chunk_offset = 0;
  uint64_t ack_floor = 0;
  friend bool operator==(const StreamFrameHeader&, const StreamFrameHeader&) = default;
};

struct StreamHello {
  uint16_t listen_port = 0;
  uint64_t instance_id = 0;
  friend bool operator==(const StreamHello&, const StreamHello&) = default;
};

// Decodes a frame header from the first kStreamHeaderBytes of `bytes`.
// Anything malformed (short input, wrong version, unknown type or flags,
// non-zero reserved or unused fields, chunk_length above `max_chunk_bytes`,
// a chunk outside its message, an empty chunk of a non-empty message, a zero
// rpc_id where one is required, a HELLO whose length is not the HELLO body)
// is an InvalidArgument naming the field. Never reads outside `bytes`.
Result<StreamFrameHeader> DecodeStreamHeader(std::span<const std::byte> bytes,
                                             uint32_t max_chunk_bytes);

// Encodes `header` into out[0..32). Checks the same rules as the decoder
// (with kStreamMaxChunkLimit as the chunk limit), so whatever it writes
// decodes back to the same fields; InvalidArgument otherwise or when `out` is
// short.
Status EncodeStreamHeader(const StreamFrameHeader& header, std::span<std::byte> out);

// The HELLO body: exactly kStreamHelloBytes, right magic, zero reserved,
// non-zero instance id.
Result<StreamHello> DecodeStreamHello(std::span<const std::byte> bytes);
Status EncodeStreamHello(const StreamHello& hello, std::span<std::byte> out);

// One line for logs: "REQUEST id=7 1400@0/9000 floor=5".
std::string DescribeStreamHeader(const StreamFrameHeader& header);

}  // namespace wharf::wire
