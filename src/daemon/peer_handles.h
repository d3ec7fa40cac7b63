// daemon/peer_handles.h: PeerHandles, the short names one application and
// wharfd give peers in the rings, so that no entry carries an address:
// the application's handles (kAddPeer: handle -> URI, which its calls,
// connects and barriers name) and wharfd's (kPeerName: the engine's PeerRef
// -> an id, which each request names its client by). It holds no
// connections and reaches no peer.
//
// Owned by the AppSession; single-threaded: the daemon's loop thread.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"

#include "engine/peer_ref.h"
#include "engine/uri.h"
#include "wharf/status.h"

namespace wharf::daemon {

class PeerHandles {
 public:
  // The application names `packed` (engine::PackUri) `handle`, replacing
  // what the handle named. kInvalidArgument for a handle of
  // shm::kMaxPeerHandles or more, or a URI that does not unpack.
  Status Add(uint64_t handle, const engine::PackedUri& packed);
  // What the application's `handle` names; null if nothing.
  const engine::Uri* Find(uint64_t handle) const {
    if (handle >= peers_.size() || !peers_[handle].has_value()) return nullptr;
    return &*peers_[handle];
  }

  // wharfd's id for `peer`, and whether it is new (the application must be
  // told its address first, in a kPeerName entry).
  std::pair<uint64_t, bool> NameOf(const engine::PeerRef& peer) {
    auto it = names_.find(peer);
    if (it != names_.end()) return {it->second, false};
    return {AddName(peer), true};
  }
  size_t names() const { return names_.size(); }

 private:
  uint64_t AddName(const engine::PeerRef& peer);

  // The application's handles, index = handle (< shm::kMaxPeerHandles).
  std::vector<std::optional<engine::Uri>> peers_;
  // Peers named to the application, looked up on every request by the
  // engine's PeerRef (a few words to hash); at most shm::kMaxPeerNames,
  // then it starts over.
  absl::flat_hash_map<engine::PeerRef, uint64_t, engine::PeerRefHash> names_;
  uint64_t next_name_ = 1;  // ids are never reused
};

}  // namespace wharf::daemon
