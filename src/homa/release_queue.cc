// ReleaseQueue: floors raised at once, acked and floor-finished server RPCs
// handed to the destroy callback later.
#include "homa/release_queue.h"

namespace wharf::homa {

void ReleaseQueue::RaiseFloor(Peer& peer, uint32_t pair, uint64_t floor) {
  // A client we hold no record of has nothing here to finish.
  auto it = peer.clients.find(pair);
  if (it == peer.clients.end()) return;
  ClientRecord& record = it->second;
  if (floor <= record.floor) return;  // floors only rise; older packets carry lower ones
  record.floor = floor;
  pending_.push_back({&peer, pair, floor, /*is_floor=*/true});
}

void ReleaseQueue::Release() {
  // Index loop: nothing below adds to the list, but keep it robust.
  for (size_t i = 0; i < pending_.size(); ++i) {
    const Pending r = pending_[i];
    if (!r.is_floor) {
      destroy_(*r.peer, r.pair, r.id, /*tombstone=*/true);
      continue;
    }
    auto it = r.peer->clients.find(r.pair);
    if (it == r.peer->clients.end()) continue;
    ClientRecord& record = it->second;
    record.tombstones.erase(record.tombstones.begin(), record.tombstones.lower_bound(record.floor));
    // RPCs below the floor are finished as far as the client is concerned.
    while (!record.live.empty() && record.live.begin()->first < record.floor) {
      destroy_(*r.peer, r.pair, record.live.begin()->first, /*tombstone=*/false);
    }
  }
  pending_.clear();
}

}  // namespace wharf::homa
