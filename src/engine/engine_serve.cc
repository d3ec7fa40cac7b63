// Engine: requests arriving from peers (connect, messages, disconnect, RPCs,
// barrier arrivals), each answered with a kReply frame. Everything here is
// input from the network: a malformed frame gets an error reply, never a crash.
#include <algorithm>
#include <string>

#include "engine/engine.h"

namespace wharf::engine {

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
    case FrameKind::kRpc: HandleRpc(key, *frame, std::move(payload), poll_now_ns_); return;
    case FrameKind::kBarrier: HandleBarrier(key, *frame, poll_now_ns_); return;
    case FrameKind::kKeepAlive: HandleKeepAlive(key, *frame); return;
    case FrameKind::kCancel: HandleCancel(key, *frame); return;
    case FrameKind::kReply: break;
  }
  Respond(key, InvalidArgumentError("engine: a reply frame sent as a request"));
}

void Engine::Respond(const ServerCallRef& call, Status status, Buffer payload) {
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
  // NotFound here means the client gave up meanwhile: nothing to do.
  transports_[call.transport]->SendResponse(call.key, std::move(message)).IgnoreError();
}

ConnState* Engine::FindByWire(const PeerRef& peer, uint64_t wire_id) {
  auto it = by_wire_.find({peer, wire_id});
  if (it == by_wire_.end()) return nullptr;
  auto c = conns_.find(it->second);
  return c == conns_.end() ? nullptr : &c->second;
}

void Engine::HandleConnect(const ServerCallRef& key, const Frame& frame) {
  if (!listening_) {
    Respond(key, UnavailableError("the endpoint is not accepting connections (no Listen)"));
    return;
  }
  const PeerRef client = ClientOf(key);
  if (FindByWire(client, frame.conn_id) != nullptr) {
    Respond(key, OkStatus());  // a repeated connect of a live connection
    return;
  }
  if (remote_conns_ >= limits_.max_connections) {
    ++counts_.connections_refused;
    Respond(key, ResourceExhaustedError("endpoint holds " + std::to_string(remote_conns_) +
                                        " connections from peers (endpoint.max_connections)"));
    return;
  }
  ++remote_conns_;
  uint64_t local = next_conn_++;
  ConnState& conn = conns_[local];
  conn.local_id = local;
  conn.remote = true;
  conn.wire_id = frame.conn_id;
  conn.peer = client;
  conn.ordered = (frame.flags & kFrameOrdered) != 0;
  by_wire_[{client, frame.conn_id}] = local;
  if (!accept_waiters_.empty()) {
    uint64_t op = accept_waiters_.front();
    accept_waiters_.pop_front();
    FinishOp(op, OkStatus(), Buffer(), local);
  } else {
    accept_queue_.push_back(local);
  }
  Respond(key, OkStatus());
}

void Engine::HandleMessage(const ServerCallRef& key, const Frame& frame, Buffer payload) {
  ConnState* conn = FindByWire(ClientOf(key), frame.conn_id);
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
  if (ConnState* conn = FindByWire(ClientOf(key), frame.conn_id)) {
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
  ConnState* conn = FindByWire(ClientOf(key), frame.conn_id);
  if (conn == nullptr || !conn->open) {
    Respond(key, NotFoundError("connection " + std::to_string(frame.conn_id) + " is closed at " +
                             UriOf(PeerRef{key.transport, transports_[key.transport]->LocalAddress()})));
    return;
  }
  Respond(key, OkStatus());
}

void Engine::HandleRpc(const ServerCallRef& key, const Frame& frame, Buffer payload,
                       TimeNs now) {
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
  if (frame.code == 0) {
    Respond(key, InvalidArgumentError("barrier with 0 members"));
    return;
  }
  auto it = barriers_.find({frame.conn_id, frame.seq});
  if (it == barriers_.end()) {
    if (barriers_.size() >= limits_.max_barrier_rounds) {
      ++counts_.barrier_rounds_refused;
      Respond(key, ResourceExhaustedError("coordinator holds " + std::to_string(barriers_.size()) +
                                          " open barrier rounds (endpoint.max_barrier_rounds)"));
      return;
    }
    it = barriers_.emplace(std::make_pair(frame.conn_id, frame.seq), BarrierRound{}).first;
    it->second.members = frame.code;
    it->second.expires_ns = now + limits_.barrier_round_timeout_ns;
    next_barrier_expiry_ns_ = std::min(next_barrier_expiry_ns_, it->second.expires_ns);
  }
  BarrierRound& round = it->second;
  // A round holds at most its members' arrivals; more are peers' mistakes
  // (or repeats), not memory we owe them.
  if (round.waiting.size() >= round.members) {
    Respond(key, InvalidArgumentError("barrier round already has all " +
                                      std::to_string(round.members) + " members"));
    return;
  }
  round.waiting.push_back(key);
  MaybeReleaseBarrier(frame.conn_id, frame.seq);
}

void Engine::ExpireBarrierRounds(TimeNs now) {
  if (now < next_barrier_expiry_ns_) return;
  next_barrier_expiry_ns_ = kNever;
  for (auto it = barriers_.begin(); it != barriers_.end();) {
    BarrierRound& round = it->second;
    if (round.local_op != 0 || round.expires_ns > now) {
      if (round.local_op == 0) {
        next_barrier_expiry_ns_ = std::min(next_barrier_expiry_ns_, round.expires_ns);
      }
      ++it;
      continue;
    }
    ++counts_.barrier_rounds_expired;
    for (const auto& key : round.waiting) {
      Respond(key, DeadlineExceededError("the coordinator's member did not arrive at this round"));
    }
    it = barriers_.erase(it);
  }
}

void Engine::MaybeReleaseBarrier(uint64_t group, uint64_t round_no) {
  auto it = barriers_.find({group, round_no});
  if (it == barriers_.end()) return;
  BarrierRound& round = it->second;
  if (round.local_op == 0 || round.waiting.size() + 1 < round.members) return;
  for (const auto& key : round.waiting) Respond(key, OkStatus());
  uint64_t local = round.local_op;
  barriers_.erase(it);
  FinishOp(local, OkStatus());
}

}  // namespace wharf::engine
