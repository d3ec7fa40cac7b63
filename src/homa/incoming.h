// homa/incoming.h: IncomingMessage, the receiver's half of one message: the
// reassembly buffer, which bytes arrived, and how far it has granted.
#pragma once

#include <cstdint>
#include <span>

#include "base/clock.h"
#include "homa/range_set.h"
#include "transport/large_buffer_pool.h"
#include "wharf/buffer.h"

namespace wharf::homa {

// Owned by its Rpc. Single-threaded (the engine's).
class IncomingMessage {
 public:
  // `incoming` is the sender's unscheduled limit from the first DATA packet
  // seen; `birth_ns` orders messages for FIFO grants. A message of at least
  // LargeBufferPool::kMinBytes is reassembled in a block of `pool` when given.
  IncomingMessage(uint32_t length, uint32_t incoming, TimeNs birth_ns,
                  transport::LargeBufferPool* pool = nullptr);
  // The same, reassembled in `buffer` (exactly `length` bytes), memory the
  // endpoint's host gave (transport::ReceiveAllocator).
  IncomingMessage(Buffer buffer, uint32_t length, uint32_t incoming, TimeNs birth_ns);

  uint32_t length() const { return length_; }
  // Offset granted so far: the sender may send [0, granted()).
  uint32_t granted() const { return granted_; }
  uint64_t received_bytes() const { return received_.covered(); }
  uint32_t bytes_remaining() const { return length_ - static_cast<uint32_t>(received_.covered()); }
  bool complete() const { return received_.Complete(length_); }
  TimeNs birth_ns() const { return birth_ns_; }
  // The sender's DATA payload size as seen so far (its largest non-tail
  // packet): the unit grants are rounded to. 0 before any data.
  uint32_t packet_bytes() const { return packet_bytes_; }
  // True while more grants are needed to receive the whole message.
  bool NeedsGrants() const { return granted_ < length_; }

  // Copies one DATA payload into place. The caller has checked
  // offset + payload.size() <= length() (wire::Decode does). `incoming` from
  // the packet can only raise granted (a retransmit after a lost GRANT).
  // Returns the number of new bytes (0 for a duplicate).
  uint32_t AddData(uint32_t offset, std::span<const std::byte> payload, uint32_t incoming);

  // Raises the grant offset (clamped to length); returns true if it moved.
  bool Grant(uint32_t offset);

  // First missing range below granted(), for RESEND.
  std::optional<std::pair<uint32_t, uint32_t>> FirstGap() const {
    return received_.FirstGap(granted_);
  }

  // Hands the assembled message over. Precondition: complete().
  Buffer TakeMessage() { return std::move(buffer_); }

 private:
  uint32_t length_;
  uint32_t granted_;
  uint32_t packet_bytes_ = 0;
  TimeNs birth_ns_;
  RangeSet received_;
  Buffer buffer_;
};

}  // namespace wharf::homa
