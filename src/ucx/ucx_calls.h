// ucx/ucx_calls.h: the RPC tables of ucx:// (ucx/ucx_transport.h): our
// calls as a client, and the requests we hold as a server, each by the UCX
// peer they travel on, so that a peer's failure ends exactly its calls.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "transport/message_transport.h"
#include "transport/net_address.h"

namespace wharf::ucx {

using UcxPeer = uint64_t;  // UcpWorker::PeerId

// Client side: every call sent and not yet answered, failed or cancelled.
// Bounded by its caller (the engine's in-flight limits).
class UcxClientCalls {
 public:
  struct Call {
    UcxPeer peer = 0;
    uint64_t cookie = 0;
    transport::NetAddress server;
  };

  // A new call on `peer`; its id (never 0, never reused by this table).
  uint64_t Add(UcxPeer peer, uint64_t cookie, const transport::NetAddress& server);
  const Call* Find(uint64_t id) const;
  // Takes call `id` out of the table; nullopt when unknown.
  std::optional<Call> Take(uint64_t id);
  // Takes out every call on `peer`, oldest first, with its id.
  std::vector<std::pair<uint64_t, Call>> TakePeer(UcxPeer peer);
  // Calls in flight on `peer`.
  size_t InFlight(UcxPeer peer) const;
  size_t size() const { return calls_.size(); }

 private:
  std::unordered_map<uint64_t, Call> calls_;
  std::unordered_map<UcxPeer, std::unordered_set<uint64_t>> by_peer_;
  uint64_t next_id_ = 1;
};

// Server side: requests delivered upward and not yet answered, by key, and
// the peer the answer goes back on. Capped: the table never holds more than
// `capacity` calls.
class UcxServerCalls {
 public:
  explicit UcxServerCalls(size_t capacity) : capacity_(capacity) {}

  enum class Added { kAdded, kDuplicate, kFull };
  Added Add(const transport::ServerRpcKey& key, UcxPeer peer);
  // Takes call `key` out (answered or withdrawn); the peer it came on.
  std::optional<UcxPeer> Take(const transport::ServerRpcKey& key);
  // Forgets every call from `peer` (it failed or closed); how many.
  size_t DropPeer(UcxPeer peer);
  size_t size() const { return calls_.size(); }

 private:
  size_t capacity_;
  std::unordered_map<transport::ServerRpcKey, UcxPeer, transport::ServerRpcKeyHash> calls_;
  std::unordered_map<UcxPeer, std::unordered_set<transport::ServerRpcKey, transport::ServerRpcKeyHash>>
      by_peer_;
};

}  // namespace wharf::ucx
