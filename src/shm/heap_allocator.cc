// HeapAllocator: best fit over free blocks indexed by offset and by size,
// with neighbours merged on free.
#include "shm/heap_allocator.h"

#include <bit>
#include <iterator>
#include <string>

namespace wharf::shm {
namespace {

std::string Range(uint64_t first, uint64_t end) {
  return "[" + std::to_string(first) + ", " + std::to_string(end) + ")";
}

}  // namespace

Result<HeapAllocator> HeapAllocator::Create(uint64_t first, uint64_t bytes, uint64_t alignment) {
  if (alignment == 0 || alignment > kMaxAlignment || !std::has_single_bit(alignment)) {
    return InvalidArgumentError("heap allocator: alignment " + std::to_string(alignment) +
                                " must be a power of two up to " + std::to_string(kMaxAlignment));
  }
  if (bytes == 0 || first % alignment != 0 || bytes % alignment != 0) {
    return InvalidArgumentError("heap allocator: range start " + std::to_string(first) +
                                " and length " + std::to_string(bytes) +
                                " must be multiples of the alignment " + std::to_string(alignment) +
                                " and the length non-zero");
  }
  if (bytes > UINT64_MAX - first) {
    return InvalidArgumentError("heap allocator: range start " + std::to_string(first) + " + " +
                                std::to_string(bytes) + " bytes overflows");
  }
  return HeapAllocator(first, bytes, alignment);
}

HeapAllocator::HeapAllocator(uint64_t first, uint64_t bytes, uint64_t alignment)
    : first_(first), capacity_(bytes), alignment_(alignment) {
  AddFree(first, bytes);
}

void HeapAllocator::AddFree(uint64_t offset, uint64_t bytes) {
  free_by_offset_nodes_.Insert(free_by_offset_, offset, bytes);
  free_by_size_nodes_.Insert(free_by_size_, SizeKey{bytes, offset}, Empty{});
}

void HeapAllocator::RemoveFree(FreeByOffset::iterator it) {
  free_by_size_nodes_.Erase(free_by_size_, free_by_size_.find(SizeKey{it->second, it->first}));
  free_by_offset_nodes_.Erase(free_by_offset_, it);
}

uint64_t HeapAllocator::largest_free_block() const {
  return free_by_size_.empty() ? 0 : free_by_size_.rbegin()->first.bytes;
}

Result<uint64_t> HeapAllocator::Allocate(uint64_t size) {
  // Compared before rounding so that a size near 2^64 cannot wrap.
  const uint64_t block_bytes =
      size > capacity_ ? 0 : (size == 0 ? alignment_ : (size + alignment_ - 1) & ~(alignment_ - 1));
  auto best =
      block_bytes == 0 ? free_by_size_.end() : free_by_size_.lower_bound(SizeKey{block_bytes, 0});
  if (best == free_by_size_.end()) {
    return ResourceExhaustedError("heap allocator: no free block for " + std::to_string(size) +
                                  " bytes (largest free block " +
                                  std::to_string(largest_free_block()) + " of " +
                                  std::to_string(capacity_ - bytes_in_use_) + " free bytes in " +
                                  Range(first_, first_ + capacity_) + ")");
  }
  const SizeKey block = best->first;
  RemoveFree(free_by_offset_.find(block.offset));
  if (block.bytes > block_bytes) AddFree(block.offset + block_bytes, block.bytes - block_bytes);
  live_nodes_.Insert(live_, block.offset, Live{block_bytes, size});
  bytes_in_use_ += block_bytes;
  return block.offset;
}

Result<HeapAllocator::LiveMap::const_iterator> HeapAllocator::FindLive(uint64_t offset,
                                                                       const char* what) const {
  auto it = live_.find(offset);
  if (it != live_.end()) return it;
  const std::string prefix = std::string("heap ") + what + ": offset " + std::to_string(offset);
  if (offset < first_ || offset - first_ >= capacity_) {
    return InvalidArgumentError(prefix + " is outside " + Range(first_, first_ + capacity_));
  }
  // The allocation starting at or before `offset`, if any, may cover it.
  auto after = live_.upper_bound(offset);
  if (after != live_.begin()) {
    auto before = std::prev(after);
    if (offset - before->first < before->second.block_bytes) {
      return InvalidArgumentError(prefix + " is inside the allocation at " +
                                  std::to_string(before->first) + " (" +
                                  std::to_string(before->second.requested_bytes) + " bytes)");
    }
  }
  return InvalidArgumentError(prefix +
                              " is not the start of a live allocation (already freed or never "
                              "allocated)");
}

Result<uint64_t> HeapAllocator::Size(uint64_t offset) const {
  WHARF_ASSIGN_OR_RETURN(LiveMap::const_iterator it, FindLive(offset, "size"));
  return it->second.requested_bytes;
}

Result<uint64_t> HeapAllocator::Free(uint64_t offset) {
  WHARF_ASSIGN_OR_RETURN(LiveMap::const_iterator found, FindLive(offset, "free"));
  const LiveMap::iterator it = live_.erase(found, found);  // const_iterator -> iterator
  const Live live = it->second;
  live_nodes_.Erase(live_, it);
  bytes_in_use_ -= live.block_bytes;

  // Merge with the free neighbours on either side, if they touch.
  uint64_t start = offset;
  uint64_t bytes = live.block_bytes;
  auto next = free_by_offset_.lower_bound(offset);
  if (next != free_by_offset_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      bytes += prev->second;
      RemoveFree(prev);
    }
  }
  if (next != free_by_offset_.end() && next->first == offset + live.block_bytes) {
    bytes += next->second;
    RemoveFree(next);
  }
  AddFree(start, bytes);
  return live.requested_bytes;
}

}  // namespace wharf::shm
