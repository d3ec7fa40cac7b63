// shm/heap_allocator.h: HeapAllocator, a best-fit allocator of byte OFFSETS
// in a range [first, first + bytes). It never touches the memory the offsets
// name, and its bookkeeping lives in private memory, never in the shared
// region: each side of a region runs one over its own half of the heap (the
// application over its send area, wharfd over the receive area), and no
// peer can corrupt the other's free lists.
//
// Because wharfd's Free takes offsets an application sent it in a release
// command, Free (and Size) treat the offset as untrusted input: anything that
// is not the start of a live allocation is kInvalidArgument and changes
// nothing, never a crash or a corrupted free list.
//
// Design (docs/shm.md, "The heap"):
//   - free blocks are kept twice: by offset (to find the neighbours a freed
//     block merges with) and by (size, offset) (to find the best fit, ties
//     going to the lowest offset). Both are std::maps, O(log n) per operation.
//   - live allocations are in a hash map by offset, so Free and Size of a good
//     offset are O(1). Only the error path (an offset that is not a live
//     start) scans them, to say which allocation covers it: a client that
//     sends a bad offset is faulted and disconnected, so that path is cold.
//   - fast path: the allocator sits on every managed-mode RPC twice per
//     process (the application's send payload, wharfd's copy of each received
//     message), mostly with the same few small sizes. A freed block of at
//     most kQuickUnits alignment units therefore goes onto a LIFO "quick
//     list" for its exact unit count (at most quick_list_depth blocks per
//     count) instead of being merged, and an Allocate that rounds to that
//     count pops it: no ordered-map operation either way. Quick-listed blocks
//     are free in every observable: bytes_in_use() does not count them,
//     free_blocks() and largest_free_block() first merge them into the free
//     maps (hence the `mutable` maps), and an Allocate that finds no block in
//     the free maps merges them and retries before it reports
//     kResourceExhausted, so they never cause an exhaustion that merging
//     would have avoided. A block popped from a quick list is not
//     necessarily the one best fit would have picked; the free maps stay
//     best fit.
//   - every block is a multiple of `alignment` and starts on it; a request
//     is rounded up to the alignment (0 bytes takes one unit), and a block
//     larger than that is split, the remainder staying free.
//   - erased map nodes are recycled (base/node_recycler.h) and a cleared
//     quick list keeps its capacity, so an allocator whose number of blocks
//     stays about constant stops calling malloc.
//
// Owned by one side; not thread-safe.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <array>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "base/node_recycler.h"
#include "wharf/result.h"

namespace wharf::shm {

class HeapAllocator {
 public:
  static constexpr uint64_t kDefaultAlignment = 64;  // a cache line
  // Largest alignment Create accepts (a huge page).
  static constexpr uint64_t kMaxAlignment = uint64_t{1} << 21;
  // Freed blocks of up to this many alignment units go onto quick lists
  // (4 KiB at the default alignment).
  static constexpr uint64_t kQuickUnits = 64;
  // Default bound on the blocks kept per quick list; 0 turns quick lists off
  // (pure best fit, as the reference-model test checks).
  static constexpr size_t kDefaultQuickListDepth = 64;

  // An allocator over [first, first + bytes). kInvalidArgument unless
  // `alignment` is a power of two up to kMaxAlignment, `first` and `bytes`
  // are multiples of it, `bytes` is not zero and first + bytes does not
  // overflow. `quick_list_depth` bounds each quick list (see above).
  static Result<HeapAllocator> Create(uint64_t first, uint64_t bytes,
                                      uint64_t alignment = kDefaultAlignment,
                                      size_t quick_list_depth = kDefaultQuickListDepth);

  HeapAllocator(HeapAllocator&&) = default;
  HeapAllocator& operator=(HeapAllocator&&) = default;

  // The offset of `size` free bytes (aligned; size 0 takes one alignment
  // unit), from a quick list when one holds a block of the rounded size.
  // kResourceExhausted naming the requested size and the largest
  // free block when no free block is large enough.
  Result<uint64_t> Allocate(uint64_t size);

  // Frees the allocation that starts exactly at `offset` and returns the
  // size that was requested for it. kInvalidArgument naming the offset (and
  // changing nothing) when it is outside the range, inside an allocation,
  // already free or never allocated.
  Result<uint64_t> Free(uint64_t offset);

  // The size requested for the live allocation starting at `offset`; the
  // same errors as Free.
  Result<uint64_t> Size(uint64_t offset) const;

  // From now on the live allocation at `offset` is known by `new_offset`
  // with size `new_size`, a range inside its block: Size and Free take
  // `new_offset` (Free still frees the whole block) and `offset` is no
  // longer live. For a block handed on without its first bytes (wharfd
  // receives a message with its frame header straight into an
  // application's area and hands over the payload). kInvalidArgument, and
  // nothing changes, unless `offset` is live and the range fits its block.
  Status Narrow(uint64_t offset, uint64_t new_offset, uint64_t new_size);

  uint64_t first() const { return first_; }
  uint64_t capacity() const { return capacity_; }
  uint64_t alignment() const { return alignment_; }
  // Bytes taken by live allocations, rounding to the alignment included;
  // capacity() - bytes_in_use() bytes are free.
  uint64_t bytes_in_use() const { return bytes_in_use_; }
  size_t live_allocations() const { return live_.size(); }
  // Number of free blocks (1 when nothing is allocated; more is
  // fragmentation), counted with the quick lists merged (which this does).
  size_t free_blocks() const;
  // The largest request that would succeed now (0 when full); merges the
  // quick lists first, as Allocate would before failing.
  uint64_t largest_free_block() const;
  // Freed blocks waiting on quick lists (not merged yet); for tests.
  size_t quick_listed_blocks() const { return quick_blocks_; }

 private:
  struct Live {
    uint64_t block_bytes = 0;      // the block taken: requested, rounded up
    uint64_t requested_bytes = 0;  // what Allocate was asked for (or Narrow)
    uint64_t lead = 0;             // key - block start (Narrow); 0 otherwise
  };
  struct SizeKey {
    uint64_t bytes = 0;
    uint64_t offset = 0;
    friend auto operator<=>(const SizeKey&, const SizeKey&) = default;
  };
  struct Empty {};
  using FreeByOffset = std::map<uint64_t, uint64_t>;  // offset -> bytes
  using FreeBySize = std::map<SizeKey, Empty>;
  // Open addressing: no modulo by a prime and no node per entry (the two
  // costs of std::unordered_map on this path).
  using LiveMap = absl::flat_hash_map<uint64_t, Live>;  // offset -> allocation

  // Up to this many spare nodes per map: enough for bursts of a few hundred
  // allocations to come and go without malloc, at ~64 B per node.
  static constexpr size_t kSpareNodes = 256;

  HeapAllocator(uint64_t first, uint64_t bytes, uint64_t alignment, size_t quick_list_depth);

  void AddFree(uint64_t offset, uint64_t bytes) const;
  void RemoveFree(FreeByOffset::iterator it) const;
  // Returns the free block [offset, offset + bytes) to the free maps, merged
  // with the free neighbours it touches.
  void Merge(uint64_t offset, uint64_t bytes) const;
  // Merges every quick-listed block into the free maps.
  void FlushQuickLists() const;
  // Best fit from the free maps (split if larger), or nullopt when no block
  // is large enough.
  std::optional<uint64_t> TakeBestFit(uint64_t block_bytes);
  // kInvalidArgument saying what `offset`, which is not the start of a live
  // allocation, is instead ("what" is "free" or "size"). Linear in the live
  // allocations: the error path only.
  Status NotLive(uint64_t offset, const char* what) const;

  uint64_t first_;
  uint64_t capacity_;
  uint64_t alignment_;
  unsigned unit_shift_;  // log2(alignment_)
  size_t quick_list_depth_;
  uint64_t bytes_in_use_ = 0;
  // Mutable so that the const accessors can merge the quick lists first:
  // that changes no observable.
  mutable FreeByOffset free_by_offset_;
  mutable FreeBySize free_by_size_;
  mutable NodeRecycler<FreeByOffset, kSpareNodes> free_by_offset_nodes_;
  mutable NodeRecycler<FreeBySize, kSpareNodes> free_by_size_nodes_;
  // quick_[u]: offsets of free u-unit blocks, most recently freed last.
  mutable std::array<std::vector<uint64_t>, kQuickUnits + 1> quick_;
  mutable size_t quick_blocks_ = 0;
  LiveMap live_;
};

}  // namespace wharf::shm
