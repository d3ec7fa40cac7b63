// Sender: the SRPT pump (paced for paced peers), DATA packets with their
// piggybacked acks, and the ACK packets of acks still owed.
#include "homa/sender.h"

namespace wharf::homa {

Sender::Sender(const HomaConfig& config, const Clock& clock, TxBatcher* tx, RpcRegistry* rpcs,
               HomaStats* stats)
    : clock_(clock),
      tx_(*tx),
      rpcs_(*rpcs),
      stats_(*stats),
      pacer_bypass_bytes_(config.pacer_bypass_bytes),
      pacer_(config.link_bps, config.max_nic_backlog_ns) {}

int Sender::Pump(TimeNs* now_ns, bool clock_fresh) {
  int produced = 0;
  // Only the pacer needs the time, and only for paced peers: a request or
  // response to a local peer goes out without reading the clock.
  auto now = [&] {
    if (!clock_fresh) {
      *now_ns = clock_.NowNs();
      clock_fresh = true;
    }
    return *now_ns;
  };
  while (!queue_.empty() && produced < kMaxPacketsPerPump) {
    Rpc& rpc = queue_.Top();
    if (!rpc.out || !rpc.out->HasPacketReady()) {
      queue_.Remove(rpc);
      continue;
    }
    // SRPT: the queue head is the message closest to done. Short messages
    // bypass the pacer; everything else waits for the NIC queue to drain.
    if (rpc.out->length() >= pacer_bypass_bytes_ && rpc.peer->paced && !pacer_.CanSend(now())) {
      break;
    }
    EmitData(rpc, rpc.peer->paced ? now() : 0);
    ++produced;
    if (rpc.out->FullySent() && rpc.state == RpcState::kServerSending) {
      rpcs_.MarkAwaitingAck(rpc);
      rpc.Heard();
    }
    // Re-rank by the bytes now remaining (Queue leaves an unchanged key
    // alone), or leave the queue when nothing more is ready.
    if (rpc.out->HasPacketReady()) {
      Queue(rpc);
    } else {
      queue_.Remove(rpc);
    }
  }
  return produced;
}

void Sender::EmitData(Rpc& rpc, TimeNs now) {
  const DataSlice slice = rpc.out->NextPacket();
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
  Peer& peer = *rpc.peer;
  if (!peer.pending_acks.empty() && peer.pending_acks.back().client_port == rpc.local_port) {
    data.ack = peer.pending_acks.back().ack();
    peer.pending_acks.pop_back();
  }
  if (rpc.is_client()) data.ack_floor = rpcs_.ClientFloor(peer, rpc.local_port, rpc.peer_port);
  // The first transmission of a request's first packet carries the
  // departure token (its id) when the caller asked for the stamp.
  uint64_t token = 0;
  if (rpc.stamp_departure && slice.offset == 0 && !slice.retransmit) {
    token = rpc.id;
    rpc.stamp_departure = false;
  }
  tx_.AddData(rpc.peer_addr, common, data, rpc.out->bytes().subspan(slice.offset, slice.length),
              slice.priority, token);
  if (peer.paced) pacer_.OnSent(now, wire::kDataHeaderBytes + slice.length);
  ++stats_.data_sent;
  if (slice.retransmit) ++stats_.data_retransmitted;
}

void Sender::OweAck(Peer& peer, const OwedAck& ack) {
  peer.pending_acks.push_back(ack);
  if (!peer.owed_acks_listed) {
    peer.owed_acks_listed = true;
    peers_owed_acks_.push_back(&peer);
  }
}

void Sender::FlushAcks() {
  // Only the peers owed acks: walking the whole table every tick would cost
  // max_peers steps per millisecond. A peer owed acks is not idle, so none
  // was removed meanwhile.
  for (Peer* peer : peers_owed_acks_) {
    peer->owed_acks_listed = false;
    while (!peer->pending_acks.empty()) {
      const OwedAck& first = peer->pending_acks.front();
      SendAcks(*peer, first.client_port, first.server_port);
    }
  }
  peers_owed_acks_.clear();
}

void Sender::SendAcks(Peer& peer, uint16_t client_port, uint16_t server_port) {
  const uint64_t floor = rpcs_.ClientFloor(peer, client_port, server_port);
  wire::AckList acks;
  bool sent_any = false;
  auto send = [&] {
    // The packet's rpc_id carries our floor for that pair of endpoints.
    tx_.AddControl(peer.addr, client_port, server_port, floor, acks);
    ++stats_.acks_sent;
    acks.count = 0;
    sent_any = true;
  };
  // Keep acks for other endpoint pairs; those below the floor need no entry.
  size_t kept = 0;
  for (const OwedAck& ack : peer.pending_acks) {
    if (ack.server_port != server_port || ack.client_port != client_port) {
      peer.pending_acks[kept++] = ack;
    } else if (ack.client_id >= floor) {
      acks.acks[acks.count++] = ack.ack();
      if (acks.count == wire::kMaxAcksPerPacket) send();
    }
  }
  peer.pending_acks.resize(kept);
  if (acks.count > 0 || !sent_any) send();
}

}  // namespace wharf::homa
