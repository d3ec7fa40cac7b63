// PeerTable and Peer helpers.
#include "homa/peer_table.h"

namespace wharf::homa {

uint8_t Peer::UnschedPriority(uint32_t length) const {
  for (int p = wire::kNumPriorities - 1; p >= 0; --p) {
    if (cutoffs[p] != 0 && length <= cutoffs[p]) return static_cast<uint8_t>(p);
  }
  // Longer than every cutoff: the lowest unscheduled level in use.
  for (int p = 0; p < wire::kNumPriorities; ++p) {
    if (cutoffs[p] != 0) return static_cast<uint8_t>(p);
  }
  return 0;
}

Peer& PeerTable::Get(const transport::NetAddress& addr) {
  auto& slot = peers_[addr];
  if (!slot) {
    slot = std::make_unique<Peer>();
    slot->addr = addr;
    slot->id = next_id_++;
    // Assume the peer runs our cutoffs; if its version differs it sends
    // CUTOFFS on our first DATA, so only mismatched configs cost a packet.
    slot->cutoffs = config_.unsched_cutoffs;
    slot->cutoff_version = config_.cutoff_version;
  }
  return *slot;
}

Peer* PeerTable::Find(const transport::NetAddress& addr) {
  auto it = peers_.find(addr);
  return it == peers_.end() ? nullptr : it->second.get();
}

}  // namespace wharf::homa
