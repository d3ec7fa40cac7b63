// LentRegions and HeldRegions: regions by id, holder, lender and expiry.
#include "ucx/region_tables.h"

#include <algorithm>
#include <string>

#include "wire/ucx_region.h"

namespace wharf::ucx {
namespace {

// splitmix64's finaliser: a bijection, so successive counters give distinct
// ids that do not reveal their neighbours.
uint64_t Mix(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::string U(uint64_t v) { return std::to_string(v); }

}  // namespace

Result<LentRegions::Region> LentRegions::Add(Region region) {
  if (regions_.size() >= capacity_) {
    return ResourceExhaustedError("ucx: " + U(capacity_) + " regions lent already (ucx.max_regions)");
  }
  do {
    // Below 2^63: an unasked grant carries the id where an answer carries
    // its ask's, and ask ids are 2^63 and up (UcxRemoteMemory::kFirstAskId).
    region.id = Mix(next_++) >> 1;
  } while (region.id == 0 || regions_.contains(region.id));
  regions_.emplace(region.id, region);
  if (region.expires_ns != kNever) by_expiry_.emplace(region.expires_ns, region.id);
  return region;
}

const LentRegions::Region* LentRegions::Find(uint64_t id) const {
  auto it = regions_.find(id);
  return it == regions_.end() ? nullptr : &it->second;
}

std::optional<LentRegions::Region> LentRegions::Take(uint64_t id, std::optional<UcxPeer> holder) {
  auto it = regions_.find(id);
  if (it == regions_.end() || (holder && it->second.holder != *holder)) return std::nullopt;
  Region region = it->second;
  regions_.erase(it);
  for (auto [e, end] = by_expiry_.equal_range(region.expires_ns); e != end; ++e) {
    if (e->second == id) {
      by_expiry_.erase(e);
      break;
    }
  }
  return region;
}

std::vector<LentRegions::Region> LentRegions::TakeExpired(TimeNs now) {
  std::vector<Region> expired;
  while (!by_expiry_.empty() && by_expiry_.begin()->first <= now) {
    const uint64_t id = by_expiry_.begin()->second;
    if (std::optional<Region> r = Take(id)) expired.push_back(*r);
  }
  return expired;
}

std::vector<LentRegions::Region> LentRegions::TakeIf(
    const std::function<bool(const Region&)>& which) {
  std::vector<uint64_t> ids;
  for (const auto& [id, region] : regions_) {
    if (which(region)) ids.push_back(id);
  }
  std::vector<Region> taken;
  for (uint64_t id : ids) taken.push_back(*Take(id));
  return taken;
}

bool LentRegions::HeldBy(UcxPeer holder) const {
  return std::any_of(regions_.begin(), regions_.end(),
                     [holder](const auto& entry) { return entry.second.holder == holder; });
}

TimeNs LentRegions::NextExpiry() const {
  return by_expiry_.empty() ? kNever : by_expiry_.begin()->first;
}

Result<HeldRegions::Region> HeldRegions::Add(Region region) {
  if (regions_.size() >= capacity_) {
    return ResourceExhaustedError("ucx: " + U(capacity_) + " regions held already (ucx.max_regions)");
  }
  region.handle = next_handle_++;
  regions_.emplace(region.handle, region);
  return region;
}

Result<HeldRegions::Region> HeldRegions::Check(uint64_t handle, uint8_t access, uint64_t offset,
                                               uint64_t length, TimeNs now) const {
  auto it = regions_.find(handle);
  if (it == regions_.end()) {
    return NotFoundError("region " + U(handle) + ": not lent to this endpoint, or released");
  }
  const Region& r = it->second;
  if (now >= r.expires_ns) {
    return DeadlineExceededError("region " + U(handle) + ": its lifetime ended");
  }
  if ((r.access & access) != access) {
    const char* what = access == wire::kRegionWrite    ? "writes"
                       : access == wire::kRegionAtomic ? "atomics"
                                                       : "reads";
    return PermissionDeniedError("region " + U(handle) + ": lent without " + what);
  }
  if (offset > r.size || length > r.size - offset) {
    return OutOfRangeError("region " + U(handle) + ": [" + U(offset) + ", +" + U(length) +
                           ") is outside its " + U(r.size) + " bytes");
  }
  return r;
}

std::optional<HeldRegions::Region> HeldRegions::Take(uint64_t handle) {
  auto it = regions_.find(handle);
  if (it == regions_.end()) return std::nullopt;
  Region r = it->second;
  regions_.erase(it);
  return r;
}

std::optional<HeldRegions::Region> HeldRegions::TakeRemote(UcxPeer lender, uint64_t remote_id) {
  for (auto it = regions_.begin(); it != regions_.end(); ++it) {
    if (it->second.lender == lender && it->second.remote_id == remote_id) {
      Region r = it->second;
      regions_.erase(it);
      return r;
    }
  }
  return std::nullopt;
}

bool HeldRegions::HoldsFrom(UcxPeer lender) const {
  return std::any_of(regions_.begin(), regions_.end(),
                     [lender](const auto& entry) { return entry.second.lender == lender; });
}

std::vector<HeldRegions::Region> HeldRegions::TakeLender(UcxPeer lender) {
  std::vector<Region> taken;
  for (auto it = regions_.begin(); it != regions_.end();) {
    if (it->second.lender == lender) {
      taken.push_back(it->second);
      it = regions_.erase(it);
    } else {
      ++it;
    }
  }
  return taken;
}

}  // namespace wharf::ucx
