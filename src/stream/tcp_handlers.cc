// TcpMessageTransport's frame handlers (ConnectionHandler): the handshake
// and peer identity, at-most-once classification of requests, responses to
// our RPCs, ack floors, pings.
#include <string>

#include "stream/tcp_transport.h"

namespace wharf::stream {
namespace {

std::string U(uint64_t v) { return std::to_string(v); }

}  // namespace

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
  AssignWaiting(*peer);
  // Responses that never made it out whole (their connection died, or there
  // was none when they were ready) go out now; the client drops copies of
  // ones it already has.
  if (ClientRecord* record = table_.Find(peer->identity)) {
    for (auto& [id, served] : record->rpcs) {
      if (served.state == ServedRpc::State::kAnswered && !served.lost &&
          served.queued_on == nullptr && served.written_seq == 0) {
        QueueResponse(served, id, conn);
      }
    }
  }
  ScheduleAck(*peer);
  MarkDirty(conn);
  timers_dirty_ = true;
  return OkStatus();
}

void TcpMessageTransport::OnPeerRestart(Peer& peer, uint64_t new_instance, Connection& via) {
  ++stats_.peer_restarts;
  WHARF_LOG_RATE_LIMITED(log_limiter_, kInfo, "tcp: {} restarted (instance {:x} -> {:x})",
                         peer.identity.ToString(), peer.instance, new_instance);
  // Its RPCs as a client belong to the old process: forget them (their
  // answers would go nowhere; SendResponse now says NotFound).
  table_.Erase(peer.identity, [&](uint64_t id, ServedRpc& served) { DetachResponse(id, served); });
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

ClientRecord& TcpMessageTransport::RecordFor(Peer& peer) {
  ClientRecord& record = table_.Get(peer.identity);
  record.instance = peer.instance;
  return record;
}

void TcpMessageTransport::AdvanceClientFloor(Peer& peer, uint64_t floor) {
  ClientRecord& record = RecordFor(peer);
  table_.AdvanceFloor(record, floor,
                      [&](uint64_t id, ServedRpc& served) { DetachResponse(id, served); });
}

Status TcpMessageTransport::OnFrame(Connection& conn, const wire::StreamFrameHeader& header) {
  Peer& peer = *conn.peer;
  switch (header.type) {
    case wire::StreamFrameType::kRequest:
      if (header.ack_floor != 0) AdvanceClientFloor(peer, header.ack_floor);
      break;
    case wire::StreamFrameType::kAck:
      AdvanceClientFloor(peer, header.ack_floor);
      break;
    case wire::StreamFrameType::kPing:
      conn.queue().AddControl({.type = wire::StreamFrameType::kPong, .rpc_id = header.rpc_id});
      ++stats_.pongs_sent;
      MarkDirty(conn);
      break;
    default:
      break;  // PONG: hearing it is the point. RESPONSE, ABORT: the parser's.
  }
  return OkStatus();
}

Result<FrameParser::Decision> TcpMessageTransport::OnMessageStart(
    Connection& conn, const wire::StreamFrameHeader& first) {
  Peer& peer = *conn.peer;
  if (first.type == wire::StreamFrameType::kResponse) {
    ClientRpc* rpc = FindClientRpc(first.rpc_id);
    if (rpc != nullptr && rpc->peer != &peer) rpc = nullptr;  // not this server's to answer
    if (first.message_length > config_.max_message_bytes) {
      Status too_big = ResourceExhaustedError(
          "tcp: response of " + U(first.message_length) + " bytes from " +
          peer.identity.ToString() + " exceeds the message limit (max_message_bytes " +
          U(config_.max_message_bytes) + ")");
      if (rpc != nullptr) FailClientRpc(*rpc, too_big);
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
      FailClientRpc(*rpc, DataLossError("tcp: server " + peer.identity.ToString() +
                                        " ran RPC " + U(first.rpc_id) +
                                        " but no longer holds its response (it was sent once, "
                                        "then dropped under tcp.max_stored_response_bytes)"));
      return FrameParser::Decision::kDiscard;
    }
    return FrameParser::Decision::kAccept;
  }

  ClientRecord& record = RecordFor(peer);
  switch (ServerTable::Classify(record, first.rpc_id)) {
    case ServerTable::Seen::kBelowFloor:
    case ServerTable::Seen::kInProgress:
      ++stats_.duplicate_requests;
      return FrameParser::Decision::kDiscard;
    case ServerTable::Seen::kAnswered: {
      ++stats_.duplicate_requests;
      ServedRpc& served = record.rpcs.at(first.rpc_id);
      if (served.queued_on == nullptr) {
        ++stats_.responses_resent;
        QueueResponse(served, first.rpc_id, conn);
      }
      return FrameParser::Decision::kDiscard;
    }
    case ServerTable::Seen::kNew:
      break;
  }
  if (first.message_length > config_.max_message_bytes) {
    // Refused unread, once: the application answers it with an error like
    // any request, so the usual at-most-once and ack rules apply.
    ++stats_.oversize_refused;
    table_.Start(record, first.rpc_id);
    DeliverRequest(peer, first.rpc_id, Buffer(),
                   ResourceExhaustedError("tcp: request of " + U(first.message_length) +
                                          " bytes is over the server's message limit (max_message_bytes " +
                                          U(config_.max_message_bytes) + ")"));
    return FrameParser::Decision::kDiscard;
  }
  return FrameParser::Decision::kAccept;
}

void TcpMessageTransport::OnMessage(Connection& conn, wire::StreamFrameType type, uint64_t rpc_id,
                                    Buffer message) {
  Peer& peer = *conn.peer;
  if (type == wire::StreamFrameType::kResponse) {
    ClientRpc* rpc = FindClientRpc(rpc_id);
    if (rpc == nullptr || rpc->peer != &peer) {
      ++stats_.late_responses;
      return;
    }
    transport::MessageEvent event;
    event.kind = transport::MessageEvent::Kind::kResponse;
    event.client_id = rpc_id;
    event.cookie = rpc->cookie;
    event.message = std::move(message);
    PushEvent(std::move(event));
    ++stats_.responses_delivered;
    FinishClientRpc(*rpc);
    return;
  }
  ClientRecord& record = RecordFor(peer);
  if (ServerTable::Classify(record, rpc_id) != ServerTable::Seen::kNew) {
    ++stats_.duplicate_requests;  // a copy finished first on another connection
    return;
  }
  table_.Start(record, rpc_id);
  DeliverRequest(peer, rpc_id, std::move(message), OkStatus());
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
    ClientRpc* rpc = FindClientRpc(rpc_id);
    if (rpc != nullptr && rpc->peer == &peer) FailClientRpc(*rpc, std::move(refused));
    return;
  }
  ClientRecord& record = RecordFor(peer);
  if (ServerTable::Classify(record, rpc_id) != ServerTable::Seen::kNew) return;
  table_.Start(record, rpc_id);
  DeliverRequest(peer, rpc_id, Buffer(), std::move(refused));
}

void TcpMessageTransport::DeliverRequest(Peer& peer, uint64_t id, Buffer message, Status status) {
  transport::MessageEvent event;
  event.kind = transport::MessageEvent::Kind::kRequest;
  event.client_id = id;
  event.server_key = {.client = peer.identity, .client_port = 0, .client_id = id};
  event.message = std::move(message);
  if (status.ok()) ++stats_.requests_delivered;
  event.status = std::move(status);
  PushEvent(std::move(event));
}

}  // namespace wharf::stream
