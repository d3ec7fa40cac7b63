// stream/server_table.h: ServerTable, the server side's at-most-once memory:
// per client (identity address + instance id), the RPC ids delivered and not
// yet answered, and the responses sent but not yet acknowledged.
//
// A re-sent request (the client reconnected) is classified against it: an id
// below the client's ack floor or in progress is dropped; one already
// answered gets the stored response again. The client's ack floor (carried by
// its requests and ACK frames) releases everything below it.
//
// Bounds: a client's state holds at most the RPCs it has not acknowledged
// (its own outstanding RPCs plus about tcp.ack_delay of finished ones); it is
// dropped whole when the client restarts (a HELLO with a new instance id) or
// has had no connection for 2 x tcp.peer_timeout (it has given up its RPCs
// by then; the transport counts it as tcp.clients_expired). Clients are
// capped with the transport's peers (tcp.max_peers), and a connection with
// nothing pending closes after tcp.idle_timeout, so a silent client's record
// goes within idle_timeout + 2 x peer_timeout. Stored response bytes, over all clients, are held under
// max_stored_bytes by dropping the oldest responses that were already written
// out once; the RPC stays as "answered, lost" (a few dozen bytes), and a
// re-sent request for it is told so instead of running again.
#pragma once

#include <cstdint>
#include <map>
#include <unordered_map>
#include <utility>

#include "stream/send_queue.h"
#include "transport/net_address.h"
#include "wharf/buffer.h"

namespace wharf::stream {

class Connection;

// One RPC of a client, from delivery until the client's floor passes it.
struct ServedRpc {
  enum class State : uint8_t {
    kInProgress,  // delivered as kRequest; the application has not answered
    kAnswered,    // SendResponse done: `response` (or `lost`)
  };
  State state = State::kInProgress;
  Buffer response;
  bool lost = false;                // the stored copy was evicted
  Connection* queued_on = nullptr;  // connection whose queue holds the response (ServerRpcs)
  SendQueue::Handle handle = 0;     // its handle there (ServerRpcs)
  uint64_t written_seq = 0;         // eviction order once fully written (0 = not yet)
};

struct ClientRecord {
  uint64_t instance = 0;  // the client process these ids belong to
  uint64_t floor = 0;     // every id below has been acknowledged
  size_t in_progress = 0;  // rpcs in kInProgress (the application holds them)
  std::map<uint64_t, ServedRpc> rpcs;
};

// Owned by ServerRpcs. Single-threaded.
class ServerTable {
 public:
  enum class Seen : uint8_t { kNew, kBelowFloor, kInProgress, kAnswered };

  explicit ServerTable(uint64_t max_stored_bytes) : max_stored_bytes_(max_stored_bytes) {}

  ClientRecord* Find(const transport::NetAddress& client);
  const ClientRecord* Find(const transport::NetAddress& client) const;
  ClientRecord& Get(const transport::NetAddress& client);

  static Seen Classify(const ClientRecord& record, uint64_t id);
  // Records a delivered request (Classify said kNew).
  void Start(ClientRecord& record, uint64_t id);
  // Stores the answer of an in-progress RPC; returns it.
  ServedRpc& Answer(ClientRecord& record, uint64_t id, Buffer response);
  // The response went out whole once: from now on it may be evicted.
  void MarkWritten(const transport::NetAddress& client, uint64_t id);
  // The response is queued again (a re-sent request): not evictable until
  // it is written out again.
  void Unmark(ServedRpc& rpc);

  // Raises the floor; `drop(id, ServedRpc&)` sees each released RPC first.
  template <typename Fn>
  void AdvanceFloor(ClientRecord& record, uint64_t floor, Fn&& drop) {
    if (floor <= record.floor) return;
    record.floor = floor;
    auto end = record.rpcs.lower_bound(floor);
    for (auto it = record.rpcs.begin(); it != end;) {
      drop(it->first, it->second);
      if (it->second.state == ServedRpc::State::kInProgress) --record.in_progress;
      Forget(it->second);
      it = record.rpcs.erase(it);
    }
  }

  // Drops everything of `client` (restart, or gone); `drop` as above.
  // Returns whether there was a record.
  template <typename Fn>
  bool Erase(const transport::NetAddress& client, Fn&& drop) {
    auto it = clients_.find(client);
    if (it == clients_.end()) return false;
    for (auto& [id, rpc] : it->second.rpcs) {
      drop(id, rpc);
      Forget(rpc);
    }
    clients_.erase(it);
    return true;
  }

  // Evicts the oldest written responses while over the byte bound; `evict`
  // sees each (id, ServedRpc&) first. Returns how many.
  template <typename Fn>
  size_t EvictOverLimit(Fn&& evict) {
    size_t evicted = 0;
    while (stored_bytes_ > max_stored_bytes_ && !written_.empty()) {
      auto [client, id] = written_.begin()->second;
      written_.erase(written_.begin());
      ServedRpc& rpc = clients_.at(client).rpcs.at(id);
      rpc.written_seq = 0;
      evict(id, rpc);
      stored_bytes_ -= rpc.response.size();
      rpc.response = Buffer();
      rpc.lost = true;
      ++evicted;
    }
    return evicted;
  }

  uint64_t stored_bytes() const { return stored_bytes_; }
  size_t num_rpcs() const { return num_rpcs_; }
  size_t num_clients() const { return clients_.size(); }

 private:
  // Bookkeeping for an RPC leaving the table.
  void Forget(ServedRpc& rpc);

  uint64_t max_stored_bytes_;
  std::unordered_map<transport::NetAddress, ClientRecord> clients_;
  uint64_t stored_bytes_ = 0;
  size_t num_rpcs_ = 0;
  // Fully written responses, oldest first: seq -> (client, id).
  std::map<uint64_t, std::pair<transport::NetAddress, uint64_t>> written_;
  uint64_t next_seq_ = 1;
};

}  // namespace wharf::stream
