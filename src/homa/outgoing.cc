// OutgoingMessage: grant and resend bookkeeping for one message being sent.
#include "homa/outgoing.h"

#include <algorithm>

namespace wharf::homa {

OutgoingMessage::OutgoingMessage(Buffer message, uint32_t unsched_bytes,
                                 uint32_t packet_payload_bytes, uint8_t unsched_priority)
    : message_(std::move(message)),
      packet_payload_bytes_(std::max<uint32_t>(1, packet_payload_bytes)),
      unsched_priority_(unsched_priority) {
  // Round the unscheduled prefix up to whole packets, as Homa does, so the
  // last unscheduled packet is never a runt.
  uint64_t packets = (uint64_t{unsched_bytes} + packet_payload_bytes_ - 1) / packet_payload_bytes_;
  uint64_t limit = std::max<uint64_t>(1, packets) * packet_payload_bytes_;
  unsched_limit_ = static_cast<uint32_t>(std::min<uint64_t>(limit, length()));
  granted_ = unsched_limit_;
}

bool OutgoingMessage::HasPacketReady() const {
  if (resend_head_ < resend_queue_.size()) return true;
  if (!first_sent_) return true;
  return next_offset_ < granted_;
}

DataSlice OutgoingMessage::NextPacket() {
  DataSlice slice;
  if (resend_head_ < resend_queue_.size()) {
    auto& [begin, end] = resend_queue_[resend_head_];
    slice.offset = begin;
    slice.length = std::min(end - begin, packet_payload_bytes_);
    slice.priority = begin < unsched_limit_ ? unsched_priority_ : sched_priority_;
    slice.retransmit = true;
    begin += slice.length;
    if (begin >= end && ++resend_head_ == resend_queue_.size()) {
      resend_queue_.clear();
      resend_head_ = 0;
    }
    return slice;
  }
  slice.offset = next_offset_;
  uint32_t limit = std::max(granted_, next_offset_);
  slice.length = std::min(limit - next_offset_, packet_payload_bytes_);
  slice.priority = next_offset_ < unsched_limit_ ? unsched_priority_ : sched_priority_;
  next_offset_ += slice.length;
  first_sent_ = true;
  return slice;
}

bool OutgoingMessage::HandleGrant(uint32_t offset, uint8_t priority) {
  uint32_t clamped = std::min(offset, length());
  // A stale (reordered) grant must not change the priority either.
  if (clamped < granted_) return false;
  sched_priority_ = priority;
  if (clamped == granted_) return false;
  granted_ = clamped;
  return true;
}

bool OutgoingMessage::HandleResend(uint32_t offset, uint32_t length, uint8_t priority) {
  uint32_t msg_len = this->length();
  if (msg_len == 0) {
    // The single empty packet.
    if (first_sent_) resend_queue_.emplace_back(0, 0);
    return first_sent_;
  }
  uint64_t end64 = std::min<uint64_t>(uint64_t{offset} + length, msg_len);
  uint32_t end = static_cast<uint32_t>(end64);
  if (offset >= end) return true;
  if (end > granted_) {
    sched_priority_ = priority;
    granted_ = end;
  }
  uint32_t sent_end = std::min(end, next_offset_);
  if (offset < sent_end) {
    // Merge with the queue tail when it is the same request repeated.
    if (resend_head_ == resend_queue_.size() ||
        resend_queue_.back() != std::make_pair(offset, sent_end)) {
      resend_queue_.emplace_back(offset, sent_end);
    }
  }
  return sent_end >= end;
}

void OutgoingMessage::Restart() {
  resend_queue_.clear();
  resend_head_ = 0;
  next_offset_ = 0;
  first_sent_ = false;
  granted_ = unsched_limit_;
}

}  // namespace wharf::homa
