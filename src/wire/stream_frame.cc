// wire/stream_frame.cc: DecodeStreamHeader / EncodeStreamHeader and the HELLO
// body codec for the layouts drawn in stream_frame.h.
//
// Decode and Encode share one rule check (CheckHeader), so anything Encode
// writes decodes to the same fields and anything Decode accepts re-encodes
// byte for byte; stream_frame_fuzzer relies on that.
#include "wire/stream_frame.h"

#include <string>

#include "wire/byte_order.h"

namespace wharf::wire {
namespace {

// Byte offsets, as drawn in stream_frame.h.
constexpr size_t kOffVersion = 0;
constexpr size_t kOffType = 1;
constexpr size_t kOffFlags = 2;
constexpr size_t kOffReserved = 3;
constexpr size_t kOffChunkLength = 4;
constexpr size_t kOffRpcId = 8;
constexpr size_t kOffMessageLength = 16;
constexpr size_t kOffChunkOffset = 20;
constexpr size_t kOffAckFloor = 24;
static_assert(kOffAckFloor + 8 == kStreamHeaderBytes);

constexpr size_t kOffHelloMagic = 0;
constexpr size_t kOffHelloPort = 4;
constexpr size_t kOffHelloReserved = 6;
constexpr size_t kOffHelloInstance = 8;
static_assert(kOffHelloInstance + 8 == kStreamHelloBytes);

Status Bad(const StreamFrameHeader& h, std::string what) {
  return InvalidArgumentError("stream frame " + std::string(StreamFrameTypeName(h.type)) + ": " +
                              what);
}

std::string U(uint64_t v) { return std::to_string(v); }

// The rules of stream_frame.h, field by field.
Status CheckHeader(const StreamFrameHeader& h, uint32_t max_chunk_bytes) {
  auto must_be_zero = [&](uint64_t value, const char* field) -> Status {
    if (value != 0) return Bad(h, std::string(field) + " must be 0, got " + U(value));
    return OkStatus();
  };
  const bool is_message = h.type == StreamFrameType::kRequest || h.type == StreamFrameType::kResponse;
  const uint8_t allowed_flags = h.type == StreamFrameType::kResponse ? kStreamFlagLost
                                : h.type == StreamFrameType::kAbort  ? kStreamFlagAbortResponse
                                                                     : 0;
  if ((h.flags & ~allowed_flags) != 0) return Bad(h, "unknown flags " + U(h.flags));
  if (is_message) {
    if (h.rpc_id == 0) return Bad(h, "rpc_id must not be 0");
    if (h.chunk_length > max_chunk_bytes) {
      return Bad(h, "chunk_length " + U(h.chunk_length) + " exceeds the chunk limit " +
                        U(max_chunk_bytes));
    }
    if (uint64_t{h.chunk_offset} + h.chunk_length > h.message_length) {
      return Bad(h, "chunk " + U(h.chunk_length) + "@" + U(h.chunk_offset) +
                        " ends past message_length " + U(h.message_length));
    }
    if (h.chunk_length == 0 && h.message_length != 0) {
      return Bad(h, "empty chunk of a " + U(h.message_length) + "-byte message");
    }
    if (h.type == StreamFrameType::kResponse) {
      WHARF_RETURN_IF_ERROR(must_be_zero(h.ack_floor, "ack_floor"));
      if ((h.flags & kStreamFlagLost) != 0) {
        WHARF_RETURN_IF_ERROR(must_be_zero(h.message_length, "message_length of a lost response"));
      }
    }
    return OkStatus();
  }
  switch (h.type) {
    case StreamFrameType::kHello:
      if (h.chunk_length != kStreamHelloBytes) {
        return Bad(h, "chunk_length must be " + U(kStreamHelloBytes) + ", got " +
                          U(h.chunk_length));
      }
      WHARF_RETURN_IF_ERROR(must_be_zero(h.rpc_id, "rpc_id"));
      WHARF_RETURN_IF_ERROR(must_be_zero(h.ack_floor, "ack_floor"));
      break;
    case StreamFrameType::kAck:
      WHARF_RETURN_IF_ERROR(must_be_zero(h.chunk_length, "chunk_length"));
      WHARF_RETURN_IF_ERROR(must_be_zero(h.rpc_id, "rpc_id"));
      if (h.ack_floor == 0) return Bad(h, "ack_floor must not be 0");
      break;
    case StreamFrameType::kPing:
    case StreamFrameType::kPong:
      WHARF_RETURN_IF_ERROR(must_be_zero(h.chunk_length, "chunk_length"));
      WHARF_RETURN_IF_ERROR(must_be_zero(h.ack_floor, "ack_floor"));
      break;
    case StreamFrameType::kAbort:
      WHARF_RETURN_IF_ERROR(must_be_zero(h.chunk_length, "chunk_length"));
      WHARF_RETURN_IF_ERROR(must_be_zero(h.ack_floor, "ack_floor"));
      if (h.rpc_id == 0) return Bad(h, "rpc_id must not be 0");
      break;
    default:
      return InvalidArgumentError("stream frame: unknown type " + U(static_cast<uint8_t>(h.type)));
  }
  WHARF_RETURN_IF_ERROR(must_be_zero(h.message_length, "message_length"));
  return must_be_zero(h.chunk_offset, "chunk_offset");
}

bool IsKnownType(uint8_t raw) {
  return raw >= static_cast<uint8_t>(StreamFrameType::kHello) &&
         raw <= static_cast<uint8_t>(StreamFrameType::kAbort);
}

}  // namespace

std::string_view StreamFrameTypeName(StreamFrameType type) {
  switch (type) {
    case StreamFrameType::kHello:
      return "HELLO";
    case StreamFrameType::kRequest:
      return "REQUEST";
    case StreamFrameType::kResponse:
      return "RESPONSE";
    case StreamFrameType::kAck:
      return "ACK";
    case StreamFrameType::kPing:
      return "PING";
    case StreamFrameType::kPong:
      return "PONG";
    case StreamFrameType::kAbort:
      return "ABORT";
  }
  return "UNKNOWN";
}

Result<StreamFrameHeader> DecodeStreamHeader(std::span<const std::byte> bytes,
                                             uint32_t max_chunk_bytes) {
  if (bytes.size() < kStreamHeaderBytes) {
    return InvalidArgumentError("stream frame: " + U(bytes.size()) + " bytes, header needs " +
                                U(kStreamHeaderBytes));
  }
  const std::byte* p = bytes.data();
  const uint8_t version = LoadU8(p + kOffVersion);
  if (version != kStreamVersion) {
    return InvalidArgumentError("stream frame: unsupported version " + U(version) + " (expected " +
                                U(kStreamVersion) + ")");
  }
  const uint8_t raw_type = LoadU8(p + kOffType);
  if (!IsKnownType(raw_type)) {
    return InvalidArgumentError("stream frame: unknown type " + U(raw_type));
  }
  StreamFrameHeader h;
  h.type = static_cast<StreamFrameType>(raw_type);
  h.flags = LoadU8(p + kOffFlags);
  if (LoadU8(p + kOffReserved) != 0) return Bad(h, "reserved byte must be 0");
  h.chunk_length = LoadU32(p + kOffChunkLength);
  h.rpc_id = LoadU64(p + kOffRpcId);
  h.message_length = LoadU32(p + kOffMessageLength);
  h.chunk_offset = LoadU32(p + kOffChunkOffset);
  h.ack_floor = LoadU64(p + kOffAckFloor);
  WHARF_RETURN_IF_ERROR(CheckHeader(h, max_chunk_bytes));
  return h;
}

Status EncodeStreamHeader(const StreamFrameHeader& h, std::span<std::byte> out) {
  if (out.size() < kStreamHeaderBytes) {
    return InvalidArgumentError("stream frame: output of " + U(out.size()) +
                                " bytes is short of the " + U(kStreamHeaderBytes) +
                                "-byte header");
  }
  if (!IsKnownType(static_cast<uint8_t>(h.type))) {
    return InvalidArgumentError("stream frame: unknown type " + U(static_cast<uint8_t>(h.type)));
  }
  WHARF_RETURN_IF_ERROR(CheckHeader(h, kStreamMaxChunkLimit));
  std::byte* p = out.data();
  StoreU8(p + kOffVersion, kStreamVersion);
  StoreU8(p + kOffType, static_cast<uint8_t>(h.type));
  StoreU8(p + kOffFlags, h.flags);
  StoreU8(p + kOffReserved, 0);
  StoreU32(p + kOffChunkLength, h.chunk_length);
  StoreU64(p + kOffRpcId, h.rpc_id);
  StoreU32(p + kOffMessageLength, h.message_length);
  StoreU32(p + kOffChunkOffset, h.chunk_offset);
  StoreU64(p + kOffAckFloor, h.ack_floor);
  return OkStatus();
}

Result<StreamHello> DecodeStreamHello(std::span<const std::byte> bytes) {
  if (bytes.size() != kStreamHelloBytes) {
    return InvalidArgumentError("stream HELLO: body of " + U(bytes.size()) + " bytes, expected " +
                                U(kStreamHelloBytes));
  }
  const std::byte* p = bytes.data();
  const uint32_t magic = LoadU32(p + kOffHelloMagic);
  if (magic != kStreamHelloMagic) {
    return InvalidArgumentError("stream HELLO: bad magic " + U(magic) + " (not a wharf peer)");
  }
  if (LoadU16(p + kOffHelloReserved) != 0) {
    return InvalidArgumentError("stream HELLO: reserved field must be 0");
  }
  StreamHello hello;
  hello.listen_port = LoadU16(p + kOffHelloPort);
  hello.instance_id = LoadU64(p + kOffHelloInstance);
  if (hello.instance_id == 0) return InvalidArgumentError("stream HELLO: instance_id must not be 0");
  return hello;
}

Status EncodeStreamHello(const StreamHello& hello, std::span<std::byte> out) {
  if (out.size() < kStreamHelloBytes) {
    return InvalidArgumentError("stream HELLO: output of " + U(out.size()) + " bytes, needs " +
                                U(kStreamHelloBytes));
  }
  if (hello.instance_id == 0) return InvalidArgumentError("stream HELLO: instance_id must not be 0");
  std::byte* p = out.data();
  StoreU32(p + kOffHelloMagic, kStreamHelloMagic);
  StoreU16(p + kOffHelloPort, hello.listen_port);
  StoreU16(p + kOffHelloReserved, 0);
  StoreU64(p + kOffHelloInstance, hello.instance_id);
  return OkStatus();
}

std::string DescribeStreamHeader(const StreamFrameHeader& h) {
  std::string out(StreamFrameTypeName(h.type));
  switch (h.type) {
    case StreamFrameType::kRequest:
    case StreamFrameType::kResponse:
      out += " id=" + U(h.rpc_id) + " " + U(h.chunk_length) + "@" + U(h.chunk_offset) + "/" +
             U(h.message_length);
      if (h.ack_floor != 0) out += " floor=" + U(h.ack_floor);
      if ((h.flags & kStreamFlagLost) != 0) out += " lost";
      break;
    case StreamFrameType::kAck:
      out += " floor=" + U(h.ack_floor);
      break;
    case StreamFrameType::kPing:
    case StreamFrameType::kPong:
      out += " nonce=" + U(h.rpc_id);
      break;
    case StreamFrameType::kAbort:
      out += " id=" + U(h.rpc_id);
      if ((h.flags & kStreamFlagAbortResponse) != 0) out += " response";
      break;
    case StreamFrameType::kHello:
      break;
  }
  return out;
}

}  // namespace wharf::wire
