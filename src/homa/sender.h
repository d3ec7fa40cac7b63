// homa/sender.h: Sender, what a host sends on its own initiative: the DATA
// of its outgoing messages, shortest remaining first (SendQueue), paced for
// paths with a NIC queue below them (Pacer), and the acks it owes servers,
// piggybacked on that DATA or sent as ACK packets. HomaModule keeps the same
// state in homa_pacer (the throttled RPCs, the link's idle time) and in its
// peers' ack lists.
//
// It builds DATA packets into the transmit batch (tx_batcher.h); it does not
// answer packets (the host's handlers do) nor decide grants (grant.h).
#pragma once

#include <cstdint>
#include <vector>

#include "base/clock.h"
#include "homa/config.h"
#include "homa/pacer.h"
#include "homa/peer_table.h"
#include "homa/rpc.h"
#include "homa/rpc_registry.h"
#include "homa/send_queue.h"
#include "homa/stats.h"
#include "homa/tx_batcher.h"

namespace wharf::homa {

// Owned by HomaHost (one per socket, for every endpoint's messages).
// Borrows the host's clock, transmit batch, RPC registry and counters, which
// outlive it, and the RPCs it queues, which leave the queue (Dequeue) before
// they are freed. Single-threaded: the host's thread.
class Sender {
 public:
  // Most DATA packets one Pump builds (bounds the work of one call).
  static constexpr int kMaxPacketsPerPump = 256;

  Sender(const HomaConfig& config, const Clock& clock, TxBatcher* tx, RpcRegistry* rpcs,
         HomaStats* stats);
  Sender(const Sender&) = delete;
  Sender& operator=(const Sender&) = delete;

  // Queues rpc's outgoing message (or re-ranks it by the bytes it has left)
  // if it has a packet ready; else leaves the queue as it is.
  void Queue(Rpc& rpc) {
    if (!rpc.out || !rpc.out->HasPacketReady()) return;
    queue_.Set(rpc, rpc.out->bytes_remaining());
  }
  void Dequeue(Rpc& rpc) { queue_.Remove(rpc); }
  bool idle() const { return queue_.empty(); }

  // Builds DATA packets into the batch, the queue's head first, while the
  // pacer lets paced peers' packets go (short messages bypass it); returns
  // how many. Reads the clock only for a paced packet, unless `clock_fresh`
  // says `*now_ns` was just read; a read lands in `*now_ns`. A server RPC
  // whose response is fully sent turns kServerAwaitAck.
  int Pump(TimeNs* now_ns, bool clock_fresh);
  // When the pacer next lets a packet go (now or earlier: already).
  TimeNs NextSendTime() const { return pacer_.NextSendTime(); }

  // Queues an ack for `peer`: piggybacked on the next DATA from its client
  // endpoint, or sent by FlushAcks.
  void OweAck(Peer& peer, const OwedAck& ack);
  // Sends every ack still owed as ACK packets (the timer, every tick).
  void FlushAcks();
  // Sends the acks our endpoint `client_port` owes `peer`'s `server_port`
  // (those its floor does not already cover): at least one ACK packet,
  // carrying the floor.
  void SendAcks(Peer& peer, uint16_t client_port, uint16_t server_port);

  const Pacer& pacer() const { return pacer_; }

 private:
  // One DATA packet of rpc's message (with an owed ack and the ack floor
  // when it may carry them). `now` matters only for a paced peer.
  void EmitData(Rpc& rpc, TimeNs now);

  // Borrowed from the host, constant after construction.
  const Clock& clock_;                 // read only for paced packets
  TxBatcher& tx_;                      // where packets are built
  RpcRegistry& rpcs_;                  // the ack floors; kServerAwaitAck
  HomaStats& stats_;                   // counts data_sent, data_retransmitted, acks_sent
  const uint32_t pacer_bypass_bytes_;  // messages shorter than this skip the pacer

  // RPCs with a DATA packet ready, fewest untransmitted bytes first.
  SendQueue queue_;
  // The NIC queue estimate that paced packets wait for.
  Pacer pacer_;
  // Peers with Peer::owed_acks_listed set: FlushAcks' work list.
  std::vector<Peer*> peers_owed_acks_;
};

}  // namespace wharf::homa
