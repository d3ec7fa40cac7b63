// stream/server_rpcs.h: ServerRpcs, the server side of the TCP transport:
// requests from peers classified against the at-most-once memory
// (ServerTable, which it owns) and delivered to the application once,
// responses stored until the client acknowledges them and placed on a
// connection to the client (again after a reconnect, or for a re-sent
// request), and the byte bound on stored responses.
//
// It does not hold connections or peers (ConnectionTable and PeerTable do),
// nor our own RPCs as a client (ClientRpcs). It queues frames on the
// connections the transport gives it and marks them for writing
// (WriteBatcher); the transport writes them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>

#include "stream/config.h"
#include "stream/connection.h"
#include "stream/frame_parser.h"
#include "stream/peer.h"
#include "stream/send_queue.h"
#include "stream/server_table.h"
#include "stream/stats.h"
#include "stream/write_batcher.h"
#include "transport/message_transport.h"
#include "transport/net_address.h"
#include "wharf/buffer.h"
#include "wharf/result.h"

namespace wharf::stream {

// Owned by the transport; single-threaded (the transport's thread). Borrows
// `config`, `writes`, `events` and `stats`, which must outlive it. Pushes a
// kRequest event on `events` once per request id of a client instance
// (refused ones carry a non-ok status). Counts into `stats`:
// requests_delivered, responses_sent, responses_resent, duplicate_requests,
// oversize_refused, responses_evicted, aborts_sent (of responses).
class ServerRpcs {
 public:
  ServerRpcs(const TcpConfig& config, WriteBatcher* writes,
             std::deque<transport::MessageEvent>* events, TcpStats* stats);
  ServerRpcs(const ServerRpcs&) = delete;
  ServerRpcs& operator=(const ServerRpcs&) = delete;

  // SendResponse: stores the answer to an RPC in progress and queues it on
  // the least loaded open connection to `client` (the client's Peer, or
  // nullptr if we know none); with none, it waits for the client's next
  // connection. NotFound if
  // the RPC is gone (finished, cancelled, restarted, expired),
  // FailedPrecondition if already answered, InvalidArgument if over
  // tcp.max_message_bytes.
  Status Respond(const transport::ServerRpcKey& key, Buffer response, const Peer* client);

  // --- request frames from `peer` (ConnectionHandler, via the transport)
  // The first chunk of a request on `conn`: kAccept for a new one; kDiscard
  // for a duplicate (one already answered gets its stored response queued
  // on `conn` again), and for one over tcp.max_message_bytes, which is
  // delivered at once, empty, as a kResourceExhausted request.
  FrameParser::Decision OnRequestStart(Peer& peer, Connection& conn,
                                       const wire::StreamFrameHeader& first);
  // A whole request: delivered unless a copy finished first.
  void OnRequest(Peer& peer, uint64_t id, Buffer message);
  // A request dropped for tcp.max_incoming_bytes: delivered empty with
  // `refused`, so the application answers it like any other.
  void OnRequestRefused(Peer& peer, uint64_t id, Status refused);
  // The client acknowledged every id below `floor` (on a request or an ACK):
  // their records and stored responses go.
  void AdvanceFloor(Peer& peer, uint64_t floor);

  // --- the connection's side
  // A connection to `peer` completed its handshake: responses never written
  // whole (their connection died, or there was none) are queued on it; the
  // client drops copies of ones it already has.
  void QueueUnwritten(const Peer& peer, Connection& conn);
  // The last byte of response `f` left on `conn` (to `peer`): from now on
  // it counts for eviction.
  void OnResponseWritten(const Connection& conn, const Peer& peer, const SendQueue::Finished& f);
  // `conn` to `peer` closed: its queued responses stay stored, for the next
  // connection.
  void OnConnectionClosed(const Connection& conn, const Peer& peer);
  // Drops every record of `client` (it restarted, or has been gone for
  // 2 x tcp.peer_timeout), taking its responses off their connections.
  // Returns whether there was one.
  bool Forget(const transport::NetAddress& client);
  // Drops the oldest written responses while stored bytes are over
  // tcp.max_stored_response_bytes; a re-sent request for one is then told
  // it was lost.
  void EvictStoredResponses();

  // Whether the application holds requests of `client` (in progress): its
  // connection is not idle then.
  bool HoldsRequestsOf(const transport::NetAddress& client) const {
    const ClientRecord* record = table_.Find(client);
    return record != nullptr && record->in_progress > 0;
  }
  const ServerTable& table() const { return table_; }

 private:
  // The record of `peer` as a client, created on first use.
  ClientRecord& RecordFor(const Peer& peer);
  void Deliver(const Peer& peer, uint64_t id, Buffer message, Status status);
  void Queue(ServedRpc& served, uint64_t id, Connection& conn);
  // Takes a stored response off the connection queueing it (ABORTing a
  // half-sent one).
  void Detach(uint64_t id, ServedRpc& served);

  // Constant after construction.
  const TcpConfig& config_;
  WriteBatcher& writes_;
  std::deque<transport::MessageEvent>& events_;
  TcpStats& stats_;

  // The at-most-once memory: per client, RPCs in progress and responses
  // not yet acknowledged.
  ServerTable table_;
};

}  // namespace wharf::stream
