// homa/outgoing.h: OutgoingMessage, the sender's half of one message: which
// bytes may go (unscheduled prefix + grants), which went, and what the
// receiver asked to have resent. Pure bookkeeping; the transport turns the
// packets it hands out into datagrams.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "homa/config.h"
#include "wharf/buffer.h"

namespace wharf::homa {

// One DATA packet to build: payload = message[offset, offset + length).
struct DataSlice {
  uint32_t offset = 0;
  uint32_t length = 0;
  uint8_t priority = 0;
  bool retransmit = false;
};

// Owned by its Rpc. Single-threaded (the engine's).
class OutgoingMessage {
 public:
  // `packet_payload_bytes`: most message bytes one DATA packet carries.
  // `unsched_priority`: priority for the unscheduled prefix.
  OutgoingMessage(Buffer message, uint32_t unsched_bytes, uint32_t packet_payload_bytes,
                  uint8_t unsched_priority);

  uint32_t length() const { return static_cast<uint32_t>(message_.size()); }
  std::span<const std::byte> bytes() const { return message_.span(); }
  // Offset up to which sending needs no grant (the DATA `incoming` field).
  uint32_t granted() const { return granted_; }
  uint32_t unsched_limit() const { return unsched_limit_; }
  uint32_t next_offset() const { return next_offset_; }
  // SRPT key: bytes not yet transmitted once.
  uint32_t bytes_remaining() const { return length() - next_offset_; }

  // True when a packet can be produced now (new granted data or a resend).
  bool HasPacketReady() const;
  // True once every byte went out at least once (a 0-byte message: its one
  // empty packet went out).
  bool FullySent() const { return first_sent_ && next_offset_ >= length(); }

  // The next packet to transmit: queued retransmissions first, then new data.
  // Precondition: HasPacketReady().
  DataSlice NextPacket();

  // GRANT(offset, priority): may send up to `offset` (clamped to length), new
  // data at `priority`. Grants never shrink. Returns true if it allowed more.
  bool HandleGrant(uint32_t offset, uint8_t priority);

  // RESEND(offset, length, priority). Queues the part of the range already
  // sent for retransmission and treats the whole range as granted (a RESEND
  // implies its grant, which recovers lost GRANTs). Returns false when part of
  // the range was never sent yet (the sender should answer BUSY).
  bool HandleResend(uint32_t offset, uint32_t length, uint8_t priority);

  // Sends everything again from scratch (after RPC_UNKNOWN: the peer lost the
  // whole message). Grants fall back to the unscheduled limit.
  void Restart();

 private:
  Buffer message_;
  uint32_t packet_payload_bytes_;
  uint32_t unsched_limit_;
  uint8_t unsched_priority_;
  uint8_t sched_priority_ = 0;
  uint32_t granted_;
  uint32_t next_offset_ = 0;
  bool first_sent_ = false;  // matters only for the 0-byte message
  // Ranges [begin, end) to retransmit, in request order, from
  // resend_queue_[resend_head_] on. A vector, not a deque: almost always
  // empty, and an empty std::deque allocates.
  std::vector<std::pair<uint32_t, uint32_t>> resend_queue_;
  size_t resend_head_ = 0;
};

}  // namespace wharf::homa
