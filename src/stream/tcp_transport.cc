// TcpMessageTransport: opening, the public calls, and RPC bookkeeping on the
// client side (waiting lists, floors, acks) and the server side (queueing
// and dropping stored responses). I/O is in tcp_io.cc, frame handling in
// tcp_handlers.cc, timers in tcp_timers.cc.
#include "stream/tcp_transport.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <random>
#include <string>

#include "transport/tcp/tcp_syscalls.h"

namespace wharf::stream {
namespace {

constexpr uint64_t kListenId = 0;  // epoll data of the listening socket
// Read buffer shared by all connections: the most small-frame bytes one
// system call takes (see kMaxPendingEvents in tcp_io.cc).
constexpr size_t kScratchBytes = 64 << 10;

Status ValidateConfig(const TcpConfig& c) {
  auto bad = [](const std::string& key, const std::string& why) {
    return InvalidArgumentError("tcp." + key + ": " + why);
  };
  if (c.bind.family() == transport::NetAddress::Family::kNone) {
    return InvalidArgumentError("tcp: no address to listen on (TcpConfig::bind)");
  }
  if (c.chunk_bytes < 64 || c.chunk_bytes > wire::kStreamMaxChunkLimit) {
    return bad("chunk_bytes", "expected 64.." + std::to_string(wire::kStreamMaxChunkLimit) +
                                  ", got " + std::to_string(c.chunk_bytes));
  }
  if (c.notsent_lowat_bytes > (1u << 30)) return bad("notsent_lowat_bytes", "expected at most 1GiB");
  if (c.connections_per_peer < 1 || c.connections_per_peer > 64) {
    return bad("connections_per_peer", "expected 1..64, got " + std::to_string(c.connections_per_peer));
  }
  if (c.reconnect_min_ns <= 0) return bad("reconnect_min", "must be positive");
  if (c.reconnect_max_ns < c.reconnect_min_ns) return bad("reconnect_max", "must be at least tcp.reconnect_min");
  if (c.peer_timeout_ns < kNsPerMs) return bad("peer_timeout", "must be at least 1ms");
  if (c.ping_interval_ns <= 0 || c.ping_interval_ns >= c.peer_timeout_ns) {
    return bad("ping_interval", "must be positive and below tcp.peer_timeout");
  }
  if (c.ack_delay_ns < 0) return bad("ack_delay", "must not be negative");
  if (c.max_inbound_connections < 1) return bad("max_inbound_connections", "must be at least 1");
  if (c.max_peers < 1) return bad("max_peers", "must be at least 1");
  if (c.idle_timeout_ns < c.peer_timeout_ns) {
    // Shorter would close a connection between a paused peer's beats.
    return bad("idle_timeout", "must be at least tcp.peer_timeout");
  }
  if (c.max_incoming_bytes < c.chunk_bytes) {
    return bad("max_incoming_bytes", "must hold at least one chunk (tcp.chunk_bytes = " +
                                         std::to_string(c.chunk_bytes) + ")");
  }
  if (c.send_buffer_bytes < 0 || c.recv_buffer_bytes < 0) {
    return bad("send_buffer_bytes", "socket buffer sizes must not be negative");
  }
  if (c.listen_backlog < 1) return InvalidArgumentError("tcp: listen backlog must be positive");
  return OkStatus();
}

// Differs per process lifetime: the wall clock (restarts are later) mixed
// with randomness (two processes started in the same nanosecond), finished
// with splitmix64 so that nearby inputs give unrelated ids.
uint64_t MakeInstanceId(const Clock& clock) {
  std::random_device random;
  uint64_t x = static_cast<uint64_t>(clock.WallNs()) ^
               ((static_cast<uint64_t>(random()) << 32) | random());
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x == 0 ? 1 : x;
}

}  // namespace

Result<std::unique_ptr<TcpMessageTransport>> TcpMessageTransport::Open(const TcpConfig& given,
                                                                       const Clock& clock) {
  TcpConfig config = given;
  // The default PING interval follows a lowered peer timeout (a tenth of
  // it), so that setting tcp.peer_timeout alone stays valid.
  if (config.ping_interval_ns == TcpConfig{}.ping_interval_ns &&
      config.peer_timeout_ns < 10 * config.ping_interval_ns) {
    config.ping_interval_ns = std::max<DurationNs>(1, config.peer_timeout_ns / 10);
  }
  // Likewise the default idle timeout never undercuts a raised peer timeout.
  if (config.idle_timeout_ns == TcpConfig{}.idle_timeout_ns) {
    config.idle_timeout_ns = std::max(config.idle_timeout_ns, config.peer_timeout_ns);
  }
  WHARF_RETURN_IF_ERROR(ValidateConfig(config));
  WHARF_ASSIGN_OR_RETURN(int listen_fd, transport::tcp::OpenListener(
                                            config.bind, config.ipv6_only, config.listen_backlog));
  const int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd < 0) {
    const int err = errno;
    close(listen_fd);
    return ErrnoToStatus(err, "tcp: epoll_create1");
  }
  // From here the transport owns both descriptors.
  Result<transport::NetAddress> local = transport::tcp::LocalAddressOf(listen_fd);
  std::unique_ptr<TcpMessageTransport> self(new TcpMessageTransport(
      config, clock, listen_fd, epoll_fd, local.ok() ? *local : config.bind));
  if (!local.ok()) return local.status().WithContext("tcp listener on " + config.bind.ToString());
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenId;
  if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listen_fd, &ev) != 0) {
    return ErrnoToStatus(errno, "tcp: epoll_ctl add listener");
  }
  return self;
}

TcpMessageTransport::TcpMessageTransport(const TcpConfig& config, const Clock& clock,
                                         int listen_fd, int epoll_fd,
                                         const transport::NetAddress& local)
    : config_(config),
      clock_(clock),
      listen_fd_(listen_fd),
      epoll_fd_(epoll_fd),
      local_(local),
      instance_id_(MakeInstanceId(clock)),
      syscalls_(config.syscalls != nullptr ? config.syscalls
                                           : &transport::tcp::TcpSyscalls::Kernel()),
      write_batch_bytes_(std::max(config.chunk_bytes, config.notsent_lowat_bytes)),
      now_(clock.NowNs()),
      table_(config.max_stored_response_bytes),
      pool_(transport::LargeBufferPool::Create({})),
      scratch_(kScratchBytes),
      log_limiter_(clock, kNsPerSec, 10) {
  // Ids start from the wall clock, as homa's do: a restarted client's ids
  // are new to every server, whatever it remembers.
  next_client_id_ = std::max<uint64_t>(1, static_cast<uint64_t>(clock.WallNs()));
  socket_options_.no_delay = true;
  socket_options_.notsent_lowat_bytes = static_cast<int>(config.notsent_lowat_bytes);
  socket_options_.user_timeout_ms =
      static_cast<unsigned>(std::max<DurationNs>(1, config.peer_timeout_ns / kNsPerMs));
  socket_options_.send_buffer_bytes = config.send_buffer_bytes;
  socket_options_.recv_buffer_bytes = config.recv_buffer_bytes;
  parser_limits_.max_chunk_bytes = config.chunk_bytes;
  budget_.limit = config.max_incoming_bytes;
}

TcpMessageTransport::~TcpMessageTransport() {
  // Connections first: their parsers return memory to budget_.
  conns_.clear();
  graveyard_.clear();
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (listen_fd_ >= 0) close(listen_fd_);
}

const TcpStats& TcpMessageTransport::stats() const {
  stats_.peak_incoming_buffer_bytes = budget_.peak;
  const transport::LargeBufferPool::Stats pool = pool_->stats();
  stats_.receive_buffers_reused = pool.reused;
  stats_.receive_buffers_allocated = pool.allocated;
  stats_.receive_pool_bytes = pool.kept_bytes;
  return stats_;
}

Result<uint64_t> TcpMessageTransport::SendRequest(const transport::NetAddress& server,
                                                  Buffer request, uint64_t cookie) {
  if (server.family() == transport::NetAddress::Family::kNone || server.port() == 0) {
    return InvalidArgumentError("tcp: request to an empty address ('" + server.ToString() + "')");
  }
  if (request.size() > config_.max_message_bytes) {
    return InvalidArgumentError("tcp: request of " + std::to_string(request.size()) +
                                " bytes exceeds the message limit (max_message_bytes " +
                                std::to_string(config_.max_message_bytes) + ")");
  }
  now_ = clock_.NowNs();
  const uint64_t id = next_client_id_++;
  auto rpc = std::make_unique<ClientRpc>();
  rpc->id = id;
  rpc->cookie = cookie;
  rpc->request = std::move(request);
  rpc->start_ns = now_;
  Peer& peer = peers_.Get(server);
  rpc->peer = &peer;
  peer.outstanding.insert(id);
  peer.waiting.push_back(id);
  client_rpcs_.emplace(id, std::move(rpc));
  ++stats_.requests_sent;
  AssignWaiting(peer);
  // Dialling, pings and the peer-death deadline are the timer's business.
  timers_dirty_ = true;
  if (peer.CountOpen() == 0 && NeedsDial(peer) && now_ >= peer.next_dial_ns) Dial(peer);
  FlushUnlessHeld();
  Reap();
  return id;
}

Status TcpMessageTransport::SendResponse(const transport::ServerRpcKey& key, Buffer response) {
  auto gone = [&] {
    return NotFoundError("tcp: RPC " + std::to_string(key.client_id) + " from " +
                         key.client.ToString() +
                         " is gone (the client finished, cancelled, restarted or timed out)");
  };
  ClientRecord* record = key.client_port == 0 ? table_.Find(key.client) : nullptr;
  if (record == nullptr) return gone();
  auto it = record->rpcs.find(key.client_id);
  if (it == record->rpcs.end()) return gone();
  if (it->second.state != ServedRpc::State::kInProgress) {
    return FailedPreconditionError("tcp: RPC " + std::to_string(key.client_id) + " from " +
                                   key.client.ToString() + " was already answered");
  }
  if (response.size() > config_.max_message_bytes) {
    return InvalidArgumentError("tcp: response of " + std::to_string(response.size()) +
                                " bytes exceeds the message limit (max_message_bytes " +
                                std::to_string(config_.max_message_bytes) + ")");
  }
  now_ = clock_.NowNs();
  ServedRpc& served = table_.Answer(*record, key.client_id, std::move(response));
  ++stats_.responses_sent;
  // Any open connection to the client will do; with none, the response
  // waits: the client reconnects and re-sends the request, or a new
  // connection from it gets every response not yet written.
  if (Peer* peer = peers_.Find(key.client)) {
    if (Connection* conn = peer->LeastLoaded()) QueueResponse(served, key.client_id, *conn);
  }
  EvictStoredResponses();
  FlushUnlessHeld();
  Reap();
  return OkStatus();
}

void TcpMessageTransport::BeginBatch() {
  if (batch_depth_++ == 0) {
    held_messages_ = 0;
    batch_cut_ = false;
  }
}

void TcpMessageTransport::FlushUnlessHeld() {
  if (batch_depth_ == 0) {
    FlushDirty();
  } else if (++held_messages_ >= kMaxHeldMessages && !batch_cut_) {
    batch_cut_ = true;
    ++stats_.batch_cuts;
    FlushDirty();
  }
}

void TcpMessageTransport::EndBatch() {
  if (batch_depth_ == 0 || --batch_depth_ > 0) return;
  if (!dirty_.empty()) ++stats_.batched_flushes;
  FlushDirty();
  Reap();
}

bool TcpMessageTransport::Cancel(uint64_t client_id) {
  ClientRpc* rpc = FindClientRpc(client_id);
  if (rpc == nullptr) return false;
  now_ = clock_.NowNs();
  FinishClientRpc(*rpc);
  FlushDirty();
  Reap();
  return true;
}

transport::PollResult TcpMessageTransport::Poll() {
  transport::PollResult result;
  now_ = clock_.NowNs();
  result.now = now_;
  for (int round = 0; round < 4; ++round) {
    const int n = epoll_wait(epoll_fd_, epoll_events_.data(), static_cast<int>(epoll_events_.size()), 0);
    if (n <= 0) break;
    for (int i = 0; i < n; ++i) {
      const uint64_t id = epoll_events_[i].data.u64;
      if (id == kListenId) {
        AcceptAll();
        continue;
      }
      auto it = conns_.find(id);
      if (it == conns_.end() || it->second->closed()) continue;
      HandleIo(*it->second, epoll_events_[i].events);
    }
    result.work += n;
    if (n < static_cast<int>(epoll_events_.size())) break;
  }
  FlushDirty();
  if (timers_dirty_ || now_ >= next_timer_ns_) result.work += Tick();
  FlushDirty();
  Reap();
  result.next_deadline = NextDeadline();
  return result;
}

TimeNs TcpMessageTransport::NextDeadline() const {
  if (!events_.empty() || !dirty_.empty() || timers_dirty_) return clock_.NowNs();
  return next_timer_ns_;
}

bool TcpMessageTransport::PopEvent(transport::MessageEvent* out) {
  if (events_.empty()) return false;
  *out = std::move(events_.front());
  events_.pop_front();
  return true;
}

std::vector<std::pair<std::string, uint64_t>> TcpMessageTransport::Counters() const {
  const TcpStats& s = stats();
  return {
      {"tcp.connections_opened", s.connections_opened},
      {"tcp.connections_accepted", s.connections_accepted},
      {"tcp.connect_failures", s.connect_failures},
      {"tcp.connections_closed", s.connections_closed},
      {"tcp.connections_reset", s.connections_reset},
      {"tcp.protocol_errors", s.protocol_errors},
      {"tcp.reconnects", s.reconnects},
      {"tcp.peer_restarts", s.peer_restarts},
      {"tcp.requests_sent", s.requests_sent},
      {"tcp.requests_resent", s.requests_resent},
      {"tcp.requests_delivered", s.requests_delivered},
      {"tcp.responses_sent", s.responses_sent},
      {"tcp.responses_resent", s.responses_resent},
      {"tcp.responses_delivered", s.responses_delivered},
      {"tcp.duplicate_requests", s.duplicate_requests},
      {"tcp.late_responses", s.late_responses},
      {"tcp.oversize_refused", s.oversize_refused},
      {"tcp.memory_refused", s.memory_refused},
      {"tcp.responses_evicted", s.responses_evicted},
      {"tcp.responses_lost", s.responses_lost},
      {"tcp.client_timeouts", s.client_timeouts},
      {"tcp.peer_gone_failures", s.peer_gone_failures},
      {"tcp.connections_refused", s.connections_refused},
      {"tcp.peers_refused", s.peers_refused},
      {"tcp.connections_idle_closed", s.connections_idle_closed},
      {"tcp.peers_expired", s.peers_expired},
      {"tcp.clients_expired", s.clients_expired},
      {"tcp.pings_sent", s.pings_sent},
      {"tcp.pongs_sent", s.pongs_sent},
      {"tcp.acks_sent", s.acks_sent},
      {"tcp.aborts_sent", s.aborts_sent},
      {"tcp.bytes_sent", s.bytes_sent},
      {"tcp.bytes_received", s.bytes_received},
      {"tcp.writes", s.writes},
      {"tcp.batched_flushes", s.batched_flushes},
      {"tcp.batch_cuts", s.batch_cuts},
      {"tcp.reads", s.reads},
      {"tcp.receive_buffers_reused", s.receive_buffers_reused},
      {"tcp.receive_buffers_allocated", s.receive_buffers_allocated},
      {"tcp.receive_pool_bytes", s.receive_pool_bytes},
  };
}

size_t TcpMessageTransport::ShutdownConnectionsForTesting() {
  size_t count = 0;
  for (auto& [id, conn] : conns_) {
    if (conn->fd() >= 0 && shutdown(conn->fd(), SHUT_RDWR) == 0) ++count;
  }
  return count;
}

size_t TcpMessageTransport::ShutdownConnectionsForTesting(const transport::NetAddress& peer) {
  size_t count = 0;
  for (auto& [id, conn] : conns_) {
    if (conn->peer != nullptr && conn->peer->identity == peer && conn->fd() >= 0 &&
        shutdown(conn->fd(), SHUT_RDWR) == 0) {
      ++count;
    }
  }
  return count;
}

// ------------------------------------------------------------- client RPCs

ClientRpc* TcpMessageTransport::FindClientRpc(uint64_t id) {
  auto it = client_rpcs_.find(id);
  return it == client_rpcs_.end() ? nullptr : it->second.get();
}

void TcpMessageTransport::AssignWaiting(Peer& peer) {
  while (!peer.waiting.empty()) {
    Connection* conn = peer.LeastLoaded();
    if (conn == nullptr) return;
    const uint64_t id = peer.waiting.front();
    peer.waiting.pop_front();
    ClientRpc* rpc = FindClientRpc(id);
    if (rpc == nullptr || rpc->conn != nullptr) continue;  // finished meanwhile
    if (rpc->server_instance != 0 && rpc->server_instance != conn->remote_instance) {
      // Some of it reached a server process that is gone; that one may have
      // run it, so sending it to the new one could run it twice.
      FailClientRpc(*rpc, UnavailableError(
                              "tcp: server " + peer.identity.ToString() + " restarted while RPC " +
                              std::to_string(id) +
                              " was in flight; not re-sent, since the old process may have run it"));
      continue;
    }
    rpc->conn = conn;
    rpc->handle = conn->queue().Add(wire::StreamFrameType::kRequest, id, rpc->request);
    if (rpc->queued_before) ++stats_.requests_resent;
    rpc->queued_before = true;
    MarkDirty(*conn);
  }
}

void TcpMessageTransport::FinishClientRpc(ClientRpc& rpc) {
  Peer& peer = *rpc.peer;
  if (rpc.conn != nullptr) {
    Connection& conn = *rpc.conn;
    if (rpc.handle != 0) {
      SendQueue::Removed removed = conn.queue().Remove(rpc.handle);
      if (removed.started && !removed.will_complete && !conn.closed()) {
        conn.queue().AddControl({.type = wire::StreamFrameType::kAbort, .rpc_id = rpc.id});
        ++stats_.aborts_sent;
      }
      MarkDirty(conn);
    }
  }
  // A response still arriving for it is no longer worth its memory.
  for (Connection* conn : peer.connections) {
    conn->parser().Discard(wire::StreamFrameType::kResponse, rpc.id);
  }
  peer.outstanding.erase(rpc.id);
  // Backoff is for RPCs that wait: the next one to this peer dials at once.
  if (peer.outstanding.empty()) peer.OnHandshake();
  ScheduleAck(peer);
  client_rpcs_.erase(rpc.id);  // destroys rpc
}

void TcpMessageTransport::FailIfPeerGone(Peer& peer, int err, const Status& why) {
  if (!transport::tcp::PeerGone(err)) return;
  if (err == ECONNREFUSED && peer.instance == 0) return;
  // Only the waiting ones: an RPC on another open connection to the peer
  // (one it opened to us) is still moving, and that connection will say so
  // if it is not.
  std::vector<uint64_t> gone;
  for (uint64_t id : peer.outstanding) {
    const ClientRpc* rpc = FindClientRpc(id);
    if (rpc != nullptr && rpc->conn == nullptr) gone.push_back(id);
  }
  for (uint64_t id : gone) {
    ClientRpc* rpc = FindClientRpc(id);
    if (rpc == nullptr) continue;
    ++stats_.peer_gone_failures;
    FailClientRpc(*rpc, UnavailableError("tcp: " + peer.identity.ToString() + " is gone (" +
                                         std::string(why.message()) + "; RPC " +
                                         std::to_string(id) + ")"));
  }
}

void TcpMessageTransport::FailClientRpc(ClientRpc& rpc, Status status) {
  transport::MessageEvent event;
  event.kind = transport::MessageEvent::Kind::kFailed;
  event.client_id = rpc.id;
  event.cookie = rpc.cookie;
  event.status = std::move(status);
  PushEvent(std::move(event));
  FinishClientRpc(rpc);
}

uint64_t TcpMessageTransport::ClientFloor(const Peer& peer) const {
  return peer.outstanding.empty() ? next_client_id_ : *peer.outstanding.begin();
}

void TcpMessageTransport::ScheduleAck(Peer& peer) {
  if (ClientFloor(peer) <= peer.floor_sent || peer.ack_due_ns != kNever) return;
  peer.ack_due_ns = now_ + config_.ack_delay_ns;
  timers_dirty_ = true;
}

// ----------------------------------------------------------- server side

void TcpMessageTransport::QueueResponse(ServedRpc& served, uint64_t id, Connection& conn) {
  if (served.queued_on != nullptr) return;
  if (served.lost) {
    conn.queue().AddControl({.type = wire::StreamFrameType::kResponse,
                             .flags = wire::kStreamFlagLost,
                             .rpc_id = id});
  } else {
    table_.Unmark(served);
    served.queued_on = &conn;
    served.handle = conn.queue().Add(wire::StreamFrameType::kResponse, id, served.response);
  }
  MarkDirty(conn);
}

void TcpMessageTransport::DetachResponse(uint64_t id, ServedRpc& served) {
  if (served.queued_on == nullptr) return;
  Connection& conn = *served.queued_on;
  SendQueue::Removed removed = conn.queue().Remove(served.handle);
  if (removed.started && !removed.will_complete && !conn.closed()) {
    conn.queue().AddControl({.type = wire::StreamFrameType::kAbort,
                             .flags = wire::kStreamFlagAbortResponse,
                             .rpc_id = id});
    ++stats_.aborts_sent;
  }
  MarkDirty(conn);
  served.queued_on = nullptr;
  served.handle = 0;
}

void TcpMessageTransport::EvictStoredResponses() {
  stats_.responses_evicted +=
      table_.EvictOverLimit([&](uint64_t id, ServedRpc& served) { DetachResponse(id, served); });
}

}  // namespace wharf::stream
