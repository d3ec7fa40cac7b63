// Engine: requests arriving from peers (connect, messages, disconnect, RPCs,
// barrier arrivals), each answered with a kReply frame. Everything here is
// input from the network: a malformed frame gets an error reply, never a crash.
#include <exception>
#include <optional>
#include <string>

#include "engine/engine.h"

namespace wharf::engine {

void Engine::HandleRequest(uint8_t transport, transport::MessageEvent& event) {
  const ServerCall key{transport, event.server_key};
  if (!event.status.ok()) {
    Reply(key, event.status);  // refused by the transport before it was read
    return;
  }
  Buffer payload = std::move(event.message);
  Result<Frame> frame = UnwrapFrame(payload);
  if (!frame.ok()) {
    Reply(key, frame.status());
    return;
  }
  switch (frame->kind) {
    case FrameKind::kConnect: HandleConnect(key, *frame); return;
    case FrameKind::kMessage: HandleMessage(key, *frame, std::move(payload)); return;
    case FrameKind::kDisconnect: HandleDisconnect(key, *frame); return;
    case FrameKind::kRpc: HandleRpc(key, *frame, std::move(payload)); return;
    case FrameKind::kBarrier: HandleBarrier(key, *frame); return;
    case FrameKind::kKeepAlive: HandleKeepAlive(key, *frame); return;
    case FrameKind::kReply: break;
  }
  Reply(key, InvalidArgumentError("engine: a reply frame sent as a request"));
}

void Engine::Reply(const ServerCall& call, Status status, Buffer payload) {
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

void Engine::HandleConnect(const ServerCall& key, const Frame& frame) {
  if (!listening_) {
    Reply(key, UnavailableError("the endpoint is not accepting connections (no Listen)"));
    return;
  }
  const PeerRef client = ClientOf(key);
  if (FindByWire(client, frame.conn_id) != nullptr) {
    Reply(key, OkStatus());  // a repeated connect of a live connection
    return;
  }
  uint64_t local = next_conn_++;
  ConnState& conn = conns_[local];
  conn.local_id = local;
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
  Reply(key, OkStatus());
}

void Engine::HandleMessage(const ServerCall& key, const Frame& frame, Buffer payload) {
  ConnState* conn = FindByWire(ClientOf(key), frame.conn_id);
  if (conn == nullptr || !conn->open) {
    Reply(key, NotFoundError("no open connection " + std::to_string(frame.conn_id) + " from " +
                             UriOf(ClientOf(key))));
    return;
  }
  if (conn->ready_bytes + payload.size() > limits_.max_queued_bytes_per_connection) {
    Reply(key, ResourceExhaustedError(
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
  Reply(key, OkStatus());
}

void Engine::Deliver(ConnState& conn, Buffer message) {
  if (!conn.receivers.empty()) {
    StatePtr receiver = conn.receivers.front();
    conn.receivers.pop_front();
    FinishOp(receiver->op_id, OkStatus(), std::move(message));
    return;
  }
  conn.ready_bytes += message.size();
  conn.ready.push_back(std::move(message));
}

void Engine::HandleDisconnect(const ServerCall& key, const Frame& frame) {
  if (ConnState* conn = FindByWire(ClientOf(key), frame.conn_id)) {
    if (conn->open) {
      CloseConnection(*conn, UnavailableError("peer " + UriOf(ClientOf(key)) + " disconnected"));
    }
  }
  Reply(key, OkStatus());
}

void Engine::CloseConnection(ConnState& conn, Status why) {
  conn.open = false;
  conn.closed_reason = std::move(why);
  // Receivers wait only while nothing is queued, so all of them now fail.
  while (!conn.receivers.empty()) {
    StatePtr receiver = conn.receivers.front();
    conn.receivers.pop_front();
    FinishOp(receiver->op_id, conn.closed_reason);
  }
}

void Engine::HandleKeepAlive(const ServerCall& key, const Frame& frame) {
  ConnState* conn = FindByWire(ClientOf(key), frame.conn_id);
  if (conn == nullptr || !conn->open) {
    Reply(key, NotFoundError("connection " + std::to_string(frame.conn_id) + " is closed at " +
                             UriOf(PeerRef{key.transport, transports_[key.transport]->LocalAddress()})));
    return;
  }
  Reply(key, OkStatus());
}

void Engine::HandleRpc(const ServerCall& key, const Frame& frame, Buffer payload) {
  auto it = handlers_.find(frame.code);
  if (it == handlers_.end()) {
    Reply(key, UnimplementedError("no handler for method " + std::to_string(frame.code)));
    return;
  }
  RpcContext context;
  context.peer = PeerUri(ClientOf(key));
  context.method = frame.code;
  // No placeholder Status: one with a message would allocate on every call.
  std::optional<Result<Buffer>> result;
  try {
    result.emplace(it->second(context, std::move(payload)));
  } catch (const std::exception& e) {
    result.emplace(InternalError(std::string("handler threw: ") + e.what()));
  } catch (...) {
    result.emplace(InternalError("handler threw a non-standard exception"));
  }
  if (result->ok()) {
    Reply(key, OkStatus(), std::move(*result).value());
  } else {
    Reply(key, result->status());
  }
}

void Engine::HandleBarrier(const ServerCall& key, const Frame& frame) {
  if (frame.code == 0) {
    Reply(key, InvalidArgumentError("barrier with 0 members"));
    return;
  }
  BarrierRound& round = barriers_[{frame.conn_id, frame.seq}];
  round.members = frame.code;
  round.waiting.push_back(key);
  MaybeReleaseBarrier(frame.conn_id, frame.seq);
}

void Engine::MaybeReleaseBarrier(uint64_t group, uint64_t round_no) {
  auto it = barriers_.find({group, round_no});
  if (it == barriers_.end()) return;
  BarrierRound& round = it->second;
  if (round.local_op == 0 || round.waiting.size() + 1 < round.members) return;
  for (const auto& key : round.waiting) Reply(key, OkStatus());
  uint64_t local = round.local_op;
  barriers_.erase(it);
  FinishOp(local, OkStatus());
}

}  // namespace wharf::engine
