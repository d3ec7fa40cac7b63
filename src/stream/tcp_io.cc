// TcpMessageTransport's I/O: epoll registration, accept, dial, read, write,
// and closing a connection (which hands its requests back to their peer for
// re-sending).
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "stream/tcp_transport.h"

namespace wharf::stream {
namespace {

constexpr int kMaxAcceptsPerPoll = 64;
// Bytes read from one connection per Poll, so one busy peer cannot starve
// the others (epoll is level-triggered: the rest is read next time).
constexpr size_t kMaxReadBytesPerPoll = 4 << 20;
// Reading stops for this Poll once this many events wait for the host (and
// small frames arrive through a 64 KiB buffer, at most ~500 messages per
// system call), so one Poll hands the host a bounded batch: a burst of
// 20,000 small requests would otherwise keep a server's engine busy for a
// long stretch without polling, while its blocked responses wait for
// EPOLLOUT and its clients hear nothing. The rest stays in the kernel (TCP
// flow control).
constexpr size_t kMaxPendingEvents = 512;

uint32_t EventsFor(bool want_write) {
  return EPOLLIN | EPOLLRDHUP | (want_write ? static_cast<uint32_t>(EPOLLOUT) : 0u);
}

}  // namespace

Connection* TcpMessageTransport::AddConnection(int fd, bool outbound,
                                               const transport::NetAddress& remote,
                                               Connection::State state) {
  const uint64_t id = next_conn_id_++;
  auto conn = std::make_unique<Connection>(id, fd, outbound, remote, state, config_.chunk_bytes,
                                           parser_limits_, &budget_, pool_.get(),
                                           static_cast<ConnectionHandler*>(this), syscalls_);
  Connection* raw = conn.get();
  raw->opened_ns = now_;
  raw->last_read_ns = now_;
  raw->deadline_ns = now_ + config_.peer_timeout_ns;
  epoll_event ev{};
  // A connect in progress reports its outcome as writability.
  const bool connecting = state == Connection::State::kConnecting;
  ev.events = connecting ? static_cast<uint32_t>(EPOLLOUT) : EventsFor(false);
  ev.data.u64 = id;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    WHARF_LOG_RATE_LIMITED(log_limiter_, kWarn, "tcp: epoll_ctl add for {}: {}", remote.ToString(),
                           ErrnoToStatus(errno, "epoll_ctl").ToString());
    return nullptr;  // conn (and fd) destroyed here
  }
  raw->epoll_out = connecting;
  conns_.emplace(id, std::move(conn));
  timers_dirty_ = true;  // its handshake deadline
  return raw;
}

void TcpMessageTransport::AcceptAll() {
  for (int i = 0; i < kMaxAcceptsPerPoll; ++i) {
    Result<std::optional<transport::tcp::Accepted>> accepted = transport::tcp::Accept(listen_fd_);
    if (!accepted.ok()) {
      // EMFILE and friends: nothing to do but report and try next Poll.
      WHARF_LOG_RATE_LIMITED(log_limiter_, kWarn, "tcp: accept on {}: {}", local_.ToString(),
                             accepted.status().ToString());
      return;
    }
    if (!accepted->has_value()) return;
    const transport::tcp::Accepted& a = **accepted;
    if (inbound_live_ >= config_.max_inbound_connections) {
      // Accepted and closed at once: left in the backlog it would keep the
      // listener readable (a busy loop). The client sees the connection
      // end, which is not death: it retries until tcp.peer_timeout.
      ++stats_.connections_refused;
      WHARF_LOG_RATE_LIMITED(log_limiter_, kWarn,
                             "tcp: refusing connection from {}: {} inbound connections open "
                             "(tcp.max_inbound_connections)",
                             a.peer.ToString(), inbound_live_);
      close(a.fd);
      continue;
    }
    Status options = transport::tcp::ApplyOptions(a.fd, socket_options_);
    if (!options.ok()) {
      WHARF_LOG_RATE_LIMITED(log_limiter_, kWarn, "tcp: connection from {}: {}", a.peer.ToString(),
                             options.ToString());
      close(a.fd);
      continue;
    }
    Connection* conn = AddConnection(a.fd, /*outbound=*/false, a.peer, Connection::State::kHandshake);
    if (conn == nullptr) continue;
    ++inbound_live_;
    ++stats_.connections_opened;
    ++stats_.connections_accepted;
    SendHello(*conn);
  }
}

void TcpMessageTransport::Dial(Peer& peer) {
  bool done = false;
  int error = 0;
  // From the IP we listen on: the peer names us by the source address.
  Result<int> fd = transport::tcp::StartConnect(peer.identity, &done, local_, &error);
  Status failed = fd.status();
  if (fd.ok()) {
    failed = transport::tcp::ApplyOptions(*fd, socket_options_);
    if (!failed.ok()) close(*fd);
  }
  if (!failed.ok()) {
    ++stats_.connect_failures;
    WHARF_LOG_RATE_LIMITED(log_limiter_, kInfo, "tcp: {}", failed.ToString());
    peer.OnConnectionLost(now_, config_);
    timers_dirty_ = true;
    FailIfPeerGone(peer, error, failed);
    return;
  }
  Connection* conn = AddConnection(*fd, /*outbound=*/true, peer.identity,
                                   done ? Connection::State::kHandshake : Connection::State::kConnecting);
  if (conn == nullptr) {
    peer.OnConnectionLost(now_, config_);
    return;
  }
  conn->peer = &peer;
  peer.connections.push_back(conn);
  peer.disconnected_since_ns = kNever;
  if (done) OnConnected(*conn);
}

void TcpMessageTransport::OnConnected(Connection& conn) {
  conn.set_state(Connection::State::kHandshake);
  ++stats_.connections_opened;
  // Not news from the peer: its kernel completes the handshake even while
  // the process is stopped or hung, and counting it would keep a hung
  // peer's RPCs alive forever through reconnects. Its HELLO is news.
  SetWantWrite(conn, false);
  SendHello(conn);
}

void TcpMessageTransport::SendHello(Connection& conn) {
  std::array<std::byte, wire::kStreamHelloBytes> body{};
  (void)wire::EncodeStreamHello({.listen_port = local_.port(), .instance_id = instance_id_}, body);
  conn.queue().AddControl(
      {.type = wire::StreamFrameType::kHello, .chunk_length = wire::kStreamHelloBytes}, body);
  MarkDirty(conn);
}

void TcpMessageTransport::HandleIo(Connection& conn, uint32_t events) {
  if (conn.state() == Connection::State::kConnecting) {
    if ((events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) == 0) return;
    int error = 0;
    Status connected = transport::tcp::FinishConnect(conn.fd(), conn.remote(), &error);
    if (!connected.ok()) {
      Peer* peer = conn.peer;
      Close(conn, connected, CloseKind::kConnectFailed);
      if (peer != nullptr) FailIfPeerGone(*peer, error, connected);
      return;
    }
    OnConnected(conn);
    return;
  }
  if ((events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) ReadFrom(conn);
  if (!conn.closed() && (events & EPOLLOUT) != 0) {
    // The socket had filled, and now takes bytes again: the peer
    // acknowledged data (and, once its receive window filled, read it).
    // That is news from the peer, and during a long upload to a peer that
    // has nothing to say, the only news: its PONGs would wait behind the
    // upload in its receive buffer.
    const bool was_blocked = conn.epoll_out;
    if (Flush(conn) > 0 && was_blocked && conn.peer != nullptr) conn.peer->last_heard_ns = now_;
  }
}

void TcpMessageTransport::ReadFrom(Connection& conn) {
  size_t total = 0;
  Connection::IoResult r;
  while (total < kMaxReadBytesPerPoll && events_.size() < kMaxPendingEvents && !conn.closed()) {
    r = conn.Read(scratch_, scratch_.size());
    total += r.bytes;
    stats_.bytes_received += r.bytes;
    stats_.reads += r.calls;
    if (r.bytes > 0) {
      conn.last_read_ns = now_;
      if (conn.peer != nullptr) conn.peer->last_heard_ns = now_;
    }
    if (r.io != Connection::Io::kOk || r.drained) break;
  }
  switch (r.io) {
    case Connection::Io::kOk:
      return;
    case Connection::Io::kPeerClosed:
      Close(conn, UnavailableError("closed by the peer"), CloseKind::kPeerClosed);
      return;
    case Connection::Io::kSocketError: {
      Peer* peer = conn.peer;
      Close(conn, r.error, CloseKind::kSocketError);
      if (peer != nullptr) FailIfPeerGone(*peer, r.sys_error, r.error);
      return;
    }
    case Connection::Io::kProtocolError:
      Close(conn, r.error, conn.refused ? CloseKind::kRefused : CloseKind::kProtocolError);
      return;
  }
}

size_t TcpMessageTransport::Flush(Connection& conn) {
  if (conn.closed() || conn.state() == Connection::State::kConnecting) return 0;
  const uint64_t floor = conn.peer != nullptr && conn.open() ? ClientFloor(*conn.peer) : 0;
  finished_.clear();
  Connection::IoResult r = conn.Write(write_batch_bytes_, floor, &finished_);
  stats_.bytes_sent += r.bytes;
  stats_.writes += r.calls;
  if (r.carried_floor) {
    Peer& peer = *conn.peer;
    peer.floor_sent = std::max(peer.floor_sent, floor);
    if (peer.floor_sent >= ClientFloor(peer)) peer.ack_due_ns = kNever;
  }
  for (const SendQueue::Finished& f : finished_) {
    if (f.type == wire::StreamFrameType::kRequest) {
      ClientRpc* rpc = FindClientRpc(f.rpc_id);
      if (rpc != nullptr && rpc->conn == &conn && rpc->handle == f.handle) {
        rpc->handle = 0;
        rpc->server_instance = conn.remote_instance;
      }
    } else if (conn.peer != nullptr) {
      ClientRecord* record = table_.Find(conn.peer->identity);
      if (record == nullptr) continue;
      auto it = record->rpcs.find(f.rpc_id);
      if (it == record->rpcs.end() || it->second.queued_on != &conn || it->second.handle != f.handle) {
        continue;
      }
      it->second.queued_on = nullptr;
      it->second.handle = 0;
      table_.MarkWritten(conn.peer->identity, f.rpc_id);
    }
  }
  if (r.io != Connection::Io::kOk) {
    Peer* peer = conn.peer;
    Close(conn, r.error, CloseKind::kSocketError);
    if (peer != nullptr) FailIfPeerGone(*peer, r.sys_error, r.error);
    return r.bytes;
  }
  SetWantWrite(conn, r.blocked);
  if (!finished_.empty()) EvictStoredResponses();
  return r.bytes;
}

void TcpMessageTransport::MarkDirty(Connection& conn) {
  if (conn.dirty || conn.closed()) return;
  conn.dirty = true;
  dirty_.push_back(conn.id());
}

void TcpMessageTransport::FlushDirty() {
  // Flushing may dirty other connections (an eviction's ABORT): loop.
  while (!dirty_.empty()) {
    std::vector<uint64_t> ids;
    ids.swap(dirty_);
    for (uint64_t id : ids) {
      auto it = conns_.find(id);
      if (it == conns_.end()) continue;
      it->second->dirty = false;
      // A connection waiting for EPOLLOUT is not writable yet.
      if (!it->second->epoll_out) Flush(*it->second);
    }
  }
}

void TcpMessageTransport::SetWantWrite(Connection& conn, bool want) {
  if (conn.closed() || conn.epoll_out == want) return;
  epoll_event ev{};
  ev.events = EventsFor(want);
  ev.data.u64 = conn.id();
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, conn.fd(), &ev) == 0) conn.epoll_out = want;
}

void TcpMessageTransport::Close(Connection& conn, const Status& reason, CloseKind kind) {
  if (conn.closed()) return;
  Peer* peer = conn.peer;
  const std::string who = peer != nullptr ? peer->identity.ToString() : conn.remote().ToString();
  switch (kind) {
    case CloseKind::kConnectFailed:
      ++stats_.connect_failures;
      WHARF_LOG_RATE_LIMITED(log_limiter_, kInfo, "tcp: {}", reason.ToString());
      break;
    case CloseKind::kIdle:
      ++stats_.connections_idle_closed;
      ++stats_.connections_closed;
      WHARF_LOG_RATE_LIMITED(log_limiter_, kDebug, "tcp: connection {} with {} closed: {}",
                             conn.id(), who, reason.ToString());
      break;
    case CloseKind::kRefused:
      ++stats_.peers_refused;
      ++stats_.connections_closed;
      WHARF_LOG_RATE_LIMITED(log_limiter_, kWarn, "tcp: closing connection {} from {}: {}",
                             conn.id(), who, reason.ToString());
      break;
    case CloseKind::kProtocolError:
      ++stats_.protocol_errors;
      ++stats_.connections_closed;
      ++stats_.connections_reset;
      WHARF_LOG_RATE_LIMITED(log_limiter_, kWarn, "tcp: closing connection {} with {}: {}",
                             conn.id(), who, reason.ToString());
      break;
    default:
      ++stats_.connections_closed;
      ++stats_.connections_reset;
      WHARF_LOG_RATE_LIMITED(log_limiter_, kInfo, "tcp: connection {} with {} closed: {}",
                             conn.id(), who, reason.ToString());
      break;
  }
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, conn.fd(), nullptr);
  conn.CloseSocket();
  if (!conn.outbound()) --inbound_live_;
  if (peer != nullptr) {
    // Its requests go back to waiting (ahead of newer ones, in id order) to
    // be re-sent whole on another connection; the server drops duplicates.
    std::vector<uint64_t> back;
    for (uint64_t id : peer->outstanding) {
      ClientRpc* rpc = FindClientRpc(id);
      if (rpc == nullptr || rpc->conn != &conn) continue;
      if (rpc->handle != 0 && conn.queue().Started(rpc->handle)) {
        rpc->server_instance = conn.remote_instance;
      }
      rpc->handle = 0;
      rpc->conn = nullptr;
      back.push_back(id);
    }
    peer->waiting.insert(peer->waiting.begin(), back.begin(), back.end());
    // Its responses stay stored, ready for the next connection.
    if (ClientRecord* record = table_.Find(peer->identity)) {
      conn.queue().ForEachMessage([&](SendQueue::Handle, wire::StreamFrameType type, uint64_t id) {
        if (type != wire::StreamFrameType::kResponse) return;
        auto it = record->rpcs.find(id);
        if (it != record->rpcs.end() && it->second.queued_on == &conn) {
          it->second.queued_on = nullptr;
          it->second.handle = 0;
        }
      });
    }
    peer->RemoveConnection(&conn);
    if (peer->connections.empty()) peer->disconnected_since_ns = now_;
    // Ending an idle connection loses nothing; a restart's new connection is up.
    if (kind != CloseKind::kPeerRestarted && kind != CloseKind::kIdle) {
      peer->OnConnectionLost(now_, config_);
    }
    AssignWaiting(*peer);
  }
  timers_dirty_ = true;
  auto node = conns_.extract(conn.id());
  if (!node.empty()) graveyard_.push_back(std::move(node.mapped()));
}

}  // namespace wharf::stream
