// Engine: the operations the host starts, replies to them, deadlines.
// Requests from peers are handled in engine_serve.cc.
#include "engine/engine.h"

#include <algorithm>
#include <string>

namespace wharf::engine {
namespace {

Status StatusFromReply(uint32_t code, const Buffer& text) {
  if (code == 0) return OkStatus();
  auto sc = code <= static_cast<uint32_t>(StatusCode::kDataLoss) ? static_cast<StatusCode>(code)
                                                                 : StatusCode::kUnknown;
  return Status(sc, std::string(text.AsStringView()));
}

// A request on a connection failed because the peer died (kUnavailable) or
// no longer has the connection (kNotFound): the connection is over.
bool ConnectionLost(const Status& status) {
  return status.code() == StatusCode::kUnavailable || status.code() == StatusCode::kNotFound;
}

}  // namespace

Engine::Engine(transport::MessageTransport* primary, TransportOpener opener, const Clock& clock,
               EngineLimits limits, EngineSink* sink)
    : transports_{primary},
      opener_(std::move(opener)),
      clock_(clock),
      limits_(limits),
      sink_(sink),
      // Connection ids on the wire must not repeat across restarts of this
      // process: seed from the wall clock.
      wire_id_seed_(static_cast<uint64_t>(clock.WallNs()) * 0x9E3779B97F4A7C15ULL) {}

Engine::~Engine() { Shutdown(CancelledError("endpoint closed")); }

std::string Engine::UriOf(const PeerRef& peer) const {
  return std::string(transports_[peer.transport]->scheme()) + "://" + peer.address.ToString() +
         EndpointSuffix(peer.endpoint);
}

const std::string& Engine::PeerUri(const PeerRef& peer) {
  constexpr size_t kMaxRemembered = 4096;
  auto it = peer_uris_.find(peer);
  if (it != peer_uris_.end()) return it->second;
  if (peer_uris_.size() >= kMaxRemembered) peer_uris_.clear();
  return peer_uris_.emplace(peer, UriOf(peer)).first->second;
}

Result<PeerRef> Engine::PeerFor(const Uri& uri) {
  for (size_t i = 0; i < transports_.size(); ++i) {
    if (transports_[i]->scheme() == uri.scheme) {
      return PeerRef{static_cast<uint8_t>(i), uri.address, uri.endpoint_id};
    }
  }
  if (!opener_) {
    return InvalidArgumentError("no " + uri.scheme + " transport on this endpoint (it speaks " +
                                std::string(transports_[0]->scheme()) + "://)");
  }
  if (transports_.size() >= UINT8_MAX) return ResourceExhaustedError("too many transports");
  WHARF_ASSIGN_OR_RETURN(transport::MessageTransport * opened, opener_(uri.scheme));
  transports_.push_back(opened);
  return PeerRef{static_cast<uint8_t>(transports_.size() - 1), uri.address, uri.endpoint_id};
}

void Engine::Register(uint64_t op_id, Op op) {
  const TimeNs deadline_ns = op.deadline_ns;
  if (AwaitsAnswer(op.kind)) ++ops_awaiting_answer_;
  ops_.emplace(op_id, std::move(op));
  deadlines_.Push(deadline_ns, op_id);
}

Status Engine::CheckSize(size_t bytes) const {
  if (bytes <= limits_.max_message_bytes) return OkStatus();
  return InvalidArgumentError("message of " + std::to_string(bytes) +
                              " bytes exceeds homa.max_message_bytes (" +
                              std::to_string(limits_.max_message_bytes) + ")");
}

TimeNs Engine::NextDeadline() const {
  TimeNs next = kNever;
  for (const transport::MessageTransport* t : transports_) next = std::min(next, t->NextDeadline());
  next = std::min(next, deadlines_.Earliest());
  return std::min({next, next_keepalive_ns_, next_barrier_expiry_ns_});
}

void Engine::StartRequest(uint64_t op_id, const PeerRef& peer, const Frame& frame,
                          Buffer payload) {
  Result<uint64_t> id = transports_[peer.transport]->SendRequestTo(
      peer.address, peer.endpoint, WrapFrame(frame, std::move(payload)), op_id);
  if (!id.ok()) {
    FinishOp(op_id, id.status());
    return;
  }
  auto it = ops_.find(op_id);
  if (it != ops_.end()) {
    it->second.rpc_id = *id;
    it->second.transport = peer.transport;
  }
}

void Engine::FinishOp(uint64_t op_id, Status status, Buffer message, uint64_t value) {
  auto it = ops_.find(op_id);
  if (it == ops_.end()) return;
  const Op op = std::move(it->second);
  ops_.erase(it);
  if (AwaitsAnswer(op.kind)) --ops_awaiting_answer_;
  // Its deadlines_ entry is stale now; it leaves when it reaches the top.
  if (op.deadline_ns != kNever) {
    deadlines_.Finished(op.deadline_ns, ops_.size(),
                        [this](const DeadlineHeap::Entry& e) { return IsLiveDeadline(e); });
  }
  // The engine's own operations end here; the host never saw their ids.
  if (op.kind == OpKind::kKeepAlive || op.kind == OpKind::kCancelNotice) return;
  Complete(op_id, std::move(status), std::move(message), value);
}

// ------------------------------------------------------------ connections

void Engine::Connect(uint64_t op_id, const Uri& uri, bool ordered, TimeNs deadline_ns) {
  if (!shutdown_status_.ok()) return Complete(op_id, shutdown_status_);
  Result<PeerRef> peer_ref = PeerFor(uri);
  if (!peer_ref.ok()) return Complete(op_id, peer_ref.status());
  const PeerRef& peer = *peer_ref;
  uint64_t local = next_conn_++;
  ConnState& conn = conns_[local];
  conn.local_id = local;
  wire_id_seed_ += 0x9E3779B97F4A7C15ULL;
  conn.wire_id = wire_id_seed_ ^ (wire_id_seed_ >> 29);
  conn.peer = peer;
  conn.ordered = ordered;
  by_wire_[{peer, conn.wire_id}] = local;
  Register(op_id, Op{.kind = OpKind::kConnect, .conn = local, .deadline_ns = deadline_ns});
  Frame frame;
  frame.kind = FrameKind::kConnect;
  frame.flags = ordered ? kFrameOrdered : 0;
  frame.conn_id = conn.wire_id;
  StartRequest(op_id, peer, frame, Buffer());
}

void Engine::Accept(uint64_t op_id, TimeNs deadline_ns) {
  if (!accept_queue_.empty()) {
    const uint64_t local = accept_queue_.front();
    accept_queue_.pop_front();
    return Complete(op_id, OkStatus(), Buffer(), local);
  }
  if (!shutdown_status_.ok()) return Complete(op_id, shutdown_status_);
  if (!listening_) return Complete(op_id, FailedPreconditionError("Accept before Listen"));
  Register(op_id, Op{.kind = OpKind::kAccept, .deadline_ns = deadline_ns});
  accept_waiters_.push_back(op_id);
}

void Engine::Send(uint64_t op_id, uint64_t conn_id, Buffer message) {
  if (!shutdown_status_.ok()) return Complete(op_id, shutdown_status_);
  auto it = conns_.find(conn_id);
  if (it == conns_.end()) return Complete(op_id, InvalidArgumentError("unknown connection"));
  ConnState& conn = it->second;
  if (!conn.open) return Complete(op_id, conn.closed_reason);
  if (Status size = CheckSize(message.size()); !size.ok()) return Complete(op_id, size);
  Register(op_id, Op{.kind = OpKind::kSend, .conn = conn_id});
  Frame frame;
  frame.kind = FrameKind::kMessage;
  frame.conn_id = conn.wire_id;
  frame.seq = conn.next_send_seq++;
  StartRequest(op_id, conn.peer, frame, std::move(message));
}

void Engine::Recv(uint64_t op_id, uint64_t conn_id) {
  auto it = conns_.find(conn_id);
  if (it == conns_.end()) return Complete(op_id, InvalidArgumentError("unknown connection"));
  ConnState& conn = it->second;
  if (!conn.ready.empty()) {
    Buffer message = std::move(conn.ready.front());
    conn.ready.pop_front();
    conn.ready_bytes -= message.size();
    return Complete(op_id, OkStatus(), std::move(message));
  }
  if (!conn.open) return Complete(op_id, conn.closed_reason);
  if (!shutdown_status_.ok()) return Complete(op_id, shutdown_status_);
  Register(op_id, Op{.kind = OpKind::kRecv, .conn = conn_id});
  conn.receivers.push_back(op_id);
  ArmKeepAlive(clock_.NowNs());
}

void Engine::Call(uint64_t op_id, const Uri& uri, uint32_t method, Buffer request,
                  TimeNs deadline_ns) {
  Result<PeerRef> peer = PeerFor(uri);
  if (!peer.ok()) return Complete(op_id, peer.status());
  CallPeer(op_id, *peer, method, std::move(request), deadline_ns);
}

void Engine::CallPeer(uint64_t op_id, const PeerRef& peer, uint32_t method, Buffer request,
                      TimeNs deadline_ns) {
  if (Status size = CheckSize(request.size()); !size.ok()) return Complete(op_id, size);
  if (!shutdown_status_.ok()) return Complete(op_id, shutdown_status_);
  Frame frame;
  frame.kind = FrameKind::kRpc;
  frame.code = method;
  if (deadline_ns != kNever) {
    const TimeNs now = host_now_ns_ != 0 ? host_now_ns_ : clock_.NowNs();
    TimeNs left = std::max<TimeNs>(0, deadline_ns - now);
    // At least 1 us: 0 on the wire means "no deadline".
    frame.deadline_us =
        static_cast<uint32_t>(std::clamp<TimeNs>(left / kNsPerUs, 1, UINT32_MAX));
  }
  // The request leaves before the operation is recorded: that bookkeeping
  // then overlaps the round trip instead of delaying it. Nothing can refer to
  // the operation meanwhile: the transport reports on it only from Poll().
  Result<uint64_t> rpc_id = transports_[peer.transport]->SendRequestTo(
      peer.address, peer.endpoint, WrapFrame(frame, std::move(request)), op_id);
  if (!rpc_id.ok()) return Complete(op_id, rpc_id.status());
  Register(op_id, Op{.kind = OpKind::kCall,
                     .rpc_id = *rpc_id,
                     .transport = peer.transport,
                     .deadline_ns = deadline_ns,
                     .server = peer.address,
                     .server_endpoint = peer.endpoint});
}

void Engine::CallOnConnection(uint64_t op_id, uint64_t conn_id, uint32_t method, Buffer request,
                              TimeNs deadline_ns) {
  auto it = conns_.find(conn_id);
  if (it == conns_.end()) return Complete(op_id, InvalidArgumentError("unknown connection"));
  if (!it->second.open) return Complete(op_id, it->second.closed_reason);
  CallPeer(op_id, it->second.peer, method, std::move(request), deadline_ns);
}

void Engine::Disconnect(uint64_t op_id, uint64_t conn_id) {
  auto it = conns_.find(conn_id);
  if (it == conns_.end()) return Complete(op_id, InvalidArgumentError("unknown connection"));
  ConnState& conn = it->second;
  if (!conn.open) return Complete(op_id, FailedPreconditionError("connection already closed"));
  CloseConnection(conn, FailedPreconditionError("connection was disconnected"));
  if (!shutdown_status_.ok()) return Complete(op_id, shutdown_status_);
  Register(op_id, Op{.kind = OpKind::kDisconnect, .conn = conn_id});
  Frame frame;
  frame.kind = FrameKind::kDisconnect;
  frame.conn_id = conn.wire_id;
  StartRequest(op_id, conn.peer, frame, Buffer());
}

void Engine::Release(uint64_t conn_id) {
  auto it = conns_.find(conn_id);
  if (it == conns_.end()) return;
  by_wire_.erase({it->second.peer, it->second.wire_id});
  if (it->second.remote) --remote_conns_;
  // Cancel() removes each receiver from this deque: take them out first.
  auto receivers = std::move(it->second.receivers);
  it->second.receivers.clear();
  conns_.erase(it);
  for (uint64_t receiver : receivers) Cancel(receiver);
}

Result<std::string> Engine::PeerOf(uint64_t conn_id) const {
  auto it = conns_.find(conn_id);
  if (it == conns_.end()) return InvalidArgumentError("unknown connection");
  return UriOf(it->second.peer);
}

void Engine::SetServed(uint32_t method, bool served) {
  if (served) {
    served_.insert(method);
  } else {
    served_.erase(method);
  }
}

void Engine::BarrierArrive(uint64_t op_id, const Uri& coordinator_uri, bool is_coordinator,
                           uint64_t group, uint64_t round, uint32_t members, TimeNs deadline_ns) {
  if (!shutdown_status_.ok()) return Complete(op_id, shutdown_status_);
  Result<PeerRef> coordinator = PeerFor(coordinator_uri);
  if (!coordinator.ok()) return Complete(op_id, coordinator.status());
  Register(op_id, Op{.kind = OpKind::kBarrier, .deadline_ns = deadline_ns});
  if (!is_coordinator) {
    Frame frame;
    frame.kind = FrameKind::kBarrier;
    frame.code = members;
    frame.conn_id = group;
    frame.seq = round;
    StartRequest(op_id, *coordinator, frame, Buffer());
    return;
  }
  BarrierRound& r = barriers_[{group, round}];
  r.members = members;
  r.local_op = op_id;
  r.expires_ns = kNever;
  MaybeReleaseBarrier(group, round);
}

// ------------------------------------------------------ cancel / deadlines

void Engine::Cancel(uint64_t op_id) {
  auto it = ops_.find(op_id);
  if (it == ops_.end()) return;
  if (it->second.kind == OpKind::kCall && it->second.rpc_id != 0) SendCancelNotice(it->second);
  StopOp(op_id, CancelledError("cancelled"));
}

void Engine::SendCancelNotice(const Op& call) {
  // Best effort, as a request of its own: the server may never have seen
  // the call, or may have answered it already; either way the notice is
  // harmless. Its answer is not awaited by anyone.
  // Read before Register: an insert may move `call` (ops_ is open addressing).
  const PeerRef server{call.transport, call.server, call.server_endpoint};
  Frame frame;
  frame.kind = FrameKind::kCancel;
  frame.seq = call.rpc_id;
  const uint64_t notice = next_internal_op_++;
  Register(notice, Op{.kind = OpKind::kCancelNotice,
                      .deadline_ns = clock_.NowNs() + 5 * kNsPerSec});
  ++counts_.cancel_notices_sent;
  StartRequest(notice, server, frame, Buffer());
}

void Engine::StopOp(uint64_t op_id, Status why) {
  auto it = ops_.find(op_id);
  if (it == ops_.end()) return;
  Op& op = it->second;
  if (op.rpc_id != 0) transports_[op.transport]->Cancel(op.rpc_id);
  switch (op.kind) {
    case OpKind::kRecv: {
      auto c = conns_.find(op.conn);
      if (c != conns_.end()) {
        auto& rs = c->second.receivers;
        rs.erase(std::remove(rs.begin(), rs.end(), op_id), rs.end());
      }
      break;
    }
    case OpKind::kAccept:
      accept_waiters_.erase(std::remove(accept_waiters_.begin(), accept_waiters_.end(), op_id),
                            accept_waiters_.end());
      break;
    case OpKind::kBarrier:
      for (auto& [key, round] : barriers_) {
        if (round.local_op == op_id) {
          round.local_op = 0;
          round.expires_ns = clock_.NowNs() + limits_.barrier_round_timeout_ns;
          next_barrier_expiry_ns_ = std::min(next_barrier_expiry_ns_, round.expires_ns);
        }
      }
      break;
    case OpKind::kConnect: {
      auto c = conns_.find(op.conn);
      if (c != conns_.end()) {
        by_wire_.erase({c->second.peer, c->second.wire_id});
        conns_.erase(c);
      }
      break;
    }
    case OpKind::kKeepAlive: {
      auto c = conns_.find(op.conn);
      if (c != conns_.end()) c->second.keepalive_in_flight = false;
      break;
    }
    default:
      break;
  }
  FinishOp(op_id, std::move(why));
}

void Engine::ExpireDeadlines(TimeNs now) {
  deadlines_.Expire(
      now, [this](const DeadlineHeap::Entry& e) { return IsLiveDeadline(e); },
      [this](uint64_t op_id) {
        ops_.find(op_id)->second.deadline_ns = kNever;  // its entry is gone already
        StopOp(op_id, DeadlineExceededError("deadline exceeded"));
      });
}

void Engine::ArmKeepAlive(TimeNs now) {
  if (limits_.keepalive_ns <= 0 || next_keepalive_ns_ != kNever) return;
  next_keepalive_ns_ = now + limits_.keepalive_ns;
}

void Engine::SendKeepAlives(TimeNs now) {
  if (next_keepalive_ns_ == kNever || now < next_keepalive_ns_) return;
  next_keepalive_ns_ = kNever;
  bool any_waiting = false;
  for (auto& [local, conn] : conns_) {
    if (!conn.open || conn.receivers.empty()) continue;
    any_waiting = true;
    if (conn.keepalive_in_flight) continue;
    conn.keepalive_in_flight = true;
    const uint64_t op = next_internal_op_++;
    Register(op, Op{.kind = OpKind::kKeepAlive, .conn = local});
    Frame frame;
    frame.kind = FrameKind::kKeepAlive;
    frame.conn_id = conn.wire_id;
    StartRequest(op, conn.peer, frame, Buffer());
  }
  if (any_waiting) ArmKeepAlive(now);
}

void Engine::Shutdown(const Status& why) {
  shutdown_status_ = why.ok() ? CancelledError("engine shut down") : why;
  std::vector<uint64_t> ids;
  ids.reserve(ops_.size());
  for (auto& [id, op] : ops_) ids.push_back(id);
  for (uint64_t id : ids) {
    auto it = ops_.find(id);
    if (it == ops_.end()) continue;
    if (it->second.rpc_id != 0) transports_[it->second.transport]->Cancel(it->second.rpc_id);
    FinishOp(id, shutdown_status_);
  }
  if (ops_.empty()) deadlines_.Clear();
  conns_.clear();
  by_wire_.clear();
  remote_conns_ = 0;
  accept_waiters_.clear();
  accept_queue_.clear();
  barriers_.clear();
}

Buffer Engine::AllocateBuffer(size_t size) {
  if (size < transport::LargeBufferPool::kMinBytes) return Buffer::Allocate(size);
  return send_pool_->Take(size);
}

std::vector<std::pair<std::string, uint64_t>> Engine::Counters() const {
  const transport::LargeBufferPool::Stats pool = send_pool_->stats();
  std::vector<std::pair<std::string, uint64_t>> all = {
      {"engine.pending_ops", ops_.size()},
      {"engine.connections", conns_.size()},
      {"engine.connections_refused", counts_.connections_refused},
      {"engine.barrier_rounds", barriers_.size()},
      {"engine.barrier_rounds_refused", counts_.barrier_rounds_refused},
      {"engine.barrier_rounds_expired", counts_.barrier_rounds_expired},
      {"engine.cancel_notices_sent", counts_.cancel_notices_sent},
      {"engine.cancel_notices_received", counts_.cancel_notices_received},
      {"engine.send_buffers_reused", pool.reused},
      {"engine.send_buffers_allocated", pool.allocated},
      {"engine.send_pool_bytes", pool.kept_bytes},
  };
  for (const transport::MessageTransport* t : transports_) {
    auto counters = t->Counters();
    all.insert(all.end(), counters.begin(), counters.end());
  }
  return all;
}

// ----------------------------------------------------------------- poll

void Engine::BeginBatch() {
  if (batch_depth_++ > 0) return;
  batched_transports_ = transports_.size();
  for (size_t i = 0; i < batched_transports_; ++i) transports_[i]->BeginBatch();
}

void Engine::EndBatch() {
  if (batch_depth_ == 0 || --batch_depth_ > 0) return;
  for (size_t i = 0; i < batched_transports_; ++i) transports_[i]->EndBatch();
}

transport::PollResult Engine::Poll() {
  transport::PollResult r;
  r.next_deadline = kNever;
  // Index loop: serving a request may open another transport (appending).
  for (size_t i = 0; i < transports_.size(); ++i) {
    transport::PollResult one = transports_[i]->Poll();
    r.work += one.work;
    r.next_deadline = std::min(r.next_deadline, one.next_deadline);
    r.now = std::max(r.now, one.now);
    // Requests handled below read the time from here (a clock read costs a
    // noticeable share of a round trip in a VM).
    poll_now_ns_ = one.now != 0 ? one.now : clock_.NowNs();
    transport::MessageEvent event;
    transport::MessageTransport& t = *transports_[i];
    t.BeginBatch();
    TimeNs batch_start_ns = poll_now_ns_;
    bool answered = false;  // a request of this batch may have run its handler
    const bool inline_handlers = sink_->MayRunHandlersInline();
    while (t.PopEvent(&event)) {
      ++r.work;
      if (event.kind == transport::MessageEvent::Kind::kRequest) {
        if (answered) {
          const TimeNs now = clock_.NowNs();
          if (now - batch_start_ns > kMaxBatchHoldNs) {
            t.EndBatch();  // the next handler may be slow: send what waits
            t.BeginBatch();
            batch_start_ns = now;
          }
        }
        HandleRequest(static_cast<uint8_t>(i), event);
        answered = inline_handlers;
      } else {
        HandleReply(event);
      }
    }
    t.EndBatch();
  }
  if (r.now == 0) r.now = clock_.NowNs();
  ExpireDeadlines(r.now);
  SendKeepAlives(r.now);
  ExpireBarrierRounds(r.now);
  r.next_deadline = std::min(r.next_deadline, deadlines_.Earliest());
  r.next_deadline = std::min({r.next_deadline, next_keepalive_ns_, next_barrier_expiry_ns_});
  return r;
}

void Engine::HandleReply(transport::MessageEvent& event) {
  uint64_t op_id = event.cookie;
  auto it = ops_.find(op_id);
  if (it == ops_.end()) return;  // cancelled or timed out meanwhile
  // Copied: closing a connection below completes operations, and nothing
  // may hold a reference into ops_ across that.
  const OpKind kind = it->second.kind;
  const uint64_t conn = it->second.conn;
  it->second.rpc_id = 0;
  Status status;
  Buffer payload;
  if (event.kind == transport::MessageEvent::Kind::kFailed) {
    status = std::move(event.status);
  } else {
    payload = std::move(event.message);
    Result<Frame> frame = UnwrapFrame(payload);
    if (!frame.ok() || frame->kind != FrameKind::kReply) {
      status = InternalError("malformed reply from peer: " +
                             (frame.ok() ? std::string("not a reply frame") : frame.status().message()));
    } else {
      status = StatusFromReply(frame->code, payload);
    }
  }
  uint64_t value = 0;
  switch (kind) {
    case OpKind::kConnect: {
      auto c = conns_.find(conn);
      if (status.ok()) {
        value = conn;
      } else if (c != conns_.end()) {
        by_wire_.erase({c->second.peer, c->second.wire_id});
        conns_.erase(c);
      }
      break;
    }
    case OpKind::kKeepAlive: {
      // The peer died (kUnavailable) or forgot the connection (NotFound):
      // receivers waiting on it learn why.
      auto c = conns_.find(conn);
      if (c == conns_.end()) break;
      c->second.keepalive_in_flight = false;
      if (ConnectionLost(status) && c->second.open) CloseConnection(c->second, status);
      break;
    }
    case OpKind::kSend: {
      // A send that fails because the peer died or forgot the connection
      // ends it; a refusal (its queue is full) does not.
      auto c = conns_.find(conn);
      if (ConnectionLost(status) && c != conns_.end() && c->second.open) {
        CloseConnection(c->second, status);
      }
      break;
    }
    default:
      break;
  }
  Buffer message = (kind == OpKind::kCall && status.ok()) ? std::move(payload) : Buffer();
  FinishOp(op_id, std::move(status), std::move(message), value);
}

}  // namespace wharf::engine
