// TxBatcher: packets built into packed slots, and the batch handed to the
// socket at once, or held with its head sent early.
#include "homa/tx_batcher.h"

namespace wharf::homa {

TxBatcher::TxBatcher(transport::Datagram* net, uint8_t control_priority, HomaStats* stats)
    : net_(net), control_priority_(control_priority), stats_(stats) {
  buffer_.resize(kMaxPackets * kSlotBytes);
  batch_.reserve(kMaxPackets);
}

void TxBatcher::End() {
  if (depth_ == 0) return;
  if (--depth_ == 0) {
    if (!batch_.empty()) ++stats_->batched_flushes;
    Flush();
  }
}

void TxBatcher::FlushUnlessHeld(size_t window) {
  if (depth_ == 0) {
    Flush();
  } else if (!cut_ && batch_.size() >= HeadPackets(window)) {
    cut_ = true;
    ++stats_->batch_cuts;
    Flush();
  }
}

void TxBatcher::Flush() {
  size_t sent = 0;
  int stalls = 0;
  while (sent < batch_.size()) {
    Result<size_t> r = net_->Send(std::span(batch_).subspan(sent));
    if (!r.ok()) {
      ++stats_->send_errors;
      ++stats_->tx_dropped;
      ++sent;
      continue;
    }
    if (*r == 0 && ++stalls > 3) {
      stats_->tx_dropped += batch_.size() - sent;
      break;
    }
    sent += *r;
  }
  stats_->packets_sent += std::min(sent, batch_.size());
  batch_.clear();
  borrowed_ = 0;
}

std::span<std::byte> TxBatcher::NextSlot() {
  if (batch_.size() == kMaxPackets) Flush();
  size_t used = 0;
  if (!batch_.empty()) {
    const std::span<const std::byte> last = batch_.back().bytes;
    used = static_cast<size_t>(last.data() + last.size() - buffer_.data());
  }
  return {buffer_.data() + used, kSlotBytes};
}

void TxBatcher::AddControl(const transport::NetAddress& to, uint16_t sport, uint16_t dport,
                           uint64_t rpc_id, const wire::Body& body, uint8_t flags) {
  static constexpr wire::PacketType kTypes[] = {
      wire::PacketType::kData,       wire::PacketType::kGrant, wire::PacketType::kResend,
      wire::PacketType::kRpcUnknown, wire::PacketType::kBusy,  wire::PacketType::kCutoffs,
      wire::PacketType::kNeedAck,    wire::PacketType::kAck};
  wire::Packet packet;
  packet.common.type = kTypes[body.index()];
  packet.common.flags = flags;
  packet.common.sport = sport;
  packet.common.dport = dport;
  packet.common.rpc_id = rpc_id;
  packet.body = body;
  std::span<std::byte> slot = NextSlot();
  Result<size_t> size = wire::Encode(packet, slot);
  if (!size.ok()) {
    ++stats_->send_errors;
    return;
  }
  batch_.push_back({to, slot.first(*size), control_priority_});
}

}  // namespace wharf::homa
