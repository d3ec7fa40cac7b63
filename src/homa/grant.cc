// GrantScheduler: nested ordered sets for SRPT-with-one-per-peer selection.
#include "homa/grant.h"

#include <algorithm>

namespace wharf::homa {

void GrantScheduler::ReindexPeer(uint64_t peer, const std::optional<Key>& old_best) {
  if (old_best) peers_.erase({*old_best, peer});
  auto it = per_peer_.find(peer);
  if (it == per_peer_.end()) return;
  if (it->second.empty()) {
    per_peer_.erase(it);
    return;
  }
  peers_.emplace(*it->second.begin(), peer);
}

void GrantScheduler::Upsert(uint64_t id, uint64_t peer, uint32_t remaining, TimeNs birth_ns,
                            Rpc* rpc) {
  Key key{remaining, birth_ns, id};
  auto found = index_.find(id);
  if (found != index_.end() && found->second.key == key && found->second.peer == peer) {
    found->second.rpc = rpc;
    return;
  }
  if (found != index_.end()) Remove(id);
  auto& messages = per_peer_[peer];
  std::optional<Key> old_best;
  if (!messages.empty()) old_best = *messages.begin();
  messages.insert(key);
  index_.emplace(id, Info{peer, key, rpc});
  by_age_.emplace(birth_ns, id);
  ReindexPeer(peer, old_best);
}

void GrantScheduler::Remove(uint64_t id) {
  auto found = index_.find(id);
  if (found == index_.end()) return;
  Info info = found->second;
  index_.erase(found);
  by_age_.erase({std::get<1>(info.key), id});
  auto& messages = per_peer_[info.peer];
  std::optional<Key> old_best;
  if (!messages.empty()) old_best = *messages.begin();
  messages.erase(info.key);
  ReindexPeer(info.peer, old_best);
}

std::vector<GrantScheduler::Ranked> GrantScheduler::ActiveSet() const {
  std::vector<Ranked> out;
  ActiveSet(&out);
  return out;
}

void GrantScheduler::ActiveSet(std::vector<Ranked>* out) const {
  out->clear();
  int rank = 0;
  for (const auto& [key, peer] : peers_) {
    if (rank >= overcommit_) break;
    uint8_t prio = static_cast<uint8_t>(std::max(0, max_sched_priority_ - rank));
    const uint64_t id = std::get<2>(key);
    out->push_back({id, prio, index_.at(id).rpc});
    ++rank;
  }
}

std::optional<uint64_t> GrantScheduler::Oldest() const {
  if (by_age_.empty()) return std::nullopt;
  return by_age_.begin()->second;
}

Rpc* GrantScheduler::OldestRpc() const {
  if (by_age_.empty()) return nullptr;
  return index_.at(by_age_.begin()->second).rpc;
}

}  // namespace wharf::homa
