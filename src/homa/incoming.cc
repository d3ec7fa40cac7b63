// IncomingMessage: reassembly into a buffer allocated once per message.
#include "homa/incoming.h"

#include <algorithm>
#include <cstring>

namespace wharf::homa {

IncomingMessage::IncomingMessage(uint32_t length, uint32_t incoming, TimeNs birth_ns,
                                 transport::LargeBufferPool* pool)
    : length_(length),
      granted_(std::min(incoming, length)),
      birth_ns_(birth_ns),
      buffer_(pool != nullptr && length >= transport::LargeBufferPool::kMinBytes
                  ? pool->Take(length)
                  : Buffer::Allocate(length)) {}

IncomingMessage::IncomingMessage(Buffer buffer, uint32_t length, uint32_t incoming,
                                 TimeNs birth_ns)
    : length_(length),
      granted_(std::min(incoming, length)),
      birth_ns_(birth_ns),
      buffer_(std::move(buffer)) {}

uint32_t IncomingMessage::AddData(uint32_t offset, std::span<const std::byte> payload,
                                  uint32_t incoming) {
  granted_ = std::max(granted_, std::min(incoming, length_));
  uint32_t end = offset + static_cast<uint32_t>(payload.size());
  // The sender's packet size: its packets are full but for the tail.
  const auto size = static_cast<uint32_t>(payload.size());
  if (end < length_ || packet_bytes_ == 0) packet_bytes_ = std::max(packet_bytes_, size);
  uint32_t fresh = received_.Add(offset, end);
  // Copy even when only part is new: overlapping bytes are identical, and a
  // single memcpy is cheaper than computing the new sub-ranges.
  if (fresh > 0) std::memcpy(buffer_.data() + offset, payload.data(), payload.size());
  return fresh;
}

bool IncomingMessage::Grant(uint32_t offset) {
  offset = std::min(offset, length_);
  if (offset <= granted_) return false;
  granted_ = offset;
  return true;
}

}  // namespace wharf::homa
