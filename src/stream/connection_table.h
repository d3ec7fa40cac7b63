// stream/connection_table.h: ConnectionTable, the TCP transport's
// connections as sockets: the listening socket, the epoll set every socket of
// the transport is in, each Connection from its accept or dial until it is
// destroyed, the cap on inbound connections, and how the end of a connection
// is counted and logged (CloseKind).
//
// It does not decide what a connection carries or when it opens or closes:
// peers, RPCs, the HELLO handshake and what a close means for the requests
// and responses queued on it are TcpMessageTransport's. The transport asks
// this table to dial, accept and close, and finds connections here by the id
// an epoll event carries.
#pragma once

#include <sys/epoll.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "base/log.h"
#include "stream/config.h"
#include "stream/connection.h"
#include "stream/frame_parser.h"
#include "stream/stats.h"
#include "transport/large_buffer_pool.h"
#include "transport/net_address.h"
#include "transport/tcp/tcp_socket.h"
#include "transport/tcp/tcp_syscalls.h"

namespace wharf::stream {

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

// Owned by the transport; single-threaded (the transport's thread). Borrows
// `config`, `budget`, `pool`, `handler`, `stats` and `log`, which must
// outlive it; every Connection it makes borrows `budget`, `pool` and
// `handler` too. Counts into `stats`: connections_opened,
// connections_accepted, connections_refused, connect_failures and the close
// counters (CloseConnection).
class ConnectionTable {
 public:
  // The epoll data of the listening socket; connection ids start above it.
  static constexpr uint64_t kListenerId = 0;
  // Connections AcceptAll takes per call (the rest wait in the backlog).
  static constexpr int kMaxAcceptsPerCall = 64;
  // Events one Ready call returns at most (fewer: none is left waiting).
  static constexpr size_t kMaxReady = 64;

  ConnectionTable(const TcpConfig& config, IncomingBudget* budget, transport::LargeBufferPool* pool,
                  ConnectionHandler* handler, TcpStats* stats, RateLimitedLogger* log);
  // Destroys every connection (closing its socket), then the epoll set and
  // the listener.
  ~ConnectionTable();
  ConnectionTable(const ConnectionTable&) = delete;
  ConnectionTable& operator=(const ConnectionTable&) = delete;

  // Opens the listener on config.bind and the epoll set holding it; errors
  // name the socket call ("bind 127.0.0.1:4000: ..."). Called once.
  Status Listen();
  // The listener's address (the port the kernel picked for port 0).
  const transport::NetAddress& local() const { return local_; }
  int epoll_fd() const { return epoll_fd_; }

  // The sockets ready now (one epoll_wait that does not block); an event
  // whose data.u64 is kListenerId is the listener. Valid until the next call.
  std::span<const epoll_event> Ready();

  // The connection with `id` if it is in the table and not closed.
  Connection* Find(uint64_t id) const {
    auto it = conns_.find(id);
    return it == conns_.end() || it->second->closed() ? nullptr : it->second.get();
  }
  // Connections not closed (any state, both directions).
  size_t size() const { return conns_.size(); }
  size_t inbound_live() const { return inbound_live_; }
  // `fn(Connection&)` for every connection not closed. `fn` must not close
  // any (collect them, then close).
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (const auto& [id, conn] : conns_) fn(*conn);
  }

  // Accepts up to kMaxAcceptsPerCall waiting connections, each in
  // kHandshake with its handshake deadline at now + tcp.peer_timeout, and
  // appends them to *accepted (the caller sends their HELLO). Past
  // tcp.max_inbound_connections a connection is closed as soon as accepted
  // (tcp.connections_refused): left in the backlog it would keep the
  // listener readable. Returns how many it appended.
  size_t AcceptAll(TimeNs now, std::vector<Connection*>* accepted);
  // Starts a connect to `to` from the listener's IP; the connection is in
  // kConnecting, or already in kHandshake when the kernel connected at once
  // (then counted as opened). A failure is counted (tcp.connect_failures),
  // logged, and its errno left in *error (0 if none).
  Result<Connection*> Dial(const transport::NetAddress& to, TimeNs now, int* error);
  // A kConnecting connection became writable: on success it moves to
  // kHandshake (counted as opened); otherwise the status names the connect
  // and *error holds its errno. Either way the caller decides what follows.
  Status FinishConnect(Connection& conn, int* error);
  // Registers interest in writability (EPOLLOUT) for a connection whose
  // socket filled, or drops it once drained.
  void SetWantWrite(Connection& conn, bool want);

  // Counts and logs the end of `conn` by `kind`, closes its socket and takes
  // it out of the table (Find no longer sees it). The object itself lives on
  // until Reap, since callbacks up the stack may still hold it. No-op if it
  // is closed already.
  void CloseConnection(Connection& conn, const Status& reason, CloseKind kind);
  // Destroys the connections closed since the last Reap (outside of any
  // callback).
  void Reap() { graveyard_.clear(); }

  // Test hook: shutdown(SHUT_RDWR) on every socket, or on those whose peer
  // has identity `*peer`. Returns how many.
  size_t ShutdownForTesting(const transport::NetAddress* peer);

 private:
  // Wraps a connected or connecting socket (which it then owns) and adds it
  // to the epoll set; nullptr (and the socket closed) if epoll refuses.
  Connection* Add(int fd, bool outbound, const transport::NetAddress& remote,
                  Connection::State state, TimeNs now);
  // Counts an established connection and stops waiting for its connect.
  void OnConnected(Connection& conn);

  // Constant after construction.
  const TcpConfig& config_;
  IncomingBudget* const budget_;
  transport::LargeBufferPool* const pool_;
  ConnectionHandler* const handler_;
  transport::tcp::TcpSyscalls* const syscalls_;
  TcpStats& stats_;
  RateLimitedLogger& log_;
  // Applied to every connected socket (accepted or dialled).
  transport::tcp::SocketOptions socket_options_;
  FrameParser::Limits parser_limits_;

  // Owned descriptors, -1 until Listen.
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  transport::NetAddress local_;

  // Connections not closed, by id (the epoll data of their socket).
  std::unordered_map<uint64_t, std::unique_ptr<Connection>> conns_;
  // Inbound connections among conns_ (for tcp.max_inbound_connections).
  size_t inbound_live_ = 0;
  // Closed connections, destroyed by Reap.
  std::vector<std::unique_ptr<Connection>> graveyard_;
  uint64_t next_id_ = kListenerId + 1;
  // Ready's result.
  std::array<epoll_event, kMaxReady> ready_{};
};

}  // namespace wharf::stream
