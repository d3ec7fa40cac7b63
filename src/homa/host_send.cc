// HomaHost's send path: the SRPT send queue and its pump (paced for paced
// peers), packets built into the transmit batch (DATA headers with short
// payloads inline, longer ones borrowed from the message), and the batch
// handed to the socket: at once, or held between BeginBatch and EndBatch
// with its head sent early (HeldPacketsBeforeCut).
#include <algorithm>
#include <cstring>

#include "homa/homa_endpoint.h"
#include "homa/homa_host.h"

namespace wharf::homa {

void HomaHost::BeginBatch() {
  if (batch_depth_++ == 0) batch_cut_ = false;
}

void HomaHost::FlushUnlessHeld() {
  if (batch_depth_ == 0) {
    FlushTx();
  } else if (!batch_cut_ && tx_batch_.size() >= HeldPacketsBeforeCut()) {
    batch_cut_ = true;
    ++stats_.batch_cuts;
    FlushTx();
  }
}

void HomaHost::EndBatch() {
  if (batch_depth_ == 0) return;
  if (--batch_depth_ == 0) {
    if (!tx_batch_.empty()) ++stats_.batched_flushes;
    FlushTx();
  }
}

void HomaHost::QueueForSend(Rpc& rpc) {
  if (!rpc.out || !rpc.out->HasPacketReady()) return;
  send_queue_.Set(rpc, rpc.out->bytes_remaining());
}

void HomaHost::DequeueFromSend(Rpc& rpc) { send_queue_.Remove(rpc); }

int HomaHost::PumpSends(bool clock_fresh) {
  int produced = 0;
  // Only the pacer needs the time, and only for paced peers: a request or
  // response to a local peer goes out without reading the clock.
  auto now = [&] {
    if (!clock_fresh) {
      now_ns_ = clock_.NowNs();
      clock_fresh = true;
    }
    return now_ns_;
  };
  while (!send_queue_.empty() && produced < kMaxTxPacketsPerPump) {
    Rpc& rpc = send_queue_.Top();
    if (!rpc.out || !rpc.out->HasPacketReady()) {
      DequeueFromSend(rpc);
      continue;
    }
    // SRPT: the queue head is the message closest to done. Short messages
    // bypass the pacer; everything else waits for the NIC queue to drain.
    if (rpc.out->length() >= config_.pacer_bypass_bytes && rpc.peer->paced &&
        !pacer_.CanSend(now())) {
      break;
    }
    EmitData(rpc, rpc.peer->paced ? now() : 0);
    ++produced;
    if (rpc.out->FullySent() && rpc.state == RpcState::kServerSending) {
      rpc.state = RpcState::kServerAwaitAck;
      ++num_awaiting_ack_;
      rpc.Heard();
    }
    // Re-rank by the bytes now remaining (QueueForSend leaves an unchanged
    // key alone), or leave the queue when nothing more is ready.
    if (rpc.out->HasPacketReady()) {
      QueueForSend(rpc);
    } else {
      DequeueFromSend(rpc);
    }
  }
  return produced;
}

std::span<std::byte> HomaHost::NextTxSlot() {
  if (tx_batch_.size() == kTxBatch) FlushTx();
  // Packed: each datagram's header part (with an inline payload) starts
  // where the previous one ended, so a run of short datagrams is one
  // contiguous range, which the socket hands the kernel as one iovec: one
  // copy per GSO send instead of one per datagram. kTxBatch slots of
  // kTxSlotBytes always fit.
  size_t used = 0;
  if (!tx_batch_.empty()) {
    const std::span<const std::byte> last = tx_batch_.back().bytes;
    used = static_cast<size_t>(last.data() + last.size() - tx_buffer_.data());
  }
  return {tx_buffer_.data() + used, kTxSlotBytes};
}

void HomaHost::EmitData(Rpc& rpc, TimeNs now) {
  DataSlice slice = rpc.out->NextPacket();
  wire::CommonHeader common;
  common.type = wire::PacketType::kData;
  common.flags = slice.retransmit ? wire::kFlagRetransmit : 0;
  common.sport = rpc.local_port;
  common.dport = rpc.peer_port;
  common.rpc_id = rpc.id;
  wire::DataHeader data;
  data.message_length = rpc.out->length();
  data.offset = slice.offset;
  data.incoming = rpc.out->granted();
  data.cutoff_version = rpc.peer->cutoff_version;
  // An ack rides only on a packet from the endpoint that owes it: the
  // receiver takes the packet's sport for the client. (With one endpoint,
  // always.)
  if (!rpc.peer->pending_acks.empty() &&
      rpc.peer->pending_acks.back().client_port == rpc.local_port) {
    data.ack = rpc.peer->pending_acks.back().ack();
    rpc.peer->pending_acks.pop_back();
  }
  if (rpc.is_client()) data.ack_floor = ClientFloor(*rpc.peer, rpc.local_port, rpc.peer_port);

  std::span<std::byte> slot = NextTxSlot();
  // The slot holds any header, so this cannot fail.
  (void)wire::EncodeDataHeader(common, data, slot);
  std::span<const std::byte> payload = rpc.out->bytes().subspan(slice.offset, slice.length);
  if (payload.size() <= kInlinePayloadBytes) {
    if (!payload.empty()) {
      std::memcpy(slot.data() + wire::kDataHeaderBytes, payload.data(), payload.size());
    }
    tx_batch_.push_back(
        {rpc.peer_addr, slot.first(wire::kDataHeaderBytes + payload.size()), slice.priority});
  } else {
    // Gather send: the payload goes out from the message itself, uncopied.
    // It stays valid until FlushTx, which runs before anything can free it
    // (see tx_batch_).
    tx_batch_.push_back(
        {rpc.peer_addr, slot.first(wire::kDataHeaderBytes), slice.priority, payload});
    ++tx_borrowed_;
  }
  if (rpc.peer->paced) pacer_.OnSent(now, wire::kDataHeaderBytes + slice.length);
  ++stats_.data_sent;
  if (slice.retransmit) ++stats_.data_retransmitted;
}

void HomaHost::EmitControl(const transport::NetAddress& to, uint16_t sport, uint16_t dport,
                           uint64_t rpc_id, const wire::Body& body, uint8_t flags) {
  static constexpr wire::PacketType kTypes[] = {
      wire::PacketType::kData,    wire::PacketType::kGrant,   wire::PacketType::kResend,
      wire::PacketType::kRpcUnknown, wire::PacketType::kBusy, wire::PacketType::kCutoffs,
      wire::PacketType::kNeedAck, wire::PacketType::kAck};
  wire::Packet packet;
  packet.common.type = kTypes[body.index()];
  packet.common.flags = flags;
  packet.common.sport = sport;
  packet.common.dport = dport;
  packet.common.rpc_id = rpc_id;
  packet.body = body;
  std::span<std::byte> slot = NextTxSlot();
  Result<size_t> size = wire::Encode(packet, slot);
  if (!size.ok()) {
    ++stats_.send_errors;
    return;
  }
  tx_batch_.push_back({to, slot.first(*size), config_.control_priority});
}

void HomaHost::FlushTx() {
  size_t sent = 0;
  int stalls = 0;
  while (sent < tx_batch_.size()) {
    Result<size_t> r = net_->Send(std::span(tx_batch_).subspan(sent));
    if (!r.ok()) {
      // A datagram the socket refuses outright: drop it; the protocol's
      // resend machinery recovers as from any loss.
      ++stats_.send_errors;
      ++stats_.tx_dropped;
      ++sent;
      continue;
    }
    if (*r == 0 && ++stalls > 3) {
      stats_.tx_dropped += tx_batch_.size() - sent;
      break;
    }
    sent += *r;
  }
  stats_.packets_sent += std::min(sent, tx_batch_.size());
  tx_batch_.clear();
  tx_borrowed_ = 0;
}

}  // namespace wharf::homa
