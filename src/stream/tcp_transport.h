// stream/tcp_transport.h: TcpMessageTransport, wharf's tcp:// transport:
// reliable request/response messages over TCP with the semantics of homa://
// (transport/message_transport.h): a request runs at most once even across
// reconnects, every RPC ends in one event, a peer the kernel declares gone
// (a refused reconnect, an unreachable host) fails its RPCs with kUnavailable
// at once, and a peer silent for tcp.peer_timeout (seconds) after that.
// docs/transports.md ("TCP message transport") is the specification;
// wire/stream_frame.h the frames.
//
// The transport dispatches; its parts hold the state:
//   ConnectionTable  the listener, the epoll set, each connection's socket
//                    from accept or dial to close (connection_table.h);
//   Connection       one connection's framing, send queue and receive
//                    assembly (connection.h);
//   PeerTable        what we know of each remote transport (peer.h);
//   ClientRpcs       our RPCs as a client, their re-sending, ack floors and
//                    client timers (client_rpcs.h);
//   ServerRpcs       requests classified at most once, stored responses
//                    (server_rpcs.h, over ServerTable);
//   WriteBatcher     which connections to write, and batches held open by
//                    the application (write_batcher.h);
//   LargeBufferPool  (transport/) the reused buffers of large incoming
//                    messages.
// What stays here: the public calls, the handshake and peer identity, what
// an arriving frame or a closing connection means for those parts, the
// reads and writes of a Poll, and the timers that span them (handshake and
// idle deadlines, dialling, forgetting peers).
//
// Time comes only from the injected Clock, so timeouts can be driven by a
// SimClock while real sockets move the bytes.
#pragma once

#include <sys/epoll.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/log.h"
#include "stream/client_rpcs.h"
#include "stream/config.h"
#include "stream/connection.h"
#include "stream/connection_table.h"
#include "stream/frame_parser.h"
#include "stream/peer.h"
#include "stream/server_rpcs.h"
#include "stream/stats.h"
#include "stream/write_batcher.h"
#include "transport/message_transport.h"

namespace wharf::stream {

// Owned by the engine's host (or a test). Single-threaded: every call from
// the one thread that drives it. Borrows `clock`, which must outlive it.
class TcpMessageTransport final : public transport::MessageTransport, private ConnectionHandler {
 public:
  // Listens on config.bind and returns the transport; errors name the key
  // ("tcp.chunk_bytes: ...") or the socket call ("bind 127.0.0.1:4000: ...").
  static Result<std::unique_ptr<TcpMessageTransport>> Open(const TcpConfig& config,
                                                           const Clock& clock);
  ~TcpMessageTransport() override;

  const TcpConfig& config() const { return config_; }
  const TcpStats& stats() const;
  // Differs for every Open (wall clock mixed with randomness): peers tell a
  // restarted process from the one they knew.
  uint64_t instance_id() const { return instance_id_; }

  // --- transport::MessageTransport ---
  std::string_view scheme() const override { return "tcp"; }
  transport::NetAddress LocalAddress() const override { return local_; }
  Result<uint64_t> SendRequest(const transport::NetAddress& server, Buffer request,
                               uint64_t cookie = 0) override;
  // A chosen priority marks the peer's connections with its DSCP class
  // selector (priority 2 is CS2) from this message on: one stream per
  // peer, so the marking is the peer's, and the latest choice holds.
  Result<uint64_t> SendRequestTo(const transport::NetAddress& server, uint16_t server_endpoint,
                                 Buffer request, uint64_t cookie,
                                 const transport::SendOptions& options = {}) override;
  Status SendResponse(const transport::ServerRpcKey& key, Buffer response,
                      transport::MessagePriority priority = transport::kPriorityBySize) override;
  // Drops the RPC: chunks not yet written are not sent; a half-written chunk
  // is finished (the stream must stay framed) and then an ABORT tells the
  // server to drop what it received. A request already written whole may
  // still run; its response is dropped on arrival.
  bool Cancel(uint64_t client_id) override;
  // While a batch is open (they nest), SendRequest and SendResponse only
  // queue their frames on the connections, and EndBatch or the next Poll
  // writes each connection once: one writev for a burst of messages
  // instead of one each (WriteBatcher).
  void BeginBatch() override { writes_.Begin(); }
  void EndBatch() override;
  // Accepts, connects, reads, writes and runs the timers that are due;
  // never blocks.
  transport::PollResult Poll() override;
  TimeNs NextDeadline() const override;
  bool PopEvent(transport::MessageEvent* out) override;
  // An epoll fd holding every socket of the transport (nested epoll: the
  // host adds it to its own set); readable when Poll has I/O to do.
  int ReadableFd() const override { return conns_.epoll_fd(); }
  std::vector<std::pair<std::string, uint64_t>> Counters() const override;

  // --- inspection, for tests and diagnostics ---
  // Bytes of partially received messages now held (the shared budget).
  uint64_t incoming_buffer_bytes() const { return budget_.used; }
  size_t num_client_rpcs() const { return client_.size(); }
  // Server RPCs remembered for at-most-once (in progress or unacknowledged).
  size_t num_server_rpcs() const { return server_.table().num_rpcs(); }
  // Clients with an at-most-once record.
  size_t num_server_clients() const { return server_.table().num_clients(); }
  uint64_t stored_response_bytes() const { return server_.table().stored_bytes(); }
  // Connections not closed (any state, both directions).
  size_t num_connections() const { return conns_.size(); }
  size_t num_peers() const { return peers_.size(); }
  size_t pending_events() const { return events_.size(); }

  // Test hook: shuts down (SHUT_RDWR) every socket, or those to one peer
  // identity, as a network failure would; the transport finds out on its
  // next Poll, like the peer does. Returns how many.
  size_t ShutdownConnectionsForTesting() { return conns_.ShutdownForTesting(nullptr); }
  size_t ShutdownConnectionsForTesting(const transport::NetAddress& peer) {
    return conns_.ShutdownForTesting(&peer);
  }

  // The TOS bytes of `server`'s connections as the kernel has them (tests).
  std::vector<int> ConnectionTrafficClassesForTest(const transport::NetAddress& server);

 private:
  TcpMessageTransport(const TcpConfig& config, const Clock& clock);

  // --- ConnectionHandler: frames a connection's parser found
  Status OnHello(Connection& conn, const wire::StreamHello& hello) override;
  Status OnFrame(Connection& conn, const wire::StreamFrameHeader& header) override;
  Result<FrameParser::Decision> OnMessageStart(Connection& conn,
                                               const wire::StreamFrameHeader& first) override;
  void OnMessage(Connection& conn, wire::StreamFrameType type, uint64_t rpc_id,
                 Buffer message) override;
  void OnMessageRefused(Connection& conn, wire::StreamFrameType type, uint64_t rpc_id,
                        uint32_t length) override;
  // A known peer came back as a new process.
  void OnPeerRestart(Peer& peer, uint64_t new_instance, Connection& via);

  // --- connections
  void AcceptAll();
  void Dial(Peer& peer);
  // Marks `peer` (and its connections) with `priority`'s class selector,
  // unless it is kPriorityBySize or already so.
  void MarkPeer(Peer& peer, transport::MessagePriority priority);
  // Gives a connection that just joined `peer` the peer's marking.
  void ApplyPeerMarking(const Peer& peer, Connection& conn);
  void SendHello(Connection& conn);
  void HandleIo(Connection& conn, uint32_t events);
  void ReadFrom(Connection& conn);
  // Writes what `conn` has queued; returns the bytes the kernel took.
  size_t Flush(Connection& conn);
  // Writes every connection on the dirty list that can take bytes.
  void FlushDirty();
  // After an API call queued a message: flushes unless a batch holds it.
  // Inline: it runs for every message sent.
  void FlushUnlessHeld() {
    const WriteBatcher::Verdict verdict = writes_.NoteQueued();
    if (verdict == WriteBatcher::Verdict::kHold) return;
    if (verdict == WriteBatcher::Verdict::kCut) ++stats_.batch_cuts;
    FlushDirty();
  }
  // Closes `conn`: its requests go back to their peer's waiting list (to be
  // re-sent on another connection), its queued responses stay stored. When
  // a connect, read or write failed with errno `err`, the peer's waiting
  // RPCs fail at once if that is the kernel's word that the peer is gone
  // (ClientRpcs::FailWaiting).
  void Close(Connection& conn, const Status& reason, CloseKind kind, int err = 0);

  // --- timers
  // Runs what is due and recomputes next_timer_ns_.
  int Tick();
  int TickPeer(Peer& peer, TimeNs* next);
  bool NeedsDial(const Peer& peer) const;
  // When `conn` (open) becomes idle, or kNever while anything is pending on it.
  TimeNs IdleDeadline(const Connection& conn) const;

  // Constant after construction.
  const TcpConfig config_;
  const Clock& clock_;
  const uint64_t instance_id_;
  // The listener's address (LocalAddress), set by Open.
  transport::NetAddress local_;
  // The most bytes one writev of a connection carries.
  const size_t write_batch_bytes_;

  // The clock as read at the start of the current Poll or public call.
  TimeNs now_ = 0;
  // Set when state changed so that a deadline may be earlier than
  // next_timer_ns_: the next Poll ticks. Also set by ClientRpcs.
  bool timers_dirty_ = false;
  // When Tick must run next (kNever: nothing pending).
  TimeNs next_timer_ns_ = kNever;

  // Counters (mutable: stats() folds in gauges), and the log's rate limit;
  // the parts below count and log through them.
  mutable TcpStats stats_;
  RateLimitedLogger log_limiter_;

  // Events for the host, in order (PopEvent); pushed by the parts.
  std::deque<transport::MessageEvent> events_;
  // Bytes of partially received messages, over all connections.
  IncomingBudget budget_;
  // Whole buffers of large incoming messages, reused (shared: delivered
  // messages hold it too, see LargeBufferPool).
  std::shared_ptr<transport::LargeBufferPool> pool_;

  WriteBatcher writes_;
  PeerTable peers_;
  ClientRpcs client_;
  ServerRpcs server_;
  // Declared after what its connections borrow (budget_, pool_) and what
  // holds pointers to them (peers_, client_, server_), so destroyed first.
  ConnectionTable conns_;

  // Scratch, kept to avoid allocating per Poll or per write.
  std::vector<std::byte> scratch_;             // read buffer shared by all connections
  std::vector<SendQueue::Finished> finished_;  // Flush's finished messages
  std::vector<uint64_t> flushing_;             // FlushDirty's taken dirty list
  std::vector<Connection*> accepted_;          // AcceptAll's new connections
};

}  // namespace wharf::stream
