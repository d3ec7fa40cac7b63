// EndpointTable: a hash map behind a one-entry cache.
#include "homa/endpoint_table.h"

namespace wharf::homa {

bool EndpointTable::Add(uint16_t id, HomaEndpoint* ep) {
  if (!by_id_.emplace(id, ep).second) return false;
  last_ = ep;
  last_id_ = id;
  return true;
}

bool EndpointTable::Remove(uint16_t id, const HomaEndpoint* ep) {
  auto it = by_id_.find(id);
  if (it == by_id_.end() || it->second != ep) return false;
  by_id_.erase(it);
  if (last_ == ep) {
    last_ = by_id_.empty() ? nullptr : by_id_.begin()->second;
    last_id_ = by_id_.empty() ? 0 : by_id_.begin()->first;
  }
  return true;
}

HomaEndpoint* EndpointTable::FindSlow(uint16_t id) {
  // One endpoint: Find's compare already said no.
  if (by_id_.size() <= 1) return nullptr;
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return nullptr;
  last_ = it->second;
  last_id_ = id;
  return it->second;
}

}  // namespace wharf::homa
