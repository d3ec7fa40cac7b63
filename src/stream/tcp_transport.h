// stream/tcp_transport.h: TcpMessageTransport, wharf's tcp:// transport:
// reliable request/response messages over TCP with the semantics of homa://
// (transport/message_transport.h): a request runs at most once even across
// reconnects, every RPC ends in one event, a peer the kernel declares gone
// (a refused reconnect, an unreachable host) fails its RPCs with kUnavailable
// at once, and a peer silent for tcp.peer_timeout (seconds) after that. docs/transports.md ("TCP message transport") is the
// specification; wire/stream_frame.h the frames.
//
// Files: tcp_transport.cc (setup, the public calls, RPC bookkeeping),
// tcp_io.cc (epoll, accept, connect, read, write, close), tcp_handlers.cc
// (what arriving frames do), tcp_timers.cc (acks, pings, peer death,
// reconnects, forgetting). One TCP connection is a Connection (framing, send
// queue, receive assembly); Peer holds the per-peer state, ServerTable the
// at-most-once memory, LargeBufferPool (transport/) the reused buffers of large
// incoming messages.
//
// Time comes only from the injected Clock, so timeouts can be driven by a
// SimClock while real sockets move the bytes.
#pragma once

#include <sys/epoll.h>

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "base/log.h"
#include "stream/config.h"
#include "stream/connection.h"
#include "stream/frame_parser.h"
#include "stream/peer.h"
#include "stream/server_table.h"
#include "stream/stats.h"
#include "transport/message_transport.h"
#include "transport/tcp/tcp_socket.h"

namespace wharf::stream {

// Owned by the engine's host (or a test). Single-threaded: every call from
// the one thread that drives it. Borrows `clock`, which must outlive it.
class TcpMessageTransport final : public transport::MessageTransport,
                                  private ConnectionHandler {
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
  Status SendResponse(const transport::ServerRpcKey& key, Buffer response) override;
  // Drops the RPC: chunks not yet written are not sent; a half-written chunk
  // is finished (the stream must stay framed) and then an ABORT tells the
  // server to drop what it received. A request already written whole may
  // still run; its response is dropped on arrival.
  bool Cancel(uint64_t client_id) override;
  // While a batch is open (they nest), SendRequest and SendResponse only
  // queue their frames on the connections (dirty_), and EndBatch or the
  // next Poll writes each connection once: one writev for a burst of
  // messages instead of one each.
  void BeginBatch() override;
  void EndBatch() override;
  // Accepts, connects, reads, writes and runs the timers that are due;
  // never blocks.
  transport::PollResult Poll() override;
  TimeNs NextDeadline() const override;
  bool PopEvent(transport::MessageEvent* out) override;
  // An epoll fd holding every socket of the transport (nested epoll: the
  // host adds it to its own set); readable when Poll has I/O to do.
  int ReadableFd() const override { return epoll_fd_; }
  std::vector<std::pair<std::string, uint64_t>> Counters() const override;

  // --- inspection, for tests and diagnostics ---
  // Bytes of partially received messages now held (the shared budget).
  uint64_t incoming_buffer_bytes() const { return budget_.used; }
  size_t num_client_rpcs() const { return client_rpcs_.size(); }
  // Server RPCs remembered for at-most-once (in progress or unacknowledged).
  size_t num_server_rpcs() const { return table_.num_rpcs(); }
  // Clients with an at-most-once record.
  size_t num_server_clients() const { return table_.num_clients(); }
  uint64_t stored_response_bytes() const { return table_.stored_bytes(); }
  // Connections not closed (any state, both directions).
  size_t num_connections() const { return conns_.size(); }
  size_t num_peers() const { return peers_.size(); }
  size_t pending_events() const { return events_.size(); }

  // Test hook: shuts down (SHUT_RDWR) every socket, or those to one peer
  // identity, as a network failure would; the transport finds out on its
  // next Poll, like the peer does. Returns how many.
  size_t ShutdownConnectionsForTesting();
  size_t ShutdownConnectionsForTesting(const transport::NetAddress& peer);

 private:
  // How a connection ended, for the counters and the log level.
  enum class CloseKind : uint8_t {
    kConnectFailed,  // a dial that never connected
    kPeerClosed,     // EOF between frames
    kSocketError,    // reset, timeout or another kernel error
    kProtocolError,  // malformed input
    kTimeout,        // handshake not done, or the peer presumed dead
    kPeerRestarted,  // superseded by a HELLO with a new instance id
    kIdle,           // nothing pending and nothing heard for tcp.idle_timeout
    kRefused,        // over a cap (tcp.max_peers)
  };

  TcpMessageTransport(const TcpConfig& config, const Clock& clock, int listen_fd, int epoll_fd,
                      const transport::NetAddress& local);

  // --- ConnectionHandler (tcp_handlers.cc) ---
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
  // The record of `peer` as a client, created on first use.
  ClientRecord& RecordFor(Peer& peer);
  void AdvanceClientFloor(Peer& peer, uint64_t floor);
  void DeliverRequest(Peer& peer, uint64_t id, Buffer message, Status status);

  // --- I/O (tcp_io.cc) ---
  Connection* AddConnection(int fd, bool outbound, const transport::NetAddress& remote,
                            Connection::State state);
  void AcceptAll();
  void Dial(Peer& peer);
  void OnConnected(Connection& conn);
  void HandleIo(Connection& conn, uint32_t events);
  void ReadFrom(Connection& conn);
  // Writes what `conn` has queued; returns the bytes the kernel took.
  size_t Flush(Connection& conn);
  void MarkDirty(Connection& conn);
  void FlushDirty();
  void SetWantWrite(Connection& conn, bool want);
  void SendHello(Connection& conn);
  // Closes `conn`: its requests go back to their peer's waiting list (to be
  // re-sent on another connection), its queued responses stay stored.
  void Close(Connection& conn, const Status& reason, CloseKind kind);
  // Destroys closed connections (outside of any callback).
  void Reap() { graveyard_.clear(); }

  // --- RPC bookkeeping (tcp_transport.cc) ---
  ClientRpc* FindClientRpc(uint64_t id);
  // Queues the peer's waiting requests on its open connections.
  void AssignWaiting(Peer& peer);
  void FinishClientRpc(ClientRpc& rpc);
  void FailClientRpc(ClientRpc& rpc, Status status);
  uint64_t ClientFloor(const Peer& peer) const;
  void ScheduleAck(Peer& peer);
  void QueueResponse(ServedRpc& served, uint64_t id, Connection& conn);
  // Takes a stored response off the connection queueing it (ABORTing a
  // half-sent one).
  void DetachResponse(uint64_t id, ServedRpc& served);
  void EvictStoredResponses();
  void PushEvent(transport::MessageEvent event) { events_.push_back(std::move(event)); }

  // --- timers (tcp_timers.cc) ---
  // Runs what is due and recomputes next_timer_ns_.
  int Tick();
  int TickPeer(Peer& peer, TimeNs* next);
  bool NeedsDial(const Peer& peer) const;
  // When `conn` (open) becomes idle, or kNever while anything is pending on it.
  TimeNs IdleDeadline(const Connection& conn) const;
  // A connect, read or write to `peer` failed with errno `err` (`why`). If
  // that is the kernel's word that the peer is gone (transport::tcp::PeerGone),
  // its RPCs waiting for a connection fail now with kUnavailable. A refused
  // connect counts only once we have known a process there (its HELLO): a
  // peer never reached may be starting, and is retried until the timeout.
  void FailIfPeerGone(Peer& peer, int err, const Status& why);

  TcpConfig config_;
  const Clock& clock_;
  int listen_fd_;
  int epoll_fd_;
  transport::NetAddress local_;
  uint64_t instance_id_;
  transport::tcp::TcpSyscalls* syscalls_;
  transport::tcp::SocketOptions socket_options_;
  FrameParser::Limits parser_limits_;
  size_t write_batch_bytes_;

  // The clock as read at the start of the current Poll or public call.
  TimeNs now_ = 0;
  uint64_t next_client_id_;
  uint64_t next_conn_id_ = 1;

  std::unordered_map<uint64_t, std::unique_ptr<Connection>> conns_;
  // Inbound connections among conns_ (for tcp.max_inbound_connections).
  size_t inbound_live_ = 0;
  // Closed connections, destroyed by Reap: callbacks may still hold them.
  std::vector<std::unique_ptr<Connection>> graveyard_;
  // Connections with frames queued since they were last written (ids).
  std::vector<uint64_t> dirty_;
  // Open BeginBatch calls; while > 0 the API calls leave dirty_ to EndBatch.
  int batch_depth_ = 0;
  // The first kMaxHeldMessages messages of a held batch leave at once, the
  // rest at EndBatch: the peer starts on a burst's head while its tail is
  // still being made (see HomaHost::HeldPacketsBeforeCut).
  static constexpr size_t kMaxHeldMessages = 16;
  size_t held_messages_ = 0;
  bool batch_cut_ = false;
  // After an API call queued a message: flushes unless a batch holds it.
  void FlushUnlessHeld();

  PeerTable peers_;
  std::unordered_map<uint64_t, std::unique_ptr<ClientRpc>> client_rpcs_;
  ServerTable table_;
  IncomingBudget budget_;
  // Whole buffers of large incoming messages, reused (shared: delivered
  // messages hold it too, see LargeBufferPool).
  std::shared_ptr<transport::LargeBufferPool> pool_;

  std::deque<transport::MessageEvent> events_;

  TimeNs next_timer_ns_ = kNever;
  bool timers_dirty_ = false;  // state changed: Tick must recompute deadlines

  std::vector<std::byte> scratch_;  // read buffer shared by all connections
  std::vector<SendQueue::Finished> finished_;
  std::array<epoll_event, 64> epoll_events_{};
  uint64_t next_ping_nonce_ = 1;

  mutable TcpStats stats_;
  RateLimitedLogger log_limiter_;
};

}  // namespace wharf::stream
