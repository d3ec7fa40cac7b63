// HeapAllocator: best fit over free blocks indexed by offset and by size,
// with neighbours merged on free, behind per-size quick lists of small freed
// blocks and a hash map of live allocations.
#include "shm/heap_allocator.h"

#include <bit>
#include <iterator>
#include <optional>
#include <string>

namespace wharf::shm {
namespace {

std::string Range(uint64_t first, uint64_t end) {
  return "[" + std::to_string(first) + ", " + std::to_string(end) + ")";
}

}  // namespace

Result<HeapAllocator> HeapAllocator::Create(uint64_t first, uint64_t bytes, uint64_t alignment,
                                            size_t quick_list_depth) {
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
  return HeapAllocator(first, bytes, alignment, quick_list_depth);
}

HeapAllocator::HeapAllocator(uint64_t first, uint64_t bytes, uint64_t alignment,
                             size_t quick_list_depth)
    : first_(first),
      capacity_(bytes),
      alignment_(alignment),
      unit_shift_(static_cast<unsigned>(std::countr_zero(alignment))),
      quick_list_depth_(quick_list_depth) {
  AddFree(first, bytes);
  live_.reserve(kSpareNodes);  // no rehash (malloc) until more are live at once
}

void HeapAllocator::AddFree(uint64_t offset, uint64_t bytes) const {
  free_by_offset_nodes_.Insert(free_by_offset_, offset, bytes);
  free_by_size_nodes_.Insert(free_by_size_, SizeKey{bytes, offset}, Empty{});
}

void HeapAllocator::RemoveFree(FreeByOffset::iterator it) const {
  free_by_size_nodes_.Erase(free_by_size_, free_by_size_.find(SizeKey{it->second, it->first}));
  free_by_offset_nodes_.Erase(free_by_offset_, it);
}

void HeapAllocator::Merge(uint64_t offset, uint64_t bytes) const {
  // Merge with the free neighbours on either side, if they touch.
  uint64_t start = offset;
  uint64_t merged = bytes;
  auto next = free_by_offset_.lower_bound(offset);
  if (next != free_by_offset_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      merged += prev->second;
      RemoveFree(prev);
    }
  }
  if (next != free_by_offset_.end() && next->first == offset + bytes) {
    merged += next->second;
    RemoveFree(next);
  }
  AddFree(start, merged);
}

void HeapAllocator::FlushQuickLists() const {
  if (quick_blocks_ == 0) return;
  for (uint64_t units = 1; units <= kQuickUnits; ++units) {
    for (uint64_t offset : quick_[units]) Merge(offset, units << unit_shift_);
    quick_[units].clear();  // keeps the capacity: no malloc when it refills
  }
  quick_blocks_ = 0;
}

size_t HeapAllocator::free_blocks() const {
  FlushQuickLists();
  return free_by_offset_.size();
}

uint64_t HeapAllocator::largest_free_block() const {
  FlushQuickLists();
  return free_by_size_.empty() ? 0 : free_by_size_.rbegin()->first.bytes;
}

std::optional<uint64_t> HeapAllocator::TakeBestFit(uint64_t block_bytes) {
  auto best = free_by_size_.lower_bound(SizeKey{block_bytes, 0});
  if (best == free_by_size_.end()) return std::nullopt;
  const SizeKey block = best->first;
  RemoveFree(free_by_offset_.find(block.offset));
  if (block.bytes > block_bytes) AddFree(block.offset + block_bytes, block.bytes - block_bytes);
  return block.offset;
}

Result<uint64_t> HeapAllocator::Allocate(uint64_t size) {
  // Compared before rounding so that a size near 2^64 cannot wrap.
  const uint64_t block_bytes =
      size > capacity_ ? 0 : (size == 0 ? alignment_ : (size + alignment_ - 1) & ~(alignment_ - 1));
  std::optional<uint64_t> offset;
  if (block_bytes != 0) {
    const uint64_t units = block_bytes >> unit_shift_;
    if (units <= kQuickUnits && !quick_[units].empty()) {
      offset = quick_[units].back();  // the fast path: no map operation
      quick_[units].pop_back();
      --quick_blocks_;
    } else {
      offset = TakeBestFit(block_bytes);
      if (!offset && quick_blocks_ != 0) {
        // The quick lists may hold the room once merged.
        FlushQuickLists();
        offset = TakeBestFit(block_bytes);
      }
    }
  }
  if (!offset) {
    return ResourceExhaustedError("heap allocator: no free block for " + std::to_string(size) +
                                  " bytes (largest free block " +
                                  std::to_string(largest_free_block()) + " of " +
                                  std::to_string(capacity_ - bytes_in_use_) + " free bytes in " +
                                  Range(first_, first_ + capacity_) + ")");
  }
  live_.emplace(*offset, Live{block_bytes, size});
  bytes_in_use_ += block_bytes;
  return *offset;
}

Status HeapAllocator::NotLive(uint64_t offset, const char* what) const {
  const std::string prefix = std::string("heap ") + what + ": offset " + std::to_string(offset);
  if (offset < first_ || offset - first_ >= capacity_) {
    return InvalidArgumentError(prefix + " is outside " + Range(first_, first_ + capacity_));
  }
  // At most one live allocation covers `offset`; a linear scan is fine on
  // this cold path and keeps the hot path free of an ordered index.
  for (const auto& [key, live] : live_) {
    const uint64_t start = key - live.lead;
    if (start <= offset && offset - start < live.block_bytes) {
      return InvalidArgumentError(prefix + " is inside the allocation at " +
                                  std::to_string(start) + " (" +
                                  std::to_string(live.requested_bytes) + " bytes)");
    }
  }
  return InvalidArgumentError(prefix +
                              " is not the start of a live allocation (already freed or never "
                              "allocated)");
}

Result<uint64_t> HeapAllocator::Size(uint64_t offset) const {
  auto it = live_.find(offset);
  if (it == live_.end()) return NotLive(offset, "size");
  return it->second.requested_bytes;
}

Result<uint64_t> HeapAllocator::Free(uint64_t offset) {
  auto it = live_.find(offset);
  if (it == live_.end()) return NotLive(offset, "free");
  const Live live = it->second;
  live_.erase(it);
  offset -= live.lead;  // the block's start
  bytes_in_use_ -= live.block_bytes;
  const uint64_t units = live.block_bytes >> unit_shift_;
  if (units <= kQuickUnits && quick_[units].size() < quick_list_depth_) {
    quick_[units].push_back(offset);  // the fast path: merged only when needed
    ++quick_blocks_;
  } else {
    Merge(offset, live.block_bytes);
  }
  return live.requested_bytes;
}

Status HeapAllocator::Narrow(uint64_t offset, uint64_t new_offset, uint64_t new_size) {
  auto it = live_.find(offset);
  if (it == live_.end()) return NotLive(offset, "narrow");
  Live live = it->second;
  const uint64_t start = offset - live.lead;
  if (new_offset < start || new_offset - start >= live.block_bytes ||
      new_size > live.block_bytes - (new_offset - start)) {
    return InvalidArgumentError("heap narrow: range offset " + std::to_string(new_offset) +
                                " size " + std::to_string(new_size) +
                                " is not inside the block " +
                                Range(start, start + live.block_bytes));
  }
  if (new_offset == offset) {
    it->second.requested_bytes = new_size;
    return OkStatus();
  }
  live_.erase(it);
  live.lead = new_offset - start;
  live.requested_bytes = new_size;
  live_.emplace(new_offset, live);
  return OkStatus();
}

}  // namespace wharf::shm
