// ConnectionTable: the listener, the epoll set, accepting, dialling and
// closing connections.
#include "stream/connection_table.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <string>

#include "stream/peer.h"

namespace wharf::stream {
namespace {

uint32_t EventsFor(bool want_write) {
  return EPOLLIN | EPOLLRDHUP | (want_write ? static_cast<uint32_t>(EPOLLOUT) : 0u);
}

}  // namespace

ConnectionTable::ConnectionTable(const TcpConfig& config, IncomingBudget* budget,
                                 transport::LargeBufferPool* pool, ConnectionHandler* handler,
                                 TcpStats* stats, RateLimitedLogger* log)
    : config_(config),
      budget_(budget),
      pool_(pool),
      handler_(handler),
      syscalls_(config.syscalls != nullptr ? config.syscalls
                                           : &transport::tcp::TcpSyscalls::Kernel()),
      stats_(*stats),
      log_(*log) {
  socket_options_.no_delay = true;
  socket_options_.notsent_lowat_bytes = static_cast<int>(config.notsent_lowat_bytes);
  socket_options_.user_timeout_ms =
      static_cast<unsigned>(std::max<DurationNs>(1, config.peer_timeout_ns / kNsPerMs));
  socket_options_.send_buffer_bytes = config.send_buffer_bytes;
  socket_options_.recv_buffer_bytes = config.recv_buffer_bytes;
  parser_limits_.max_chunk_bytes = config.chunk_bytes;
}

ConnectionTable::~ConnectionTable() {
  conns_.clear();
  graveyard_.clear();
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (listen_fd_ >= 0) close(listen_fd_);
}

Status ConnectionTable::Listen() {
  WHARF_ASSIGN_OR_RETURN(listen_fd_, transport::tcp::OpenListener(config_.bind, config_.ipv6_only,
                                                                  config_.listen_backlog));
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) return ErrnoToStatus(errno, "tcp: epoll_create1");
  Result<transport::NetAddress> local = transport::tcp::LocalAddressOf(listen_fd_);
  if (!local.ok()) return local.status().WithContext("tcp listener on " + config_.bind.ToString());
  local_ = *local;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenerId;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev) != 0) {
    return ErrnoToStatus(errno, "tcp: epoll_ctl add listener");
  }
  return OkStatus();
}

std::span<const epoll_event> ConnectionTable::Ready() {
  const int n = epoll_wait(epoll_fd_, ready_.data(), static_cast<int>(ready_.size()), 0);
  return std::span<const epoll_event>(ready_.data(), n > 0 ? static_cast<size_t>(n) : 0);
}

Connection* ConnectionTable::Add(int fd, bool outbound, const transport::NetAddress& remote,
                                 Connection::State state, TimeNs now) {
  const uint64_t id = next_id_++;
  auto conn = std::make_unique<Connection>(id, fd, outbound, remote, state, config_.chunk_bytes,
                                           parser_limits_, budget_, pool_, handler_, syscalls_);
  Connection* raw = conn.get();
  raw->opened_ns = now;
  raw->last_read_ns = now;
  raw->deadline_ns = now + config_.peer_timeout_ns;
  epoll_event ev{};
  // A connect in progress reports its outcome as writability.
  const bool connecting = state == Connection::State::kConnecting;
  ev.events = connecting ? static_cast<uint32_t>(EPOLLOUT) : EventsFor(false);
  ev.data.u64 = id;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    WHARF_LOG_RATE_LIMITED(log_, kWarn, "tcp: epoll_ctl add for {}: {}", remote.ToString(),
                           ErrnoToStatus(errno, "epoll_ctl").ToString());
    return nullptr;  // conn (and fd) destroyed here
  }
  raw->epoll_out = connecting;
  conns_.emplace(id, std::move(conn));
  return raw;
}

size_t ConnectionTable::AcceptAll(TimeNs now, std::vector<Connection*>* accepted) {
  size_t count = 0;
  for (int i = 0; i < kMaxAcceptsPerCall; ++i) {
    Result<std::optional<transport::tcp::Accepted>> next = transport::tcp::Accept(listen_fd_);
    if (!next.ok()) {
      // EMFILE and friends: nothing to do but report and try next time.
      WHARF_LOG_RATE_LIMITED(log_, kWarn, "tcp: accept on {}: {}", local_.ToString(),
                             next.status().ToString());
      break;
    }
    if (!next->has_value()) break;
    const transport::tcp::Accepted& a = **next;
    if (inbound_live_ >= config_.max_inbound_connections) {
      // The client sees the connection end, which is not death: it retries
      // until tcp.peer_timeout.
      ++stats_.connections_refused;
      WHARF_LOG_RATE_LIMITED(log_, kWarn,
                             "tcp: refusing connection from {}: {} inbound connections open "
                             "(tcp.max_inbound_connections)",
                             a.peer.ToString(), inbound_live_);
      close(a.fd);
      continue;
    }
    Status options = transport::tcp::ApplyOptions(a.fd, socket_options_);
    if (!options.ok()) {
      WHARF_LOG_RATE_LIMITED(log_, kWarn, "tcp: connection from {}: {}", a.peer.ToString(),
                             options.ToString());
      close(a.fd);
      continue;
    }
    Connection* conn = Add(a.fd, /*outbound=*/false, a.peer, Connection::State::kHandshake, now);
    if (conn == nullptr) continue;
    ++inbound_live_;
    ++stats_.connections_opened;
    ++stats_.connections_accepted;
    accepted->push_back(conn);
    ++count;
  }
  return count;
}

Result<Connection*> ConnectionTable::Dial(const transport::NetAddress& to, TimeNs now, int* error) {
  bool done = false;
  *error = 0;
  // From the IP we listen on: the peer names us by the source address.
  Result<int> fd = transport::tcp::StartConnect(to, &done, local_, error);
  Status failed = fd.status();
  if (fd.ok()) {
    failed = transport::tcp::ApplyOptions(*fd, socket_options_);
    if (!failed.ok()) close(*fd);
  }
  if (!failed.ok()) {
    ++stats_.connect_failures;
    WHARF_LOG_RATE_LIMITED(log_, kInfo, "tcp: {}", failed.ToString());
    return failed;
  }
  Connection* conn =
      Add(*fd, /*outbound=*/true, to,
          done ? Connection::State::kHandshake : Connection::State::kConnecting, now);
  if (conn == nullptr)
    return UnavailableError("tcp: cannot watch a connection to " + to.ToString());
  if (done) OnConnected(*conn);
  return conn;
}

Status ConnectionTable::FinishConnect(Connection& conn, int* error) {
  *error = 0;
  Status connected = transport::tcp::FinishConnect(conn.fd(), conn.remote(), error);
  if (connected.ok()) OnConnected(conn);
  return connected;
}

void ConnectionTable::OnConnected(Connection& conn) {
  conn.set_state(Connection::State::kHandshake);
  ++stats_.connections_opened;
  SetWantWrite(conn, false);
}

void ConnectionTable::SetWantWrite(Connection& conn, bool want) {
  if (conn.closed() || conn.epoll_out == want) return;
  epoll_event ev{};
  ev.events = EventsFor(want);
  ev.data.u64 = conn.id();
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, conn.fd(), &ev) == 0) conn.epoll_out = want;
}

void ConnectionTable::CloseConnection(Connection& conn, const Status& reason, CloseKind kind) {
  if (conn.closed()) return;
  const std::string who =
      conn.peer != nullptr ? conn.peer->identity.ToString() : conn.remote().ToString();
  switch (kind) {
    case CloseKind::kConnectFailed:
      ++stats_.connect_failures;
      WHARF_LOG_RATE_LIMITED(log_, kInfo, "tcp: {}", reason.ToString());
      break;
    case CloseKind::kIdle:
      ++stats_.connections_idle_closed;
      ++stats_.connections_closed;
      WHARF_LOG_RATE_LIMITED(log_, kDebug, "tcp: connection {} with {} closed: {}", conn.id(), who,
                             reason.ToString());
      break;
    case CloseKind::kRefused:
      ++stats_.peers_refused;
      ++stats_.connections_closed;
      WHARF_LOG_RATE_LIMITED(log_, kWarn, "tcp: closing connection {} from {}: {}", conn.id(), who,
                             reason.ToString());
      break;
    case CloseKind::kProtocolError:
      ++stats_.protocol_errors;
      ++stats_.connections_closed;
      ++stats_.connections_reset;
      WHARF_LOG_RATE_LIMITED(log_, kWarn, "tcp: closing connection {} with {}: {}", conn.id(), who,
                             reason.ToString());
      break;
    default:
      ++stats_.connections_closed;
      ++stats_.connections_reset;
      WHARF_LOG_RATE_LIMITED(log_, kInfo, "tcp: connection {} with {} closed: {}", conn.id(), who,
                             reason.ToString());
      break;
  }
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, conn.fd(), nullptr);
  conn.CloseSocket();
  if (!conn.outbound()) --inbound_live_;
  auto node = conns_.extract(conn.id());
  if (!node.empty()) graveyard_.push_back(std::move(node.mapped()));
}

size_t ConnectionTable::ShutdownForTesting(const transport::NetAddress* peer) {
  size_t count = 0;
  for (auto& [id, conn] : conns_) {
    if (peer != nullptr && (conn->peer == nullptr || conn->peer->identity != *peer)) continue;
    if (conn->fd() >= 0 && shutdown(conn->fd(), SHUT_RDWR) == 0) ++count;
  }
  return count;
}

}  // namespace wharf::stream
