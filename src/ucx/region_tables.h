// ucx/region_tables.h: the bookkeeping of ucx://'s remote memory
// (ucx/ucx_remote_memory.h). Pure tables over a caller's clock: no UCX.
//
//   LentRegions  on the target: the regions it lent, by id (unguessable),
//                each with its holder, mapping, pool block and expiry.
//   HeldRegions  on the holder: the regions lent to it, by a local
//                handle, and the check every operation passes first
//                (rights, bounds, expiry).
// Both are capped; a table at its cap refuses with kResourceExhausted.
#pragma once

#include <cstdint>
#include <map>
#include <functional>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "ucx/ucx_calls.h"
#include "wharf/result.h"

namespace wharf::ucx {

class LentRegions {
 public:
  struct Region {
    uint64_t id = 0;
    UcxPeer holder = 0;
    uint64_t mapped_id = 0;            // UcpWorker::MapMemory's id
    uint64_t address = 0;
    uint64_t size = 0;
    uint8_t access = 0;                // wire::kRegion* bits
    TimeNs expires_ns = kNever;
    std::span<std::byte> pool_block;   // set when the region came from the pool
  };

  // Ids are drawn from `seed` onwards through a bijective mix, so a holder
  // cannot guess another holder's region from its own; they are nonzero and
  // below 2^63 (the ids above are asks').
  LentRegions(size_t capacity, uint64_t seed) : capacity_(capacity), next_(seed) {}

  // kResourceExhausted at the cap; `region.id` is assigned.
  Result<Region> Add(Region region);
  const Region* Find(uint64_t id) const;
  // Takes region `id` out; only when `holder` holds it, if given.
  std::optional<Region> Take(uint64_t id, std::optional<UcxPeer> holder = std::nullopt);
  // Takes out every region whose lifetime ended by `now`.
  std::vector<Region> TakeExpired(TimeNs now);
  // Takes out every region `holder` holds (it failed or left).
  std::vector<Region> TakeHolder(UcxPeer holder) {
    return TakeIf([holder](const Region& r) { return r.holder == holder; });
  }
  // Takes out every region `which` picks.
  std::vector<Region> TakeIf(const std::function<bool(const Region&)>& which);
  TimeNs NextExpiry() const;
  bool HeldBy(UcxPeer holder) const;
  size_t size() const { return regions_.size(); }

 private:
  size_t capacity_;
  uint64_t next_;
  std::unordered_map<uint64_t, Region> regions_;
  std::multimap<TimeNs, uint64_t> by_expiry_;
};

class HeldRegions {
 public:
  struct Region {
    uint64_t handle = 0;
    UcxPeer lender = 0;
    uint64_t remote_id = 0;  // the lender's id for it
    uint64_t key = 0;        // UcpWorker::ImportKey's id
    uint64_t address = 0;
    uint64_t size = 0;
    uint8_t access = 0;
    TimeNs expires_ns = kNever;
  };

  explicit HeldRegions(size_t capacity) : capacity_(capacity) {}

  // kResourceExhausted at the cap; `region.handle` is assigned.
  Result<Region> Add(Region region);
  // The region, if `access` on [offset, offset + length) is allowed at
  // `now`: NotFound (never lent to us, or released), DeadlineExceeded (its
  // lifetime ended), PermissionDenied (not lent with that right),
  // OutOfRange (outside it).
  Result<Region> Check(uint64_t handle, uint8_t access, uint64_t offset, uint64_t length,
                       TimeNs now) const;
  std::optional<Region> Take(uint64_t handle);
  // The region the lender knows as `remote_id`, taken out.
  std::optional<Region> TakeRemote(UcxPeer lender, uint64_t remote_id);
  std::vector<Region> TakeLender(UcxPeer lender);
  bool HoldsFrom(UcxPeer lender) const;
  size_t size() const { return regions_.size(); }

 private:
  size_t capacity_;
  uint64_t next_handle_ = 1;
  std::unordered_map<uint64_t, Region> regions_;
};

}  // namespace wharf::ucx
