// stream/client_rpcs.h: ClientRpcs, the client side of the TCP transport:
// every RPC we sent (ClientRpc, peer.h) from SendRequest until its response,
// failure or cancellation; which connection carries each request, and the
// re-sending of requests whose connection died; the ack floor each peer is
// owed (the oldest id still outstanding, carried by requests or an ACK
// frame); and the client's timers per peer: death by silence, PINGs, the
// delayed ACK.
//
// It does not hold connections or peers (ConnectionTable and PeerTable do;
// it reads and updates the client fields of Peer: outstanding, waiting,
// floor_sent, ack_due_ns, last_ping_ns), nor the server side (ServerRpcs).
// It queues frames on the connections the transport gives it and marks them
// for writing (WriteBatcher); the transport writes them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>

#include "base/clock.h"
#include "stream/config.h"
#include "stream/connection.h"
#include "stream/frame_parser.h"
#include "stream/peer.h"
#include "stream/send_queue.h"
#include "stream/stats.h"
#include "stream/write_batcher.h"
#include "transport/message_transport.h"
#include "wharf/buffer.h"
#include "wharf/result.h"

namespace wharf::stream {

// Owned by the transport; single-threaded (the transport's thread). Borrows
// `config`, `writes`, `events`, `stats` and `timers_dirty`, which must
// outlive it. Pushes a kResponse or kFailed event on `events` once for every
// RPC it ends that way (a cancelled one ends silently); sets *timers_dirty
// when it brings a peer's deadline forward (an ACK became due), so the
// transport ticks at its next Poll. Counts into `stats`: requests_sent,
// requests_resent, responses_delivered, late_responses, responses_lost,
// client_timeouts, peer_gone_failures, pings_sent, acks_sent, aborts_sent
// (of requests).
class ClientRpcs {
 public:
  // Ids start at `first_id` and ascend (so also by start time); the
  // transport starts them from the wall clock, so that a restarted client's
  // ids are new to every server.
  ClientRpcs(const TcpConfig& config, uint64_t first_id, WriteBatcher* writes,
             std::deque<transport::MessageEvent>* events, TcpStats* stats, bool* timers_dirty);
  ClientRpcs(const ClientRpcs&) = delete;
  ClientRpcs& operator=(const ClientRpcs&) = delete;

  // A new RPC to `peer`: it waits in peer.waiting until AssignWaiting puts
  // it on a connection. Returns its id. The request is kept whole until the
  // RPC ends, to be re-sent after a reconnect.
  uint64_t Start(Peer& peer, Buffer request, uint64_t cookie, TimeNs now);
  ClientRpc* Find(uint64_t id) {
    auto it = rpcs_.find(id);
    return it == rpcs_.end() ? nullptr : it->second.get();
  }
  size_t size() const { return rpcs_.size(); }

  // Queues the peer's waiting requests on its open connections, least
  // loaded first. A request some of which reached a server process that has
  // since restarted fails instead (kUnavailable): the old process may have
  // run it, so running it again could run it twice.
  void AssignWaiting(Peer& peer, TimeNs now);
  // Ends `rpc` without an event (cancelled, or answered): its request leaves
  // its connection (an ABORT follows a half-written one), a response still
  // arriving is dropped, and the peer's ack floor may rise (ScheduleAck).
  // Destroys `rpc`.
  void Finish(ClientRpc& rpc, TimeNs now);
  // Ends `rpc` with a kFailed event carrying `status`. Destroys `rpc`.
  void Fail(ClientRpc& rpc, Status status, TimeNs now);
  // A connect, read or write to `peer` failed with errno `err` (`why`). If
  // that is the kernel's word that the peer is gone (transport::tcp::PeerGone),
  // its RPCs waiting for a connection fail now with kUnavailable; those on
  // another open connection are still moving. A refused connect counts only
  // once we have known a process there (its HELLO): a peer never reached may
  // be starting, and is retried until the timeout.
  void FailWaiting(Peer& peer, int err, const Status& why, TimeNs now);

  // The ack floor for `peer`: every id of ours below it is finished.
  uint64_t Floor(const Peer& peer) const {
    return peer.outstanding.empty() ? next_id_ : *peer.outstanding.begin();
  }
  // Sets the peer's delayed-ACK deadline (now + tcp.ack_delay) if its floor
  // rose past what it was told and none is set.
  void ScheduleAck(Peer& peer, TimeNs now);
  // A write to a connection to `peer` carried `floor` on a REQUEST header.
  void OnFloorCarried(Peer& peer, uint64_t floor);

  // --- response frames from `peer` (ConnectionHandler, via the transport)
  // The first chunk of a response: kAccept for a pending RPC to this peer,
  // kDiscard for a late one, or for one the server says it lost (that RPC
  // fails with kDataLoss); a response over tcp.max_message_bytes fails its
  // RPC and is an error (the connection goes).
  Result<FrameParser::Decision> OnResponseStart(Peer& peer, const wire::StreamFrameHeader& first,
                                                TimeNs now);
  // A whole response: the kResponse event, and the RPC ends.
  void OnResponse(Peer& peer, uint64_t id, Buffer message, TimeNs now);
  // A response dropped for tcp.max_incoming_bytes: its RPC fails.
  void OnResponseRefused(Peer& peer, uint64_t id, Status refused, TimeNs now);

  // --- the connection's side
  // The last byte of request `f` left on `conn`: the request is no longer
  // queued there, and the server instance it reached is recorded.
  void OnRequestWritten(const Connection& conn, const SendQueue::Finished& f);
  // `conn` to `peer` closed: the requests it carried go back to the front of
  // peer.waiting (ahead of newer ones, in id order), to be re-sent whole on
  // another connection (the server drops duplicates). Call AssignWaiting
  // once the connection is out of peer.connections.
  void OnConnectionClosed(const Connection& conn, Peer& peer);

  // --- timers of `peer`, run by the transport's Tick in this order. Each
  // lowers *next to its next deadline and returns the work it did.
  // Death by silence: RPCs with nothing heard from the peer (and not
  // started) for tcp.peer_timeout fail with kUnavailable. Returns how many;
  // the caller then closes the peer's connections, which are as silent.
  int ExpireSilent(Peer& peer, TimeNs now, TimeNs* next);
  // A quiet peer we wait on is PINGed on every live connection each
  // tcp.ping_interval: a live peer's PONG is news.
  int SendPings(Peer& peer, TimeNs now, TimeNs* next);
  // The delayed ACK, once no request carried the risen floor for
  // tcp.ack_delay.
  int SendDelayedAck(Peer& peer, TimeNs now, TimeNs* next);

 private:
  // Constant after construction.
  const TcpConfig& config_;
  WriteBatcher& writes_;
  std::deque<transport::MessageEvent>& events_;
  TcpStats& stats_;
  bool& timers_dirty_;

  // Every RPC not yet ended, by id.
  std::unordered_map<uint64_t, std::unique_ptr<ClientRpc>> rpcs_;
  // The id of the next RPC (every id below it was given out).
  uint64_t next_id_;
  // PINGs carry a nonce, unique per transport.
  uint64_t next_ping_nonce_ = 1;
};

}  // namespace wharf::stream
