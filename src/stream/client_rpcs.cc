// ClientRpcs: our RPCs as a client, from SendRequest to their end; their
// placement on connections, re-sending, ack floors and the client's timers.
#include "stream/client_rpcs.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "transport/tcp/tcp_socket.h"

namespace wharf::stream {

ClientRpcs::ClientRpcs(const TcpConfig& config, uint64_t first_id, WriteBatcher* writes,
                       std::deque<transport::MessageEvent>* events, TcpStats* stats,
                       bool* timers_dirty)
    : config_(config),
      writes_(*writes),
      events_(*events),
      stats_(*stats),
      timers_dirty_(*timers_dirty),
      next_id_(first_id) {}

uint64_t ClientRpcs::Start(Peer& peer, Buffer request, uint64_t cookie, TimeNs now) {
  const uint64_t id = next_id_++;
  auto rpc = std::make_unique<ClientRpc>();
  rpc->id = id;
  rpc->cookie = cookie;
  rpc->request = std::move(request);
  rpc->start_ns = now;
  rpc->peer = &peer;
  peer.outstanding.insert(id);
  peer.waiting.push_back(id);
  rpcs_.emplace(id, std::move(rpc));
  ++stats_.requests_sent;
  return id;
}

void ClientRpcs::AssignWaiting(Peer& peer, TimeNs now) {
  while (!peer.waiting.empty()) {
    Connection* conn = peer.LeastLoaded();
    if (conn == nullptr) return;
    const uint64_t id = peer.waiting.front();
    peer.waiting.pop_front();
    ClientRpc* rpc = Find(id);
    if (rpc == nullptr || rpc->conn != nullptr) continue;  // finished meanwhile
    if (rpc->server_instance != 0 && rpc->server_instance != conn->remote_instance) {
      Fail(*rpc,
           UnavailableError("tcp: server " + peer.identity.ToString() + " restarted while RPC " +
                            std::to_string(id) +
                            " was in flight; not re-sent, since the old process may have run it"),
           now);
      continue;
    }
    rpc->conn = conn;
    rpc->handle = conn->queue().Add(wire::StreamFrameType::kRequest, id, rpc->request);
    if (rpc->queued_before) ++stats_.requests_resent;
    rpc->queued_before = true;
    writes_.MarkDirty(*conn);
  }
}

void ClientRpcs::Finish(ClientRpc& rpc, TimeNs now) {
  Peer& peer = *rpc.peer;
  if (rpc.conn != nullptr && rpc.handle != 0) {
    Connection& conn = *rpc.conn;
    SendQueue::Removed removed = conn.queue().Remove(rpc.handle);
    if (removed.started && !removed.will_complete && !conn.closed()) {
      conn.queue().AddControl({.type = wire::StreamFrameType::kAbort, .rpc_id = rpc.id});
      ++stats_.aborts_sent;
    }
    writes_.MarkDirty(conn);
  }
  // A response still arriving for it is no longer worth its memory.
  for (Connection* conn : peer.connections) {
    conn->parser().Discard(wire::StreamFrameType::kResponse, rpc.id);
  }
  peer.outstanding.erase(rpc.id);
  // Backoff is for RPCs that wait: the next one to this peer dials at once.
  if (peer.outstanding.empty()) peer.OnHandshake();
  ScheduleAck(peer, now);
  rpcs_.erase(rpc.id);  // destroys rpc
}

void ClientRpcs::Fail(ClientRpc& rpc, Status status, TimeNs now) {
  transport::MessageEvent event;
  event.kind = transport::MessageEvent::Kind::kFailed;
  event.client_id = rpc.id;
  event.cookie = rpc.cookie;
  event.status = std::move(status);
  events_.push_back(std::move(event));
  Finish(rpc, now);
}

void ClientRpcs::FailWaiting(Peer& peer, int err, const Status& why, TimeNs now) {
  if (!transport::tcp::PeerGone(err)) return;
  if (err == ECONNREFUSED && peer.instance == 0) return;
  std::vector<uint64_t> gone;
  for (uint64_t id : peer.outstanding) {
    const ClientRpc* rpc = Find(id);
    if (rpc != nullptr && rpc->conn == nullptr) gone.push_back(id);
  }
  for (uint64_t id : gone) {
    ClientRpc* rpc = Find(id);
    if (rpc == nullptr) continue;
    ++stats_.peer_gone_failures;
    Fail(*rpc,
         UnavailableError("tcp: " + peer.identity.ToString() + " is gone (" +
                          std::string(why.message()) + "; RPC " + std::to_string(id) + ")"),
         now);
  }
}

void ClientRpcs::ScheduleAck(Peer& peer, TimeNs now) {
  if (Floor(peer) <= peer.floor_sent || peer.ack_due_ns != kNever) return;
  peer.ack_due_ns = now + config_.ack_delay_ns;
  timers_dirty_ = true;
}

void ClientRpcs::OnFloorCarried(Peer& peer, uint64_t floor) {
  peer.floor_sent = std::max(peer.floor_sent, floor);
  if (peer.floor_sent >= Floor(peer)) peer.ack_due_ns = kNever;
}

Result<FrameParser::Decision> ClientRpcs::OnResponseStart(Peer& peer,
                                                          const wire::StreamFrameHeader& first,
                                                          TimeNs now) {
  ClientRpc* rpc = Find(first.rpc_id);
  if (rpc != nullptr && rpc->peer != &peer) rpc = nullptr;  // not this server's to answer
  if (first.message_length > config_.max_message_bytes) {
    Status too_big = ResourceExhaustedError(
        "tcp: response of " + std::to_string(first.message_length) + " bytes from " +
        peer.identity.ToString() + " exceeds the message limit (max_message_bytes " +
        std::to_string(config_.max_message_bytes) + ")");
    if (rpc != nullptr) Fail(*rpc, too_big, now);
    // Not worth reading: the connection goes; the peer's other RPCs are
    // re-sent on a new one.
    return too_big;
  }
  if (rpc == nullptr) {
    ++stats_.late_responses;  // finished, cancelled, or a copy
    return FrameParser::Decision::kDiscard;
  }
  if ((first.flags & wire::kStreamFlagLost) != 0) {
    ++stats_.responses_lost;
    Fail(*rpc,
         DataLossError("tcp: server " + peer.identity.ToString() + " ran RPC " +
                       std::to_string(first.rpc_id) +
                       " but no longer holds its response (it was sent once, then dropped "
                       "under tcp.max_stored_response_bytes)"),
         now);
    return FrameParser::Decision::kDiscard;
  }
  return FrameParser::Decision::kAccept;
}

void ClientRpcs::OnResponse(Peer& peer, uint64_t id, Buffer message, TimeNs now) {
  ClientRpc* rpc = Find(id);
  if (rpc == nullptr || rpc->peer != &peer) {
    ++stats_.late_responses;
    return;
  }
  transport::MessageEvent event;
  event.kind = transport::MessageEvent::Kind::kResponse;
  event.client_id = id;
  event.cookie = rpc->cookie;
  event.message = std::move(message);
  events_.push_back(std::move(event));
  ++stats_.responses_delivered;
  Finish(*rpc, now);
}

void ClientRpcs::OnResponseRefused(Peer& peer, uint64_t id, Status refused, TimeNs now) {
  ClientRpc* rpc = Find(id);
  if (rpc != nullptr && rpc->peer == &peer) Fail(*rpc, std::move(refused), now);
}

void ClientRpcs::OnRequestWritten(const Connection& conn, const SendQueue::Finished& f) {
  ClientRpc* rpc = Find(f.rpc_id);
  if (rpc != nullptr && rpc->conn == &conn && rpc->handle == f.handle) {
    rpc->handle = 0;
    rpc->server_instance = conn.remote_instance;
  }
}

void ClientRpcs::OnConnectionClosed(const Connection& conn, Peer& peer) {
  std::vector<uint64_t> back;
  for (uint64_t id : peer.outstanding) {
    ClientRpc* rpc = Find(id);
    if (rpc == nullptr || rpc->conn != &conn) continue;
    if (rpc->handle != 0 && conn.queue().Started(rpc->handle)) {
      rpc->server_instance = conn.remote_instance;
    }
    rpc->handle = 0;
    rpc->conn = nullptr;
    back.push_back(id);
  }
  peer.waiting.insert(peer.waiting.begin(), back.begin(), back.end());
}

int ClientRpcs::ExpireSilent(Peer& peer, TimeNs now, TimeNs* next) {
  if (peer.outstanding.empty()) return 0;
  // An RPC fails once neither it nor its peer has shown any sign of life
  // for the timeout. Ids ascend with start time, so the first survivor
  // bounds the rest.
  const DurationNs timeout = config_.peer_timeout_ns;
  std::vector<uint64_t> expired;
  for (uint64_t id : peer.outstanding) {
    const ClientRpc* rpc = Find(id);
    const TimeNs since = std::max(peer.last_heard_ns, rpc != nullptr ? rpc->start_ns : now);
    if (since + timeout > now) {
      *next = std::min(*next, since + timeout);
      break;
    }
    expired.push_back(id);
  }
  int failed = 0;
  for (uint64_t id : expired) {
    ClientRpc* rpc = Find(id);
    if (rpc == nullptr) continue;
    ++stats_.client_timeouts;
    Fail(*rpc,
         UnavailableError("tcp: no answer from " + peer.identity.ToString() + " for " +
                          std::to_string(timeout / kNsPerMs) + " ms (RPC " + std::to_string(id) +
                          "); peer presumed dead (tcp.peer_timeout)"),
         now);
    ++failed;
  }
  return failed;
}

int ClientRpcs::SendPings(Peer& peer, TimeNs now, TimeNs* next) {
  if (peer.outstanding.empty()) return 0;
  const ClientRpc* oldest = Find(*peer.outstanding.begin());
  const TimeNs quiet_since =
      std::max({peer.last_heard_ns, peer.last_ping_ns, oldest != nullptr ? oldest->start_ns : now});
  const TimeNs due = quiet_since + config_.ping_interval_ns;
  if (due > now) {
    *next = std::min(*next, due);
    return 0;
  }
  // Every live connection gets one: a silently dead path shows up as the
  // peer's silence.
  bool sent = false;
  for (Connection* c : peer.connections) {
    if (c->state() != Connection::State::kOpen && c->state() != Connection::State::kHandshake) {
      continue;
    }
    c->queue().AddControl({.type = wire::StreamFrameType::kPing, .rpc_id = next_ping_nonce_++});
    writes_.MarkDirty(*c);
    ++stats_.pings_sent;
    sent = true;
  }
  if (sent) peer.last_ping_ns = now;
  *next = std::min(*next, now + config_.ping_interval_ns);
  return sent ? 1 : 0;
}

int ClientRpcs::SendDelayedAck(Peer& peer, TimeNs now, TimeNs* next) {
  if (peer.ack_due_ns == kNever) return 0;
  if (peer.ack_due_ns > now) {
    *next = std::min(*next, peer.ack_due_ns);
    return 0;
  }
  // No request carried the risen floor in time.
  peer.ack_due_ns = kNever;
  const uint64_t floor = Floor(peer);
  Connection* conn = peer.LeastLoaded();
  if (floor <= peer.floor_sent || conn == nullptr) return 0;
  conn->queue().AddControl({.type = wire::StreamFrameType::kAck, .ack_floor = floor});
  writes_.MarkDirty(*conn);
  peer.floor_sent = floor;
  ++stats_.acks_sent;
  return 1;
}

}  // namespace wharf::stream
