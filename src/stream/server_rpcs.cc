// ServerRpcs: at-most-once classification and delivery of requests, stored
// responses and their placement on connections.
#include "stream/server_rpcs.h"

#include <string>
#include <utility>

namespace wharf::stream {
namespace {

std::string U(uint64_t v) { return std::to_string(v); }

}  // namespace

ServerRpcs::ServerRpcs(const TcpConfig& config, WriteBatcher* writes,
                       std::deque<transport::MessageEvent>* events, TcpStats* stats)
    : config_(config),
      writes_(*writes),
      events_(*events),
      stats_(*stats),
      table_(config.max_stored_response_bytes) {}

Status ServerRpcs::Respond(const transport::ServerRpcKey& key, Buffer response,
                           const Peer* client) {
  auto gone = [&] {
    return NotFoundError("tcp: RPC " + U(key.client_id) + " from " + key.client.ToString() +
                         " is gone (the client finished, cancelled, restarted or timed out)");
  };
  ClientRecord* record = key.client_port == 0 ? table_.Find(key.client) : nullptr;
  if (record == nullptr) return gone();
  auto it = record->rpcs.find(key.client_id);
  if (it == record->rpcs.end()) return gone();
  if (it->second.state != ServedRpc::State::kInProgress) {
    return FailedPreconditionError("tcp: RPC " + U(key.client_id) + " from " +
                                   key.client.ToString() + " was already answered");
  }
  if (response.size() > config_.max_message_bytes) {
    return InvalidArgumentError("tcp: response of " + U(response.size()) +
                                " bytes exceeds the message limit (max_message_bytes " +
                                U(config_.max_message_bytes) + ")");
  }
  ServedRpc& served = table_.Answer(*record, key.client_id, std::move(response));
  ++stats_.responses_sent;
  // Any open connection to the client will do; with none, the response
  // waits: the client reconnects and re-sends the request, or a new
  // connection from it gets every response not yet written.
  if (client != nullptr) {
    if (Connection* conn = client->LeastLoaded()) Queue(served, key.client_id, *conn);
  }
  EvictStoredResponses();
  return OkStatus();
}

FrameParser::Decision ServerRpcs::OnRequestStart(Peer& peer, Connection& conn,
                                                 const wire::StreamFrameHeader& first) {
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
        Queue(served, first.rpc_id, conn);
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
    Deliver(peer, first.rpc_id, Buffer(),
            ResourceExhaustedError("tcp: request of " + U(first.message_length) +
                                   " bytes is over the server's message limit "
                                   "(max_message_bytes " +
                                   U(config_.max_message_bytes) + ")"));
    return FrameParser::Decision::kDiscard;
  }
  return FrameParser::Decision::kAccept;
}

void ServerRpcs::OnRequest(Peer& peer, uint64_t id, Buffer message) {
  ClientRecord& record = RecordFor(peer);
  if (ServerTable::Classify(record, id) != ServerTable::Seen::kNew) {
    ++stats_.duplicate_requests;  // a copy finished first on another connection
    return;
  }
  table_.Start(record, id);
  Deliver(peer, id, std::move(message), OkStatus());
}

void ServerRpcs::OnRequestRefused(Peer& peer, uint64_t id, Status refused) {
  ClientRecord& record = RecordFor(peer);
  if (ServerTable::Classify(record, id) != ServerTable::Seen::kNew) return;
  table_.Start(record, id);
  Deliver(peer, id, Buffer(), std::move(refused));
}

void ServerRpcs::AdvanceFloor(Peer& peer, uint64_t floor) {
  ClientRecord& record = RecordFor(peer);
  table_.AdvanceFloor(record, floor, [&](uint64_t id, ServedRpc& served) { Detach(id, served); });
}

void ServerRpcs::QueueUnwritten(const Peer& peer, Connection& conn) {
  ClientRecord* record = table_.Find(peer.identity);
  if (record == nullptr) return;
  for (auto& [id, served] : record->rpcs) {
    if (served.state == ServedRpc::State::kAnswered && !served.lost &&
        served.queued_on == nullptr && served.written_seq == 0) {
      Queue(served, id, conn);
    }
  }
}

void ServerRpcs::OnResponseWritten(const Connection& conn, const Peer& peer,
                                   const SendQueue::Finished& f) {
  ClientRecord* record = table_.Find(peer.identity);
  if (record == nullptr) return;
  auto it = record->rpcs.find(f.rpc_id);
  if (it == record->rpcs.end() || it->second.queued_on != &conn || it->second.handle != f.handle) {
    return;
  }
  it->second.queued_on = nullptr;
  it->second.handle = 0;
  table_.MarkWritten(peer.identity, f.rpc_id);
}

void ServerRpcs::OnConnectionClosed(const Connection& conn, const Peer& peer) {
  ClientRecord* record = table_.Find(peer.identity);
  if (record == nullptr) return;
  conn.queue().ForEachMessage([&](SendQueue::Handle, wire::StreamFrameType type, uint64_t id) {
    if (type != wire::StreamFrameType::kResponse) return;
    auto it = record->rpcs.find(id);
    if (it != record->rpcs.end() && it->second.queued_on == &conn) {
      it->second.queued_on = nullptr;
      it->second.handle = 0;
    }
  });
}

bool ServerRpcs::Forget(const transport::NetAddress& client) {
  return table_.Erase(client, [&](uint64_t id, ServedRpc& served) { Detach(id, served); });
}

void ServerRpcs::EvictStoredResponses() {
  stats_.responses_evicted +=
      table_.EvictOverLimit([&](uint64_t id, ServedRpc& served) { Detach(id, served); });
}

ClientRecord& ServerRpcs::RecordFor(const Peer& peer) {
  ClientRecord& record = table_.Get(peer.identity);
  record.instance = peer.instance;
  return record;
}

void ServerRpcs::Deliver(const Peer& peer, uint64_t id, Buffer message, Status status) {
  transport::MessageEvent event;
  event.kind = transport::MessageEvent::Kind::kRequest;
  event.client_id = id;
  event.server_key = {.client = peer.identity, .client_port = 0, .client_id = id};
  event.message = std::move(message);
  if (status.ok()) ++stats_.requests_delivered;
  event.status = std::move(status);
  events_.push_back(std::move(event));
}

void ServerRpcs::Queue(ServedRpc& served, uint64_t id, Connection& conn) {
  if (served.queued_on != nullptr) return;
  if (served.lost) {
    conn.queue().AddControl(
        {.type = wire::StreamFrameType::kResponse, .flags = wire::kStreamFlagLost, .rpc_id = id});
  } else {
    table_.Unmark(served);
    served.queued_on = &conn;
    served.handle = conn.queue().Add(wire::StreamFrameType::kResponse, id, served.response);
  }
  writes_.MarkDirty(conn);
}

void ServerRpcs::Detach(uint64_t id, ServedRpc& served) {
  if (served.queued_on == nullptr) return;
  Connection& conn = *served.queued_on;
  SendQueue::Removed removed = conn.queue().Remove(served.handle);
  if (removed.started && !removed.will_complete && !conn.closed()) {
    conn.queue().AddControl({.type = wire::StreamFrameType::kAbort,
                             .flags = wire::kStreamFlagAbortResponse,
                             .rpc_id = id});
    ++stats_.aborts_sent;
  }
  writes_.MarkDirty(conn);
  served.queued_on = nullptr;
  served.handle = 0;
}

}  // namespace wharf::stream
