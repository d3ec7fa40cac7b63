// ChooseEviction: per-uid cap first, then the total.
#include "daemon/unattached_limits.h"

#include <algorithm>
#include <map>

namespace wharf::daemon {

std::optional<uint64_t> ChooseEviction(std::span<const UnattachedConnection> waiting,
                                       uid_t newcomer, size_t max_total, size_t max_per_uid) {
  // Per uid: how many wait, and the oldest of them (waiting is oldest first).
  struct Tally {
    size_t count = 0;
    uint64_t oldest = 0;
    size_t oldest_index = 0;
  };
  std::map<uid_t, Tally> by_uid;
  for (size_t i = 0; i < waiting.size(); ++i) {
    Tally& t = by_uid[waiting[i].uid];
    if (t.count++ == 0) {
      t.oldest = waiting[i].id;
      t.oldest_index = i;
    }
  }
  auto own = by_uid.find(newcomer);
  if (own != by_uid.end() && own->second.count >= max_per_uid) return own->second.oldest;
  if (waiting.size() < max_total) return std::nullopt;
  // The uid with the most waiting; among equals, the one waiting longest.
  auto most = std::max_element(by_uid.begin(), by_uid.end(), [](const auto& a, const auto& b) {
    if (a.second.count != b.second.count) return a.second.count < b.second.count;
    return a.second.oldest_index > b.second.oldest_index;
  });
  if (most == by_uid.end()) return std::nullopt;
  return most->second.oldest;
}

}  // namespace wharf::daemon
