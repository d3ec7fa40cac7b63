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
//     going to the lowest offset); live allocations by offset. All three are
//     std::maps, so every operation is O(log n) in the number of blocks.
//   - every block is a multiple of `alignment` and starts on it; a request
//     is rounded up to the alignment (0 bytes takes one unit), and a block
//     larger than that is split, the remainder staying free.
//   - erased map nodes are recycled (base/node_recycler.h), so an allocator
//     whose number of blocks stays about constant stops calling malloc.
//
// Owned by one side; not thread-safe.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "base/node_recycler.h"
#include "wharf/result.h"

namespace wharf::shm {

class HeapAllocator {
 public:
  static constexpr uint64_t kDefaultAlignment = 64;  // a cache line
  // Largest alignment Create accepts (a huge page).
  static constexpr uint64_t kMaxAlignment = uint64_t{1} << 21;

  // An allocator over [first, first + bytes). kInvalidArgument unless
  // `alignment` is a power of two up to kMaxAlignment, `first` and `bytes`
  // are multiples of it, `bytes` is not zero and first + bytes does not
  // overflow.
  static Result<HeapAllocator> Create(uint64_t first, uint64_t bytes,
                                      uint64_t alignment = kDefaultAlignment);

  HeapAllocator(HeapAllocator&&) = default;
  HeapAllocator& operator=(HeapAllocator&&) = default;

  // The offset of `size` free bytes (aligned; size 0 takes one alignment
  // unit). kResourceExhausted naming the requested size and the largest
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

  uint64_t first() const { return first_; }
  uint64_t capacity() const { return capacity_; }
  uint64_t alignment() const { return alignment_; }
  // Bytes taken by live allocations, rounding to the alignment included;
  // capacity() - bytes_in_use() bytes are free.
  uint64_t bytes_in_use() const { return bytes_in_use_; }
  size_t live_allocations() const { return live_.size(); }
  // Number of free blocks (1 when nothing is allocated; more is fragmentation).
  size_t free_blocks() const { return free_by_offset_.size(); }
  // The largest request that would succeed now (0 when full).
  uint64_t largest_free_block() const;

 private:
  struct Live {
    uint64_t block_bytes = 0;      // the block taken: requested, rounded up
    uint64_t requested_bytes = 0;  // what Allocate was asked for
  };
  struct SizeKey {
    uint64_t bytes = 0;
    uint64_t offset = 0;
    friend auto operator<=>(const SizeKey&, const SizeKey&) = default;
  };
  struct Empty {};
  using FreeByOffset = std::map<uint64_t, uint64_t>;  // offset -> bytes
  using FreeBySize = std::map<SizeKey, Empty>;
  using LiveMap = std::map<uint64_t, Live>;  // offset -> allocation

  // Up to this many spare nodes per map: enough for bursts of a few hundred
  // allocations to come and go without malloc, at ~64 B per node.
  static constexpr size_t kSpareNodes = 256;

  HeapAllocator(uint64_t first, uint64_t bytes, uint64_t alignment);

  void AddFree(uint64_t offset, uint64_t bytes);
  void RemoveFree(FreeByOffset::iterator it);
  // The live allocation at exactly `offset`, or kInvalidArgument saying what
  // `offset` is instead ("what" is "free" or "size").
  Result<LiveMap::const_iterator> FindLive(uint64_t offset, const char* what) const;

  uint64_t first_;
  uint64_t capacity_;
  uint64_t alignment_;
  uint64_t bytes_in_use_ = 0;
  FreeByOffset free_by_offset_;
  FreeBySize free_by_size_;
  LiveMap live_;
  NodeRecycler<FreeByOffset, kSpareNodes> free_by_offset_nodes_;
  NodeRecycler<FreeBySize, kSpareNodes> free_by_size_nodes_;
  NodeRecycler<LiveMap, kSpareNodes> live_nodes_;
};

}  // namespace wharf::shm
