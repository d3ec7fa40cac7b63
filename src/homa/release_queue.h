// homa/release_queue.h: ReleaseQueue, the server RPCs that acks and ack
// floors have finished, held until the host frees them at the start of its
// next Poll. It records acks, raises client records' floors, and on Release
// hands each finished RPC to a destroy callback. It does not decide what
// destroying an RPC means (the host detaches it from its parts and erases it:
// HomaHost::DestroyServerRpc), nor which acks to believe (the host checks
// that the acked endpoint is open).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "homa/peer_table.h"

namespace wharf::homa {

// Acks and floors usually ride on the next request's DATA, so freeing the
// RPCs they finish would sit between that request's arrival and its
// handler. The floor itself is raised at once (it decides whether a packet
// is a late duplicate); the freeing waits for the next Poll, which runs
// while the handler's response is already on its way. Until then a
// finished RPC is still in `live`, where a duplicate packet finds it and is
// dropped as one, as before.
//
// Owned by HomaHost. Single-threaded: the host's thread. Borrows the peers
// its entries name: a peer with releases pending must not be removed, so
// the owner calls Release before it removes any peer (HomaHost::PeerFor,
// and Poll before the timer's idle sweep).
class ReleaseQueue {
 public:
  // Forgets the server side of client `client_id` of `peer`'s client `pair`
  // (EndpointPair(our server endpoint, client port)) if still held, and
  // with `tombstone` remembers it as finished. It must erase `client_id`
  // from the record's `live` map if there: Release loops until the RPCs
  // below a floor are gone.
  using DestroyFn =
      std::function<void(Peer& peer, uint32_t pair, uint64_t client_id, bool tombstone)>;

  explicit ReleaseQueue(DestroyFn destroy) : destroy_(std::move(destroy)) {}
  ReleaseQueue(const ReleaseQueue&) = delete;
  ReleaseQueue& operator=(const ReleaseQueue&) = delete;

  // The client at (peer, pair) acked `client_id`: Release destroys that
  // RPC with a tombstone.
  void Ack(Peer& peer, uint32_t pair, uint64_t client_id) {
    pending_.push_back({&peer, pair, client_id, /*is_floor=*/false});
  }
  // The client at (peer, pair) finished every id below `floor`: its
  // record's floor rises at once, and Release frees what lies below it.
  // Ignored for a client without a record here, and for a floor at or
  // below the record's.
  void RaiseFloor(Peer& peer, uint32_t pair, uint64_t floor);
  // Destroys the RPCs the recorded acks and floors finished, in the order
  // they came, and empties the queue.
  void Release();

  bool empty() const { return pending_.empty(); }
  size_t size() const { return pending_.size(); }

 private:
  struct Pending {
    Peer* peer;     // never removed while named here (see the class comment)
    uint32_t pair;  // EndpointPair(our server endpoint, client port)
    uint64_t id;    // the acked client id, or the new floor
    bool is_floor;
  };

  const DestroyFn destroy_;
  // Acks and floors received since the last Release, oldest first.
  std::vector<Pending> pending_;
};

}  // namespace wharf::homa
