// PeerHandles: adding the application's handles and naming new peers.
#include "daemon/peer_handles.h"

#include <string>

#include "shm/commands.h"

namespace wharf::daemon {

Status PeerHandles::Add(uint64_t handle, const engine::PackedUri& packed) {
  if (handle >= shm::kMaxPeerHandles) {
    return InvalidArgumentError("peer handle " + std::to_string(handle) + " is over " +
                                std::to_string(shm::kMaxPeerHandles - 1));
  }
  WHARF_ASSIGN_OR_RETURN(engine::Uri uri, engine::UnpackUri(packed));
  if (peers_.size() <= handle) peers_.resize(handle + 1);
  peers_[handle] = std::move(uri);
  return OkStatus();
}

uint64_t PeerHandles::AddName(const engine::PeerRef& peer) {
  // Start over when full: ids are never reused, so the application's older
  // names stay valid until it evicts them.
  if (names_.size() >= shm::kMaxPeerNames) names_.clear();
  const uint64_t id = next_name_++;
  names_.emplace(peer, id);
  return id;
}

}  // namespace wharf::daemon
