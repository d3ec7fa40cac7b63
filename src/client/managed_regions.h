// client/managed_regions.h: ManagedRegions, what a managed engine keeps of
// its remote-memory operations between the commands it writes and wharfd's
// answers (shm/commands.h, kRegion*): the send-area Buffers region reads
// are filled into, the blocks lent from the heap (kept a second after their
// region ends, so that a write already on its way lands in nothing reused),
// where each lent region lies, and the region events the application has
// not taken. ManagedEngine writes the commands and reads the ring; this
// keeps the books.
//
// Owned by the ManagedEngine; used under its host's lock, like it.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <utility>

#include "absl/container/flat_hash_map.h"

#include "base/clock.h"
#include "shm/layout.h"
#include "transport/remote_memory.h"
#include "wharf/buffer.h"
#include "wharf/status.h"

namespace wharf::internal {

class ManagedRegions {
 public:
  // A lent block outlives its region by this much.
  static constexpr DurationNs kQuarantineNs = kNsPerSec;
  // Events the application has not taken; beyond, new ones are dropped.
  static constexpr size_t kMaxEvents = 65'536;

  // Operation `op` reads into `area` (in the send area); when `copy_to` is
  // given the bytes go there at the end (the application's Buffer was not
  // in the heap).
  void StartRead(uint64_t op, Buffer area, std::optional<Buffer> copy_to);
  // Operation `op` lends `bytes`: inside `block` (Lend's, ours to keep), or
  // the application's own memory (LendMemory).
  void StartLending(uint64_t op, std::optional<Buffer> block, std::span<std::byte> bytes);

  // Whether `op` is one of the above (a cheap look first: most completions
  // are not).
  bool Owns(uint64_t op) const {
    return (!reads_.empty() && reads_.contains(op)) ||
           (!lendings_.empty() && lendings_.contains(op));
  }
  // What the sink is told for operation `op` (Owns), wharfd having
  // answered `status` with `value`: a read's Buffer; a lending's view of its
  // bytes (a Buffer that does not own them) and its region id.
  struct Outcome {
    Status status;
    Buffer message;
    uint64_t value = 0;
  };
  Outcome Finish(uint64_t op, Status status, uint64_t value);

  // The application revoked a region it lent.
  void Revoked(uint64_t region, TimeNs now);
  // A kRegionEvent entry; `bytes` is an immediate's region, in the heap.
  void OnEvent(const shm::Descriptor& e, std::span<std::byte> bytes, TimeNs now);
  bool PopEvent(transport::RegionEvent* out);
  std::span<std::byte> LentBytes(uint64_t region) const;

  // The link is gone, and wharfd's transport with it: nobody writes into
  // any of this any more.
  void Clear();

  uint64_t events_dropped() const { return events_dropped_; }
  size_t blocks_kept() const { return lent_blocks_.size() + quarantined_.size(); }

 private:
  struct Read {
    Buffer area;
    std::optional<Buffer> copy_to;
  };
  struct Lending {
    std::optional<Buffer> block;
    std::span<std::byte> bytes;
  };
  // A region's block goes into quarantine; blocks whose time is up go.
  void EndBlock(uint64_t region, TimeNs now);

  absl::flat_hash_map<uint64_t, Read> reads_;
  absl::flat_hash_map<uint64_t, Lending> lendings_;
  // Lent regions' bytes, as lending or an immediate placed them; gone at
  // kReturned or Revoke (bounded by wharfd's ucx.max_regions).
  absl::flat_hash_map<uint64_t, std::span<std::byte>> views_;
  absl::flat_hash_map<uint64_t, Buffer> lent_blocks_;
  std::deque<std::pair<TimeNs, Buffer>> quarantined_;
  std::deque<transport::RegionEvent> events_;
  uint64_t events_dropped_ = 0;
};

}  // namespace wharf::internal
