// Engine: the operations the host starts, replies to them, requests from
// peers, deadlines and the poll loop.
#include "engine/engine.h"

#include <algorithm>
#include <string>

namespace wharf::engine {
namespace {

Status StatusFromReply(uint32_t code, const Buffer& text) {
  if (code == 0) return OkStatus();
  return Status(StatusCodeFromWire(code), std::string(text.AsStringView()));
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
      conns_(limits.max_connections,
             static_cast<uint64_t>(clock.WallNs()) * 0x9E3779B97F4A7C15ULL),
      barriers_(limits.max_barrier_rounds, limits.barrier_round_timeout_ns),
      peer_rtts_({.max_peers = limits.peer_rtt_peers, .idle_timeout_ns = limits.peer_rtt_idle_ns}) {}

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

Status Engine::CheckSize(size_t bytes) const {
  if (bytes <= limits_.max_message_bytes) return OkStatus();
  return InvalidArgumentError("message of " + std::to_string(bytes) +
                              " bytes exceeds homa.max_message_bytes (" +
                              std::to_string(limits_.max_message_bytes) + ")");
}

TimeNs Engine::NextDeadline() const {
  TimeNs next = kNever;
  for (const transport::MessageTransport* t : transports_) next = std::min(next, t->NextDeadline());
  next = std::min(next, ops_.Earliest());
  return std::min({next, next_keepalive_ns_, barriers_.next_expiry_ns()});
}

void Engine::StartRequest(uint64_t op_id, const PeerRef& peer, const Frame& frame,
                          Buffer payload) {
  Result<uint64_t> id = transports_[peer.transport]->SendRequestTo(
      peer.address, peer.endpoint, WrapFrame(frame, std::move(payload)), op_id);
  if (!id.ok()) {
    FinishOp(op_id, id.status());
    return;
  }
  if (Op* op = ops_.Find(op_id)) {
    op->rpc_id = *id;
    op->transport = peer.transport;
  }
}

void Engine::NoteRoundTrip(const Op& op, bool answered, TimeNs now) {
  const PeerRttKey peer{op.transport, op.server};
  if (answered) {
    peer_rtts_.RecordRoundTrip(peer, now, now - op.started_ns);
  } else {
    peer_rtts_.RecordFailure(peer, now);
  }
}

void Engine::TakePeerRtts(
    TimeNs now, const std::function<void(std::string_view scheme, const PeerRttDelta&)>& visit) {
  peer_rtts_.Take(now, [&](const PeerRttDelta& d) {
    if (d.peer.transport < transports_.size()) visit(transports_[d.peer.transport]->scheme(), d);
  });
}

void Engine::FinishOp(uint64_t op_id, Status status, Buffer message, uint64_t value) {
  const std::optional<Op> op = ops_.Take(op_id);
  if (!op.has_value()) return;
  // The engine's own operations end here; the host never saw their ids.
  if (op->kind == OpKind::kKeepAlive || op->kind == OpKind::kCancelNotice) return;
  Complete(op_id, std::move(status), std::move(message), value);
}

// ------------------------------------------------------------ connections

void Engine::Connect(uint64_t op_id, const Uri& uri, bool ordered, uint32_t stream_method,
                     TimeNs deadline_ns) {
  if (!shutdown_status_.ok()) return Complete(op_id, shutdown_status_);
  Result<PeerRef> peer = PeerFor(uri);
  if (!peer.ok()) return Complete(op_id, peer.status());
  ConnState& conn = conns_.Open(*peer, ordered, stream_method);
  Register(op_id, Op{.kind = OpKind::kConnect, .conn = conn.local_id, .deadline_ns = deadline_ns});
  Frame frame;
  frame.kind = FrameKind::kConnect;
  frame.flags = conn.ordered ? kFrameOrdered : 0;
  frame.code = stream_method;
  frame.conn_id = conn.wire_id;
  StartRequest(op_id, *peer, frame, Buffer());
}

void Engine::AcceptFrom(uint64_t op_id, TimeNs deadline_ns, bool streams) {
  if (const uint64_t local = conns_.TakeAccepted(streams); local != 0) {
    return Complete(op_id, OkStatus(), Buffer(), local);
  }
  if (!shutdown_status_.ok()) return Complete(op_id, shutdown_status_);
  if (!streams && !conns_.listening()) {
    return Complete(op_id, FailedPreconditionError("Accept before Listen"));
  }
  if (streams && !conns_.serves_streams()) {
    return Complete(op_id, FailedPreconditionError("AcceptStream before ServeStreams"));
  }
  Register(op_id, Op{.kind = OpKind::kAccept, .deadline_ns = deadline_ns});
  conns_.AddAcceptWaiter(op_id, streams);
}

Result<uint32_t> Engine::StreamMethodOf(uint64_t conn) const {
  const ConnState* c = conns_.Find(conn);
  if (c == nullptr) return NotFoundError("connection " + std::to_string(conn));
  return c->stream_method;
}

void Engine::Send(uint64_t op_id, uint64_t conn_id, Buffer message) {
  if (!shutdown_status_.ok()) return Complete(op_id, shutdown_status_);
  ConnState* conn = conns_.Find(conn_id);
  if (conn == nullptr) return Complete(op_id, InvalidArgumentError("unknown connection"));
  if (!conn->open) return Complete(op_id, conn->closed_reason);
  if (Status size = CheckSize(message.size()); !size.ok()) return Complete(op_id, size);
  Register(op_id, Op{.kind = OpKind::kSend,
                     .conn = conn_id,
                     .server = conn->peer.address,
                     .started_ns = RttStart()});
  Frame frame;
  frame.kind = FrameKind::kMessage;
  frame.conn_id = conn->wire_id;
  frame.seq = conn->next_send_seq++;
  StartRequest(op_id, conn->peer, frame, std::move(message));
}

void Engine::Recv(uint64_t op_id, uint64_t conn_id) {
  ConnState* conn = conns_.Find(conn_id);
  if (conn == nullptr) return Complete(op_id, InvalidArgumentError("unknown connection"));
  if (!conn->ready.empty()) {
    Buffer message = std::move(conn->ready.front());
    conn->ready.pop_front();
    conn->ready_bytes -= message.size();
    return Complete(op_id, OkStatus(), std::move(message));
  }
  if (!conn->open) return Complete(op_id, conn->closed_reason);
  if (!shutdown_status_.ok()) return Complete(op_id, shutdown_status_);
  Register(op_id, Op{.kind = OpKind::kRecv, .conn = conn_id});
  conn->receivers.push_back(op_id);
  ArmKeepAlive(clock_.NowNs());
}

void Engine::Call(uint64_t op_id, const Uri& uri, uint32_t method, Buffer request,
                  TimeNs deadline_ns, const transport::SendOptions& options) {
  if (!transport::IsMessagePriority(options.priority)) {
    return Complete(op_id, InvalidArgumentError("engine: priority " +
                                                std::to_string(options.priority) +
                                                " is outside 0..7"));
  }
  Result<PeerRef> peer = PeerFor(uri);
  if (!peer.ok()) return Complete(op_id, peer.status());
  CallPeer(op_id, *peer, method, std::move(request), deadline_ns, options);
}

void Engine::CallPeer(uint64_t op_id, const PeerRef& peer, uint32_t method, Buffer request,
                      TimeNs deadline_ns, const transport::SendOptions& options) {
  if (Status size = CheckSize(request.size()); !size.ok()) return Complete(op_id, size);
  if (!shutdown_status_.ok()) return Complete(op_id, shutdown_status_);
  Frame frame;
  frame.kind = FrameKind::kRpc;
  frame.code = method;
  // One clock read serves the deadline and the round trip's start.
  const bool measured = peer_rtts_.enabled();
  const TimeNs now = host_now_ns_ != 0                         ? host_now_ns_
                     : (measured || deadline_ns != kNever) ? clock_.NowNs()
                                                            : 0;
  const TimeNs started_ns = measured ? std::max<TimeNs>(1, now) : 0;
  if (deadline_ns != kNever) {
    TimeNs left = std::max<TimeNs>(0, deadline_ns - now);
    // At least 1 us: 0 on the wire means "no deadline".
    frame.deadline_us =
        static_cast<uint32_t>(std::clamp<TimeNs>(left / kNsPerUs, 1, UINT32_MAX));
  }
  // The request leaves before the operation is recorded: that bookkeeping
  // then overlaps the round trip instead of delaying it. Nothing can refer to
  // the operation meanwhile: the transport reports on it only from Poll().
  Result<uint64_t> rpc_id = transports_[peer.transport]->SendRequestTo(
      peer.address, peer.endpoint, WrapFrame(frame, std::move(request)), op_id, options);
  if (!rpc_id.ok()) return Complete(op_id, rpc_id.status());
  Register(op_id, Op{.kind = OpKind::kCall,
                     .rpc_id = *rpc_id,
                     .transport = peer.transport,
                     .deadline_ns = deadline_ns,
                     .server = peer.address,
                     .server_endpoint = peer.endpoint,
                     .started_ns = started_ns});
}

void Engine::CallOnConnection(uint64_t op_id, uint64_t conn_id, uint32_t method, Buffer request,
                              TimeNs deadline_ns) {
  const ConnState* conn = conns_.Find(conn_id);
  if (conn == nullptr) return Complete(op_id, InvalidArgumentError("unknown connection"));
  if (!conn->open) return Complete(op_id, conn->closed_reason);
  CallPeer(op_id, conn->peer, method, std::move(request), deadline_ns, {});
}

void Engine::Disconnect(uint64_t op_id, uint64_t conn_id) {
  ConnState* conn = conns_.Find(conn_id);
  if (conn == nullptr) return Complete(op_id, InvalidArgumentError("unknown connection"));
  if (!conn->open) return Complete(op_id, FailedPreconditionError("connection already closed"));
  CloseConnection(*conn, FailedPreconditionError("connection was disconnected"));
  if (!shutdown_status_.ok()) return Complete(op_id, shutdown_status_);
  Register(op_id, Op{.kind = OpKind::kDisconnect, .conn = conn_id});
  Frame frame;
  frame.kind = FrameKind::kDisconnect;
  frame.conn_id = conn->wire_id;
  StartRequest(op_id, conn->peer, frame, Buffer());
}

void Engine::Release(uint64_t conn_id) {
  // Cancel() removes each receiver from the connection: they come out first.
  for (uint64_t receiver : conns_.Erase(conn_id)) Cancel(receiver);
}

Result<std::string> Engine::PeerOf(uint64_t conn_id) const {
  const ConnState* conn = conns_.Find(conn_id);
  if (conn == nullptr) return InvalidArgumentError("unknown connection");
  return UriOf(conn->peer);
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
  BarrierRounds::Release complete = barriers_.ArriveLocal(group, round, members, op_id);
  if (complete.local_op != 0) ReleaseBarrier(complete);
}

void Engine::ReleaseBarrier(BarrierRounds::Release& round) {
  for (const ServerCallRef& member : round.members) Respond(member, OkStatus());
  FinishOp(round.local_op, OkStatus());
}

// ------------------------------------------------------ cancel / deadlines

void Engine::Cancel(uint64_t op_id) {
  Op* op = ops_.Find(op_id);
  if (op == nullptr) return;
  if (op->kind == OpKind::kCall && op->rpc_id != 0) SendCancelNotice(*op);
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
  const uint64_t notice = ops_.NewInternalId();
  Register(notice, Op{.kind = OpKind::kCancelNotice,
                      .deadline_ns = clock_.NowNs() + 5 * kNsPerSec});
  ++counts_.cancel_notices_sent;
  StartRequest(notice, server, frame, Buffer());
}

void Engine::StopOp(uint64_t op_id, Status why) {
  Op* op = ops_.Find(op_id);
  if (op == nullptr) return;
  if (op->rpc_id != 0) transports_[op->transport]->Cancel(op->rpc_id);
  switch (op->kind) {
    case OpKind::kRecv:
      if (ConnState* conn = conns_.Find(op->conn)) {
        auto& rs = conn->receivers;
        rs.erase(std::remove(rs.begin(), rs.end(), op_id), rs.end());
      }
      break;
    case OpKind::kAccept:
      conns_.RemoveAcceptWaiter(op_id);
      break;
    case OpKind::kBarrier:
      barriers_.LocalGone(op_id, clock_.NowNs());
      break;
    case OpKind::kConnect:
      (void)conns_.Erase(op->conn);
      break;
    case OpKind::kKeepAlive:
      if (ConnState* conn = conns_.Find(op->conn)) conn->keepalive_in_flight = false;
      break;
    default:
      break;
  }
  FinishOp(op_id, std::move(why));
}

void Engine::ArmKeepAlive(TimeNs now) {
  if (limits_.keepalive_ns <= 0 || next_keepalive_ns_ != kNever) return;
  next_keepalive_ns_ = now + limits_.keepalive_ns;
}

void Engine::SendKeepAlives(TimeNs now) {
  if (next_keepalive_ns_ == kNever || now < next_keepalive_ns_) return;
  next_keepalive_ns_ = kNever;
  bool any_waiting = false;
  conns_.ForEach([&](uint64_t local, ConnState& conn) {
    if (!conn.open || conn.receivers.empty()) return;
    any_waiting = true;
    if (conn.keepalive_in_flight) return;
    conn.keepalive_in_flight = true;
    const uint64_t op = ops_.NewInternalId();
    Register(op, Op{.kind = OpKind::kKeepAlive, .conn = local});
    Frame frame;
    frame.kind = FrameKind::kKeepAlive;
    frame.conn_id = conn.wire_id;
    StartRequest(op, conn.peer, frame, Buffer());
  });
  if (any_waiting) ArmKeepAlive(now);
}

void Engine::ExpireBarrierRounds(TimeNs now) {
  std::vector<ServerCallRef> expired;
  barriers_.Expire(now, &expired);
  for (const ServerCallRef& member : expired) {
    Respond(member, DeadlineExceededError("the coordinator's member did not arrive at this round"));
  }
}

void Engine::Shutdown(const Status& why) {
  shutdown_status_ = why.ok() ? CancelledError("engine shut down") : why;
  regions_.Shutdown(shutdown_status_);
  for (uint64_t id : ops_.Ids()) {
    const Op* op = ops_.Find(id);
    if (op == nullptr) continue;
    if (op->rpc_id != 0) transports_[op->transport]->Cancel(op->rpc_id);
    FinishOp(id, shutdown_status_);
  }
  ops_.ClearDeadlinesIfEmpty();
  conns_.Clear();
  barriers_.Clear();
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
      {"engine.connections_refused", conns_.refused()},
      {"engine.barrier_rounds", barriers_.size()},
      {"engine.barrier_rounds_refused", barriers_.refused()},
      {"engine.barrier_rounds_expired", barriers_.expired()},
      {"engine.cancel_notices_sent", counts_.cancel_notices_sent},
      {"engine.cancel_notices_received", counts_.cancel_notices_received},
      {"engine.send_buffers_reused", pool.reused},
      {"engine.send_buffers_allocated", pool.allocated},
      {"engine.send_pool_bytes", pool.kept_bytes},
      {"engine.peer_rtt_peers", peer_rtts_.size()},
      {"engine.peer_rtt_round_trips", peer_rtts_.counters().round_trips},
      {"engine.peer_rtt_failures", peer_rtts_.counters().failures},
      {"engine.peer_rtt_untracked", peer_rtts_.counters().untracked},
      {"engine.peer_rtt_evicted", peer_rtts_.counters().evicted},
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
  ops_.Expire(r.now, [this, now = r.now](uint64_t op_id) {
    if (const Op* op = ops_.Find(op_id); op != nullptr && op->started_ns != 0) {
      NoteRoundTrip(*op, /*answered=*/false, now);
    }
    StopOp(op_id, DeadlineExceededError("deadline exceeded"));
  });
  SendKeepAlives(r.now);
  ExpireBarrierRounds(r.now);
  r.next_deadline = std::min(r.next_deadline, ops_.Earliest());
  r.next_deadline = std::min({r.next_deadline, next_keepalive_ns_, barriers_.next_expiry_ns()});
  return r;
}

void Engine::HandleReply(transport::MessageEvent& event) {
  uint64_t op_id = event.cookie;
  Op* op = ops_.Find(op_id);
  if (op == nullptr) return;  // cancelled or timed out meanwhile
  // Copied: closing a connection below completes operations, and nothing
  // may hold a pointer into ops_ across that.
  const OpKind kind = op->kind;
  const uint64_t conn_id = op->conn;
  op->rpc_id = 0;
  // An answer, error or not, is a round trip; a failure is the transport's.
  // It ends when the kernel received the answer, where it says (as a
  // probe's does), else when the poll that delivered it began.
  if (op->started_ns != 0) {
    const TimeNs end = event.received_ns >= op->started_ns ? event.received_ns : poll_now_ns_;
    NoteRoundTrip(*op, event.kind != transport::MessageEvent::Kind::kFailed, end);
  }
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
    case OpKind::kConnect:
      if (status.ok()) {
        value = conn_id;
      } else {
        (void)conns_.Erase(conn_id);
      }
      break;
    case OpKind::kKeepAlive: {
      // The peer died (kUnavailable) or forgot the connection (NotFound):
      // receivers waiting on it learn why.
      ConnState* conn = conns_.Find(conn_id);
      if (conn == nullptr) break;
      conn->keepalive_in_flight = false;
      if (ConnectionLost(status) && conn->open) CloseConnection(*conn, status);
      break;
    }
    case OpKind::kSend: {
      // A send that fails because the peer died or forgot the connection
      // ends it; a refusal (its queue is full) does not.
      ConnState* conn = conns_.Find(conn_id);
      if (ConnectionLost(status) && conn != nullptr && conn->open) CloseConnection(*conn, status);
      break;
    }
    default:
      break;
  }
  Buffer message = (kind == OpKind::kCall && status.ok()) ? std::move(payload) : Buffer();
  completing_stamps_ = {.sent_ns = event.sent_ns, .received_ns = event.received_ns};
  FinishOp(op_id, std::move(status), std::move(message), value);
  completing_stamps_ = {};
}

// ----------------------------------------------------- requests from peers

void Engine::HandleRequest(uint8_t transport, transport::MessageEvent& event) {
  const ServerCallRef key{transport, event.server_key};
  if (!event.status.ok()) {
    Respond(key, event.status);  // refused by the transport before it was read
    return;
  }
  Buffer payload = std::move(event.message);
  Result<Frame> frame = UnwrapFrame(payload);
  if (!frame.ok()) {
    Respond(key, frame.status());
    return;
  }
  switch (frame->kind) {
    case FrameKind::kConnect: HandleConnect(key, *frame); return;
    case FrameKind::kMessage: HandleMessage(key, *frame, std::move(payload)); return;
    case FrameKind::kDisconnect: HandleDisconnect(key, *frame); return;
    case FrameKind::kRpc:
      HandleRpc(key, *frame, std::move(payload), poll_now_ns_, event.received_ns);
      return;
    case FrameKind::kBarrier: HandleBarrier(key, *frame, poll_now_ns_); return;
    case FrameKind::kKeepAlive: HandleKeepAlive(key, *frame); return;
    case FrameKind::kCancel: HandleCancel(key, *frame); return;
    case FrameKind::kReply: break;
  }
  Respond(key, InvalidArgumentError("engine: a reply frame sent as a request"));
}

void Engine::Respond(const ServerCallRef& call, Status status, Buffer payload,
                     transport::MessagePriority priority) {
  if (call.transport >= transports_.size()) return;
  if (status.ok() && payload.size() > limits_.max_message_bytes) {
    // The handler's answer cannot be sent: the client gets why, instead of
    // waiting on an RPC that would stay in service forever.
    status = ResourceExhaustedError("response of " + std::to_string(payload.size()) +
                                    " bytes exceeds the server's homa.max_message_bytes (" +
                                    std::to_string(limits_.max_message_bytes) + ")");
  }
  Buffer message;
  if (status.ok()) {
    Frame frame;
    frame.kind = FrameKind::kReply;
    message = WrapFrame(frame, std::move(payload));
  } else {
    message = ErrorReply(status);
  }
  // A priority out of range would have the transport refuse the answer:
  // it goes at the transport's choice instead, rather than not at all.
  if (!transport::IsMessagePriority(priority)) priority = transport::kPriorityBySize;
  // NotFound here means the client gave up meanwhile: nothing to do.
  transports_[call.transport]->SendResponse(call.key, std::move(message), priority).IgnoreError();
}

void Engine::HandleConnect(const ServerCallRef& key, const Frame& frame) {
  Result<uint64_t> local = conns_.OpenFromPeer(ClientOf(key), frame.conn_id,
                                               (frame.flags & kFrameOrdered) != 0, frame.code);
  if (!local.ok()) {
    Respond(key, local.status());
    return;
  }
  // 0: a repeated connect of a live connection.
  if (*local != 0) {
    if (const uint64_t accept = conns_.Accepted(*local); accept != 0) {
      FinishOp(accept, OkStatus(), Buffer(), *local);
    }
  }
  Respond(key, OkStatus());
}

void Engine::HandleMessage(const ServerCallRef& key, const Frame& frame, Buffer payload) {
  ConnState* conn = conns_.FindByWire(ClientOf(key), frame.conn_id);
  if (conn == nullptr || !conn->open) {
    Respond(key, NotFoundError("no open connection " + std::to_string(frame.conn_id) + " from " +
                             UriOf(ClientOf(key))));
    return;
  }
  if (conn->ready_bytes + payload.size() > limits_.max_queued_bytes_per_connection) {
    Respond(key, ResourceExhaustedError(
                   "receiver holds " + std::to_string(conn->ready_bytes) +
                   " unread bytes on this connection (limit " +
                   std::to_string(limits_.max_queued_bytes_per_connection) + ")"));
    return;
  }
  if (!conn->ordered) {
    Deliver(*conn, std::move(payload));
  } else if (frame.seq == conn->next_deliver_seq) {
    Deliver(*conn, std::move(payload));
    ++conn->next_deliver_seq;
    // Release whatever was waiting for this one.
    for (auto it = conn->early.begin();
         it != conn->early.end() && it->first == conn->next_deliver_seq;
         it = conn->early.erase(it)) {
      conn->ready_bytes -= it->second.size();  // leaves the reorder buffer
      Deliver(*conn, std::move(it->second));
      ++conn->next_deliver_seq;
    }
  } else if (frame.seq > conn->next_deliver_seq) {
    conn->ready_bytes += payload.size();  // counted against the limit while held
    conn->early.emplace(frame.seq, std::move(payload));
  }
  Respond(key, OkStatus());
}

void Engine::Deliver(ConnState& conn, Buffer message) {
  if (!conn.receivers.empty()) {
    const uint64_t receiver = conn.receivers.front();
    conn.receivers.pop_front();
    FinishOp(receiver, OkStatus(), std::move(message));
    return;
  }
  conn.ready_bytes += message.size();
  conn.ready.push_back(std::move(message));
}

void Engine::HandleDisconnect(const ServerCallRef& key, const Frame& frame) {
  if (ConnState* conn = conns_.FindByWire(ClientOf(key), frame.conn_id)) {
    if (conn->open) {
      CloseConnection(*conn, UnavailableError("peer " + UriOf(ClientOf(key)) + " disconnected"));
    }
  }
  Respond(key, OkStatus());
}

void Engine::CloseConnection(ConnState& conn, Status why) {
  conn.open = false;
  conn.closed_reason = std::move(why);
  // Receivers wait only while nothing is queued, so all of them now fail.
  while (!conn.receivers.empty()) {
    const uint64_t receiver = conn.receivers.front();
    conn.receivers.pop_front();
    FinishOp(receiver, conn.closed_reason);
  }
}

void Engine::HandleKeepAlive(const ServerCallRef& key, const Frame& frame) {
  const ConnState* conn = conns_.FindByWire(ClientOf(key), frame.conn_id);
  if (conn == nullptr || !conn->open) {
    Respond(key, NotFoundError("connection " + std::to_string(frame.conn_id) + " is closed at " +
                             UriOf(PeerRef{key.transport, transports_[key.transport]->LocalAddress()})));
    return;
  }
  Respond(key, OkStatus());
}

void Engine::HandleRpc(const ServerCallRef& key, const Frame& frame, Buffer payload,
                       TimeNs now, TimeNs received_ns) {
  if (!served_.contains(frame.code)) {
    Respond(key, UnimplementedError("no handler for method " + std::to_string(frame.code)));
    return;
  }
  IncomingCall call;
  call.ref = key;
  call.method = frame.code;
  call.client = ClientOf(key);
  call.peer = PeerUri(call.client);
  if (frame.deadline_us != 0) call.deadline_ns = now + TimeNs{frame.deadline_us} * kNsPerUs;
  call.request = std::move(payload);
  call.received_ns = received_ns;
  sink_->OnRequest(std::move(call));
}

void Engine::HandleCancel(const ServerCallRef& key, const Frame& frame) {
  // The withdrawn call came from the same client over the same transport;
  // only its id differs.
  ++counts_.cancel_notices_received;
  ServerCallRef withdrawn = key;
  withdrawn.key.client_id = frame.seq;
  sink_->OnCallCancelled(withdrawn);
  Respond(key, OkStatus());
}

void Engine::HandleBarrier(const ServerCallRef& key, const Frame& frame, TimeNs now) {
  BarrierRounds::Release complete;
  if (Status arrived = barriers_.ArriveRemote(key, frame.conn_id, frame.seq, frame.code, now,
                                              &complete);
      !arrived.ok()) {
    Respond(key, arrived);
    return;
  }
  if (complete.local_op != 0) ReleaseBarrier(complete);
}

}  // namespace wharf::engine
