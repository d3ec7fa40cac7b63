// UcxClientCalls and UcxServerCalls: calls by id or key, and by peer.
#include "ucx/ucx_calls.h"

#include <algorithm>

namespace wharf::ucx {

uint64_t UcxClientCalls::Add(UcxPeer peer, uint64_t cookie, const transport::NetAddress& server) {
  const uint64_t id = next_id_++;
  calls_.emplace(id, Call{peer, cookie, server});
  by_peer_[peer].insert(id);
  return id;
}

const UcxClientCalls::Call* UcxClientCalls::Find(uint64_t id) const {
  auto it = calls_.find(id);
  return it == calls_.end() ? nullptr : &it->second;
}

std::optional<UcxClientCalls::Call> UcxClientCalls::Take(uint64_t id) {
  auto it = calls_.find(id);
  if (it == calls_.end()) return std::nullopt;
  Call call = it->second;
  calls_.erase(it);
  auto peer = by_peer_.find(call.peer);
  peer->second.erase(id);
  if (peer->second.empty()) by_peer_.erase(peer);
  return call;
}

std::vector<std::pair<uint64_t, UcxClientCalls::Call>> UcxClientCalls::TakePeer(UcxPeer peer) {
  std::vector<std::pair<uint64_t, Call>> taken;
  auto it = by_peer_.find(peer);
  if (it == by_peer_.end()) return taken;
  for (uint64_t id : it->second) {
    taken.emplace_back(id, calls_.at(id));
    calls_.erase(id);
  }
  by_peer_.erase(it);
  std::sort(taken.begin(), taken.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return taken;
}

size_t UcxClientCalls::InFlight(UcxPeer peer) const {
  auto it = by_peer_.find(peer);
  return it == by_peer_.end() ? 0 : it->second.size();
}

UcxServerCalls::Added UcxServerCalls::Add(const transport::ServerRpcKey& key, UcxPeer peer) {
  if (calls_.contains(key)) return Added::kDuplicate;
  if (calls_.size() >= capacity_) return Added::kFull;
  calls_.emplace(key, peer);
  by_peer_[peer].insert(key);
  return Added::kAdded;
}

std::optional<UcxPeer> UcxServerCalls::Take(const transport::ServerRpcKey& key) {
  auto it = calls_.find(key);
  if (it == calls_.end()) return std::nullopt;
  const UcxPeer peer = it->second;
  calls_.erase(it);
  auto& keys = by_peer_[peer];
  keys.erase(key);
  if (keys.empty()) by_peer_.erase(peer);
  return peer;
}

size_t UcxServerCalls::DropPeer(UcxPeer peer) {
  auto it = by_peer_.find(peer);
  if (it == by_peer_.end()) return 0;
  const size_t dropped = it->second.size();
  for (const transport::ServerRpcKey& key : it->second) calls_.erase(key);
  by_peer_.erase(it);
  return dropped;
}

}  // namespace wharf::ucx
