// TcpMessageTransport: opening, the public calls, and the dispatch between
// its parts: what an arriving frame, a finished write or a closed
// connection means for the client side (ClientRpcs), the server side
// (ServerRpcs) and the peers; the reads and writes of a Poll; and the timers
// that span the parts.
#include "stream/tcp_transport.h"

#include <netinet/in.h>

#include <algorithm>
#include <array>
#include <random>
#include <string>
#include <utility>

namespace wharf::stream {
namespace {

// Read buffer shared by all connections: the most small-frame bytes one
// system call takes (see kMaxPendingEvents).
constexpr size_t kScratchBytes = 64 << 10;
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
// Ready sets read per Poll while they come back full.
constexpr int kMaxReadyRounds = 4;

std::string U(uint64_t v) { return std::to_string(v); }

// Differs per process lifetime: the wall clock (restarts are later) mixed
// with randomness (two processes started in the same nanosecond), finished
// with splitmix64 so that nearby inputs give unrelated ids.
uint64_t MakeInstanceId(const Clock& clock) {
  std::random_device random;
  uint64_t x =
      static_cast<uint64_t>(clock.WallNs()) ^ ((static_cast<uint64_t>(random()) << 32) | random());
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x == 0 ? 1 : x;
}

}  // namespace

Result<std::unique_ptr<TcpMessageTransport>> TcpMessageTransport::Open(const TcpConfig& given,
                                                                       const Clock& clock) {
  WHARF_ASSIGN_OR_RETURN(TcpConfig config, ResolveTcpConfig(given));
  std::unique_ptr<TcpMessageTransport> self(new TcpMessageTransport(config, clock));
  WHARF_RETURN_IF_ERROR(self->conns_.Listen());
  self->local_ = self->conns_.local();
  return self;
}

TcpMessageTransport::TcpMessageTransport(const TcpConfig& config, const Clock& clock)
    : config_(config),
      clock_(clock),
      instance_id_(MakeInstanceId(clock)),
      write_batch_bytes_(std::max(config.chunk_bytes, config.notsent_lowat_bytes)),
      now_(clock.NowNs()),
      log_limiter_(clock, kNsPerSec, 10),
      budget_{.limit = config.max_incoming_bytes},
      pool_(transport::LargeBufferPool::Create({})),
      // Ids start from the wall clock, as homa's do: a restarted client's
      // ids are new to every server, whatever it remembers.
      client_(config_, std::max<uint64_t>(1, static_cast<uint64_t>(clock.WallNs())), &writes_,
              &events_, &stats_, &timers_dirty_),
      server_(config_, &writes_, &events_, &stats_),
      conns_(config_, &budget_, pool_.get(), static_cast<ConnectionHandler*>(this), &stats_,
             &log_limiter_),
      scratch_(kScratchBytes) {}

TcpMessageTransport::~TcpMessageTransport() = default;

const TcpStats& TcpMessageTransport::stats() const {
  stats_.peak_incoming_buffer_bytes = budget_.peak;
  const transport::LargeBufferPool::Stats pool = pool_->stats();
  stats_.receive_buffers_reused = pool.reused;
  stats_.receive_buffers_allocated = pool.allocated;
  stats_.receive_pool_bytes = pool.kept_bytes;
  return stats_;
}

// ------------------------------------------------------------ public calls

Result<uint64_t> TcpMessageTransport::SendRequest(const transport::NetAddress& server,
                                                  Buffer request, uint64_t cookie) {
  if (server.family() == transport::NetAddress::Family::kNone || server.port() == 0) {
    return InvalidArgumentError("tcp: request to an empty address ('" + server.ToString() + "')");
  }
  if (request.size() > config_.max_message_bytes) {
    return InvalidArgumentError("tcp: request of " + U(request.size()) +
                                " bytes exceeds the message limit (max_message_bytes " +
                                U(config_.max_message_bytes) + ")");
  }
  now_ = clock_.NowNs();
  Peer& peer = peers_.Get(server);
  const uint64_t id = client_.Start(peer, std::move(request), cookie, now_);
  client_.AssignWaiting(peer, now_);
  // Dialling, pings and the peer-death deadline are the timer's business.
  timers_dirty_ = true;
  if (peer.CountOpen() == 0 && NeedsDial(peer) && now_ >= peer.next_dial_ns) Dial(peer);
  FlushUnlessHeld();
  conns_.Reap();
  return id;
}

Result<uint64_t> TcpMessageTransport::SendRequestTo(const transport::NetAddress& server,
                                                    uint16_t server_endpoint, Buffer request,
                                                    uint64_t cookie,
                                                    const transport::SendOptions& options) {
  if (server_endpoint != 0) {
    return InvalidArgumentError("tcp://: one endpoint per port; no named endpoints");
  }
  if (!transport::IsMessagePriority(options.priority)) {
    return InvalidArgumentError("tcp: priority " + std::to_string(options.priority) +
                                " is outside 0..7");
  }
  // Before the request's bytes are written (SendRequest may write them).
  if (options.priority != transport::kPriorityBySize &&
      server.family() != transport::NetAddress::Family::kNone) {
    MarkPeer(peers_.Get(server), options.priority);
  }
  return SendRequest(server, std::move(request), cookie);
}

Status TcpMessageTransport::SendResponse(const transport::ServerRpcKey& key, Buffer response,
                                         transport::MessagePriority priority) {
  now_ = clock_.NowNs();
  if (priority != transport::kPriorityBySize) {
    if (!transport::IsMessagePriority(priority)) {
      return InvalidArgumentError("tcp: priority " + std::to_string(priority) +
                                  " is outside 0..7");
    }
    if (Peer* peer = peers_.Find(key.client)) MarkPeer(*peer, priority);
  }
  WHARF_RETURN_IF_ERROR(server_.Respond(key, std::move(response), peers_.Find(key.client)));
  FlushUnlessHeld();
  conns_.Reap();
  return OkStatus();
}

void TcpMessageTransport::EndBatch() {
  if (!writes_.End()) return;
  if (writes_.has_dirty()) ++stats_.batched_flushes;
  FlushDirty();
  conns_.Reap();
}

bool TcpMessageTransport::Cancel(uint64_t client_id) {
  ClientRpc* rpc = client_.Find(client_id);
  if (rpc == nullptr) return false;
  now_ = clock_.NowNs();
  client_.Finish(*rpc, now_);
  FlushDirty();
  conns_.Reap();
  return true;
}

transport::PollResult TcpMessageTransport::Poll() {
  transport::PollResult result;
  now_ = clock_.NowNs();
  result.now = now_;
  for (int round = 0; round < kMaxReadyRounds; ++round) {
    const std::span<const epoll_event> ready = conns_.Ready();
    if (ready.empty()) break;
    for (const epoll_event& event : ready) {
      if (event.data.u64 == ConnectionTable::kListenerId) {
        AcceptAll();
      } else if (Connection* conn = conns_.Find(event.data.u64)) {
        HandleIo(*conn, event.events);
      }
    }
    result.work += static_cast<int>(ready.size());
    if (ready.size() < ConnectionTable::kMaxReady) break;
  }
  FlushDirty();
  if (timers_dirty_ || now_ >= next_timer_ns_) result.work += Tick();
  FlushDirty();
  conns_.Reap();
  result.next_deadline = NextDeadline();
  return result;
}

TimeNs TcpMessageTransport::NextDeadline() const {
  if (!events_.empty() || writes_.has_dirty() || timers_dirty_) return clock_.NowNs();
  return next_timer_ns_;
}

bool TcpMessageTransport::PopEvent(transport::MessageEvent* out) {
  if (events_.empty()) return false;
  *out = std::move(events_.front());
  events_.pop_front();
  return true;
}

std::vector<std::pair<std::string, uint64_t>> TcpMessageTransport::Counters() const {
  return CounterList(stats());
}

// ---------------------------------------------------------------- frames

Status TcpMessageTransport::OnHello(Connection& conn, const wire::StreamHello& hello) {
  Peer* peer = conn.peer;
  if (!conn.outbound()) {
    // Inbound: the peer is who it says it listens as, at the address it
    // connects from (so we can reach it by that identity later).
    if (hello.listen_port == 0) return InvalidArgumentError("HELLO declares listen port 0");
    const transport::NetAddress identity = conn.remote().WithPort(hello.listen_port);
    if (peers_.size() >= config_.max_peers && peers_.Find(identity) == nullptr) {
      // A flood of identities (sources, or one source declaring many
      // ports) must not grow the table; known peers keep working.
      conn.refused = true;
      return ResourceExhaustedError("tcp: new peer " + identity.ToString() + " refused: " +
                                    U(peers_.size()) + " peers known (tcp.max_peers)");
    }
    peer = &peers_.Get(identity);
    conn.peer = peer;
    peer->connections.push_back(&conn);
    ApplyPeerMarking(*peer, conn);
    peer->disconnected_since_ns = kNever;
  }
  conn.remote_instance = hello.instance_id;
  peer->last_heard_ns = now_;
  if (peer->instance != hello.instance_id) {
    if (peer->instance != 0) OnPeerRestart(*peer, hello.instance_id, conn);
    peer->instance = hello.instance_id;
  }
  conn.set_state(Connection::State::kOpen);
  conn.deadline_ns = kNever;
  if (peer->lost_connection) {
    ++stats_.reconnects;
    peer->lost_connection = false;
  }
  peer->OnHandshake();
  client_.AssignWaiting(*peer, now_);
  server_.QueueUnwritten(*peer, conn);
  client_.ScheduleAck(*peer, now_);
  writes_.MarkDirty(conn);
  timers_dirty_ = true;
  return OkStatus();
}

void TcpMessageTransport::OnPeerRestart(Peer& peer, uint64_t new_instance, Connection& via) {
  ++stats_.peer_restarts;
  WHARF_LOG_RATE_LIMITED(log_limiter_, kInfo, "tcp: {} restarted (instance {:x} -> {:x})",
                         peer.identity.ToString(), peer.instance, new_instance);
  // Its RPCs as a client belong to the old process: forget them (their
  // answers would go nowhere; SendResponse now says NotFound).
  (void)server_.Forget(peer.identity);
  // Connections to the old process are dead even if no RST came yet. Their
  // requests return to waiting, where AssignWaiting fails those the old
  // process may have run.
  std::vector<Connection*> stale;
  for (Connection* c : peer.connections) {
    if (c != &via && c->remote_instance != 0 && c->remote_instance != new_instance) {
      stale.push_back(c);
    }
  }
  peer.instance = new_instance;
  for (Connection* c : stale) {
    Close(*c, UnavailableError("superseded: the peer restarted"), CloseKind::kPeerRestarted);
  }
  peer.floor_sent = 0;
}

Status TcpMessageTransport::OnFrame(Connection& conn, const wire::StreamFrameHeader& header) {
  switch (header.type) {
    case wire::StreamFrameType::kRequest:
      if (header.ack_floor != 0) server_.AdvanceFloor(*conn.peer, header.ack_floor);
      break;
    case wire::StreamFrameType::kAck:
      server_.AdvanceFloor(*conn.peer, header.ack_floor);
      break;
    case wire::StreamFrameType::kPing:
      conn.queue().AddControl({.type = wire::StreamFrameType::kPong, .rpc_id = header.rpc_id});
      ++stats_.pongs_sent;
      writes_.MarkDirty(conn);
      break;
    default:
      break;  // PONG: hearing it is the point. RESPONSE, ABORT: the parser's.
  }
  return OkStatus();
}

Result<FrameParser::Decision> TcpMessageTransport::OnMessageStart(
    Connection& conn, const wire::StreamFrameHeader& first) {
  if (first.type == wire::StreamFrameType::kResponse) {
    return client_.OnResponseStart(*conn.peer, first, now_);
  }
  return server_.OnRequestStart(*conn.peer, conn, first);
}

void TcpMessageTransport::OnMessage(Connection& conn, wire::StreamFrameType type, uint64_t rpc_id,
                                    Buffer message) {
  if (type == wire::StreamFrameType::kResponse) {
    client_.OnResponse(*conn.peer, rpc_id, std::move(message), now_);
  } else {
    server_.OnRequest(*conn.peer, rpc_id, std::move(message));
  }
}

void TcpMessageTransport::OnMessageRefused(Connection& conn, wire::StreamFrameType type,
                                           uint64_t rpc_id, uint32_t length) {
  Peer& peer = *conn.peer;
  ++stats_.memory_refused;
  Status refused = ResourceExhaustedError(
      "tcp: " + std::string(wire::StreamFrameTypeName(type)) + " of " + U(length) + " bytes from " +
      peer.identity.ToString() + " refused: partially received messages would exceed " +
      "tcp.max_incoming_bytes (" + U(config_.max_incoming_bytes) + ")");
  if (type == wire::StreamFrameType::kResponse) {
    client_.OnResponseRefused(peer, rpc_id, std::move(refused), now_);
  } else {
    server_.OnRequestRefused(peer, rpc_id, std::move(refused));
  }
}

// ----------------------------------------------------------- connections

void TcpMessageTransport::AcceptAll() {
  accepted_.clear();
  if (conns_.AcceptAll(now_, &accepted_) == 0) return;
  timers_dirty_ = true;  // their handshake deadlines
  for (Connection* conn : accepted_) SendHello(*conn);
}

void TcpMessageTransport::Dial(Peer& peer) {
  int error = 0;
  Result<Connection*> dialled = conns_.Dial(peer.identity, now_, &error);
  timers_dirty_ = true;  // a handshake deadline, or the next attempt's time
  if (!dialled.ok()) {
    peer.OnConnectionLost(now_, config_);
    client_.FailWaiting(peer, error, dialled.status(), now_);
    return;
  }
  Connection& conn = **dialled;
  conn.peer = &peer;
  peer.connections.push_back(&conn);
  ApplyPeerMarking(peer, conn);
  peer.disconnected_since_ns = kNever;
  // The kernel's handshake is not news from the peer: it completes even
  // while the process is stopped or hung, and counting it would keep a hung
  // peer's RPCs alive forever through reconnects. Its HELLO is news.
  if (conn.state() == Connection::State::kHandshake) SendHello(conn);
}

void TcpMessageTransport::MarkPeer(Peer& peer, transport::MessagePriority priority) {
  // The class selector CS<priority>: DSCP priority * 8, in the TOS byte's
  // top six bits, as the UDP socket marks homa's priorities.
  const int tos = (priority * 8) << 2;
  if (priority == transport::kPriorityBySize || peer.tos == tos) return;
  peer.tos = tos;
  for (Connection* conn : peer.connections) ApplyPeerMarking(peer, *conn);
}

void TcpMessageTransport::ApplyPeerMarking(const Peer& peer, Connection& conn) {
  if (peer.tos < 0 || conn.fd() < 0) return;
  if (transport::tcp::SetTrafficClass(conn.fd(), static_cast<uint8_t>(peer.tos)).ok()) {
    ++stats_.traffic_class_marks;
  }
}

std::vector<int> TcpMessageTransport::ConnectionTrafficClassesForTest(
    const transport::NetAddress& server) {
  std::vector<int> classes;
  const Peer* peer = peers_.Find(server);
  if (peer == nullptr) return classes;
  for (const Connection* conn : peer->connections) {
    Result<int> tos = transport::tcp::GetIntOption(conn->fd(), IPPROTO_IP, IP_TOS);
    classes.push_back(tos.ok() ? *tos : -1);
  }
  return classes;
}

void TcpMessageTransport::SendHello(Connection& conn) {
  std::array<std::byte, wire::kStreamHelloBytes> body{};
  (void)wire::EncodeStreamHello({.listen_port = local_.port(), .instance_id = instance_id_}, body);
  conn.queue().AddControl(
      {.type = wire::StreamFrameType::kHello, .chunk_length = wire::kStreamHelloBytes}, body);
  writes_.MarkDirty(conn);
}

void TcpMessageTransport::HandleIo(Connection& conn, uint32_t events) {
  if (conn.state() == Connection::State::kConnecting) {
    if ((events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) == 0) return;
    int error = 0;
    Status connected = conns_.FinishConnect(conn, &error);
    if (!connected.ok()) {
      Close(conn, connected, CloseKind::kConnectFailed, error);
      return;
    }
    SendHello(conn);
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
    case Connection::Io::kSocketError:
      Close(conn, r.error, CloseKind::kSocketError, r.sys_error);
      return;
    case Connection::Io::kProtocolError:
      Close(conn, r.error, conn.refused ? CloseKind::kRefused : CloseKind::kProtocolError);
      return;
  }
}

size_t TcpMessageTransport::Flush(Connection& conn) {
  if (conn.closed() || conn.state() == Connection::State::kConnecting) return 0;
  Peer* peer = conn.peer;
  const uint64_t floor = peer != nullptr && conn.open() ? client_.Floor(*peer) : 0;
  finished_.clear();
  Connection::IoResult r = conn.Write(write_batch_bytes_, floor, &finished_);
  stats_.bytes_sent += r.bytes;
  stats_.writes += r.calls;
  if (r.carried_floor) client_.OnFloorCarried(*peer, floor);
  for (const SendQueue::Finished& f : finished_) {
    if (f.type == wire::StreamFrameType::kRequest) {
      client_.OnRequestWritten(conn, f);
    } else if (peer != nullptr) {
      server_.OnResponseWritten(conn, *peer, f);
    }
  }
  if (r.io != Connection::Io::kOk) {
    Close(conn, r.error, CloseKind::kSocketError, r.sys_error);
    return r.bytes;
  }
  conns_.SetWantWrite(conn, r.blocked);
  if (!finished_.empty()) server_.EvictStoredResponses();
  return r.bytes;
}

void TcpMessageTransport::FlushDirty() {
  // Flushing may dirty other connections (an eviction's ABORT): loop.
  while (writes_.TakeDirty(&flushing_)) {
    for (uint64_t id : flushing_) {
      Connection* conn = conns_.Find(id);
      if (conn == nullptr) continue;
      conn->dirty = false;
      // A connection waiting for EPOLLOUT is not writable yet.
      if (!conn->epoll_out) Flush(*conn);
    }
  }
}

void TcpMessageTransport::Close(Connection& conn, const Status& reason, CloseKind kind, int err) {
  if (conn.closed()) return;
  Peer* peer = conn.peer;
  conns_.CloseConnection(conn, reason, kind);
  timers_dirty_ = true;
  if (peer == nullptr) return;
  client_.OnConnectionClosed(conn, *peer);
  server_.OnConnectionClosed(conn, *peer);
  peer->RemoveConnection(&conn);
  if (peer->connections.empty()) peer->disconnected_since_ns = now_;
  // Ending an idle connection loses nothing; a restart's new connection is up.
  if (kind != CloseKind::kPeerRestarted && kind != CloseKind::kIdle) {
    peer->OnConnectionLost(now_, config_);
  }
  client_.AssignWaiting(*peer, now_);
  if (err != 0) client_.FailWaiting(*peer, err, reason, now_);
}

// ---------------------------------------------------------------- timers
//
// Tick runs what is due and computes when it must run next; state changes
// that may bring a deadline forward set timers_dirty_, which makes the next
// Poll tick.

bool TcpMessageTransport::NeedsDial(const Peer& peer) const {
  // Connections it opened to us serve as well as ours, both ways.
  return !peer.outstanding.empty() && peer.CountInboundOpen() == 0 &&
         peer.CountOutboundLive() < static_cast<size_t>(config_.connections_per_peer);
}

TimeNs TcpMessageTransport::IdleDeadline(const Connection& conn) const {
  const Peer* peer = conn.peer;
  if (peer == nullptr || !peer->outstanding.empty() || conn.queue().HasWork()) return kNever;
  // Its requests that our application still holds: the client waits (and
  // pings), so it is not idle; answered but unacknowledged ones do not count.
  if (server_.HoldsRequestsOf(peer->identity)) return kNever;
  return conn.last_read_ns + config_.idle_timeout_ns;
}

int TcpMessageTransport::Tick() {
  timers_dirty_ = false;
  int work = 0;
  TimeNs next = kNever;
  // Handshakes (and connects) that did not finish in time, and idle
  // connections.
  std::vector<Connection*> late;
  std::vector<Connection*> idle;
  conns_.ForEach([&](Connection& conn) {
    if (conn.open()) {
      const TimeNs idle_at = IdleDeadline(conn);
      if (idle_at <= now_) {
        idle.push_back(&conn);
      } else {
        next = std::min(next, idle_at);
      }
    } else if (conn.deadline_ns <= now_) {
      late.push_back(&conn);
    } else {
      next = std::min(next, conn.deadline_ns);
    }
  });
  for (Connection* conn : late) {
    const CloseKind kind = conn->state() == Connection::State::kConnecting
                               ? CloseKind::kConnectFailed
                               : CloseKind::kTimeout;
    Close(*conn,
          DeadlineExceededError("no handshake from " + conn->remote().ToString() + " within " +
                                U(config_.peer_timeout_ns / kNsPerMs) + " ms (tcp.peer_timeout)"),
          kind);
    ++work;
  }
  for (Connection* conn : idle) {
    Close(*conn,
          UnavailableError("nothing pending and nothing heard for " +
                           U(config_.idle_timeout_ns / kNsPerMs) + " ms (tcp.idle_timeout)"),
          CloseKind::kIdle);
    ++work;
  }
  for (const transport::NetAddress& identity : peers_.Identities()) {
    Peer* peer = peers_.Find(identity);
    if (peer != nullptr) work += TickPeer(*peer, &next);
  }
  // Received-message blocks nobody took for a while go back to the system.
  (void)pool_->ReleaseIdle(now_);
  if (pool_->HasKeptBlocks()) {
    next = std::min(next, now_ + transport::LargeBufferPool::kIdleIntervalNs);
  }
  // Work done above (a new dial, a close) may have set new deadlines.
  if (timers_dirty_) next = now_;
  timers_dirty_ = false;
  next_timer_ns_ = next;
  return work;
}

int TcpMessageTransport::TickPeer(Peer& peer, TimeNs* next) {
  int work = client_.ExpireSilent(peer, now_, next);
  if (work > 0) {
    // Whatever connections it has are as silent as it is.
    std::vector<Connection*> silent = peer.connections;
    for (Connection* c : silent) {
      Close(*c, UnavailableError("peer presumed dead"), CloseKind::kTimeout);
    }
  }
  work += client_.SendPings(peer, now_, next);
  work += client_.SendDelayedAck(peer, now_, next);

  // Reconnect, with backoff, while RPCs wait on it.
  while (NeedsDial(peer)) {
    if (now_ < peer.next_dial_ns) {
      *next = std::min(*next, peer.next_dial_ns);
      break;
    }
    const size_t before = peer.CountOutboundLive();
    Dial(peer);
    ++work;
    if (peer.CountOutboundLive() == before) {
      *next = std::min(*next, peer.next_dial_ns);
      break;
    }
  }

  // A peer gone for 2 x peer_timeout: it has given up on its RPCs with us,
  // so its at-most-once state can go, and the peer itself once idle.
  if (peer.connections.empty()) {
    if (peer.disconnected_since_ns == kNever) peer.disconnected_since_ns = now_;
    const TimeNs forget_at = peer.disconnected_since_ns + 2 * config_.peer_timeout_ns;
    if (forget_at <= now_) {
      if (server_.Forget(peer.identity)) ++stats_.clients_expired;
      if (peer.outstanding.empty()) {
        ++stats_.peers_expired;
        peers_.Erase(peer.identity);  // destroys peer
        return work + 1;
      }
    } else {
      *next = std::min(*next, forget_at);
    }
  }
  return work;
}

}  // namespace wharf::stream
