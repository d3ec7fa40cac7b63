// ConnectionTable: opening, finding and forgetting connections, and
// accepting those peers open.
#include "engine/connection_table.h"

#include <algorithm>
#include <string>

namespace wharf::engine {

ConnState* ConnectionTable::FindByWire(const PeerRef& peer, uint64_t wire_id) {
  auto it = by_wire_.find({peer, wire_id});
  if (it == by_wire_.end()) return nullptr;
  return Find(it->second);
}

ConnState& ConnectionTable::Open(const PeerRef& peer, bool ordered, uint32_t stream_method) {
  const uint64_t local = next_local_++;
  ConnState& conn = conns_[local];
  conn.local_id = local;
  wire_id_seed_ += 0x9E3779B97F4A7C15ULL;
  conn.wire_id = wire_id_seed_ ^ (wire_id_seed_ >> 29);
  conn.peer = peer;
  conn.ordered = ordered || stream_method != 0;
  conn.stream_method = stream_method;
  by_wire_[{peer, conn.wire_id}] = local;
  return conn;
}

Result<uint64_t> ConnectionTable::OpenFromPeer(const PeerRef& peer, uint64_t wire_id,
                                               bool ordered, uint32_t stream_method) {
  if (stream_method != 0 && !served_streams_.contains(stream_method)) {
    return UnimplementedError("the endpoint serves no stream method " +
                              std::to_string(stream_method));
  }
  if (stream_method == 0 && !listening_) {
    return UnavailableError("the endpoint is not accepting connections (no Listen)");
  }
  if (FindByWire(peer, wire_id) != nullptr) return uint64_t{0};
  if (from_peers_ >= max_from_peers_) {
    ++refused_;
    return ResourceExhaustedError("endpoint holds " + std::to_string(from_peers_) +
                                  " connections from peers (endpoint.max_connections)");
  }
  ++from_peers_;
  const uint64_t local = next_local_++;
  ConnState& conn = conns_[local];
  conn.local_id = local;
  conn.remote = true;
  conn.wire_id = wire_id;
  conn.peer = peer;
  conn.ordered = ordered || stream_method != 0;
  conn.stream_method = stream_method;
  by_wire_[{peer, wire_id}] = local;
  return local;
}

std::deque<uint64_t> ConnectionTable::Erase(uint64_t local) {
  auto it = conns_.find(local);
  if (it == conns_.end()) return {};
  by_wire_.erase({it->second.peer, it->second.wire_id});
  if (it->second.remote) --from_peers_;
  std::deque<uint64_t> receivers = std::move(it->second.receivers);
  conns_.erase(it);
  return receivers;
}

void ConnectionTable::ServeStreams(uint32_t method, bool served) {
  if (served) {
    served_streams_.insert(method);
  } else {
    served_streams_.erase(method);
  }
}

uint64_t ConnectionTable::Accepted(uint64_t local) {
  const ConnState* conn = Find(local);
  AcceptLine& line = conn != nullptr && conn->stream_method != 0 ? streams_ : plain_;
  if (line.waiters.empty()) {
    line.queue.push_back(local);
    return 0;
  }
  const uint64_t op = line.waiters.front();
  line.waiters.pop_front();
  return op;
}

uint64_t ConnectionTable::TakeAccepted(bool streams) {
  AcceptLine& line = streams ? streams_ : plain_;
  if (line.queue.empty()) return 0;
  const uint64_t local = line.queue.front();
  line.queue.pop_front();
  return local;
}

void ConnectionTable::RemoveAcceptWaiter(uint64_t op) {
  for (AcceptLine* line : {&plain_, &streams_}) {
    line->waiters.erase(std::remove(line->waiters.begin(), line->waiters.end(), op),
                        line->waiters.end());
  }
}

void ConnectionTable::Clear() {
  conns_.clear();
  by_wire_.clear();
  from_peers_ = 0;
  plain_ = {};
  streams_ = {};
}

}  // namespace wharf::engine
