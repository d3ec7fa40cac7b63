// Frame encode/decode.
#include "engine/frame.h"

#include <cstring>
#include <string>

#include "wire/byte_order.h"

namespace wharf::engine {
namespace {

template <typename T>
void Put(std::byte* p, T v) {
  if constexpr (sizeof(T) == 1) {
    wire::StoreU8(p, v);
  } else {
    wire::StoreBig<T>(p, v);
  }
}
template <typename T>
T Get(const std::byte* p) {
  if constexpr (sizeof(T) == 1) {
    return wire::LoadU8(p);
  } else {
    return wire::LoadBig<T>(p);
  }
}

}  // namespace

Buffer WrapFrame(const Frame& frame, Buffer payload) {
  Buffer message;
  if (payload.Prepend(kFrameBytes)) {
    message = std::move(payload);
  } else {
    message = Buffer::Allocate(kFrameBytes + payload.size());
    if (!payload.empty()) std::memcpy(message.data() + kFrameBytes, payload.data(), payload.size());
  }
  std::byte* p = message.data();
  std::memset(p, 0, kFrameBytes);
  Put<uint8_t>(p + 0, static_cast<uint8_t>(frame.kind));
  Put<uint8_t>(p + 1, frame.flags);
  Put<uint32_t>(p + 4, frame.code);
  Put<uint64_t>(p + 8, frame.conn_id);
  Put<uint64_t>(p + 16, frame.seq);
  Put<uint32_t>(p + 24, frame.deadline_us);
  return message;
}

Result<Frame> UnwrapFrame(Buffer& message) {
  if (message.size() < kFrameBytes) {
    return InvalidArgumentError("engine: message of " + std::to_string(message.size()) +
                                " bytes is shorter than the " + std::to_string(kFrameBytes) +
                                "-byte frame header");
  }
  const std::byte* p = message.data();
  Frame f;
  uint8_t kind = Get<uint8_t>(p);
  if (kind < static_cast<uint8_t>(FrameKind::kConnect) ||
      kind > static_cast<uint8_t>(FrameKind::kCancel)) {
    return InvalidArgumentError("engine: unknown frame kind " + std::to_string(kind));
  }
  f.kind = static_cast<FrameKind>(kind);
  f.flags = Get<uint8_t>(p + 1);
  f.code = Get<uint32_t>(p + 4);
  f.conn_id = Get<uint64_t>(p + 8);
  f.seq = Get<uint64_t>(p + 16);
  f.deadline_us = Get<uint32_t>(p + 24);
  message.RemovePrefix(kFrameBytes);
  return f;
}

Buffer ErrorReply(const Status& status) {
  Frame f;
  f.kind = FrameKind::kReply;
  f.code = static_cast<uint32_t>(status.code());
  return WrapFrame(f, Buffer::Copy(status.message()));
}

}  // namespace wharf::engine
