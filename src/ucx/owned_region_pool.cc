// OwnedRegionPool: one aligned block, carved by a HeapAllocator.
#include "ucx/owned_region_pool.h"

namespace wharf::ucx {

Result<std::unique_ptr<OwnedRegionPool>> OwnedRegionPool::Create(uint64_t bytes) {
  std::unique_ptr<OwnedRegionPool> pool(new OwnedRegionPool());
  const uint64_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded == 0) return pool;
  // Virtual memory only until regions are written: the kernel commits pages
  // as they are touched.
  pool->memory_.reset(new std::byte[rounded + kAlignment]);
  const auto raw = reinterpret_cast<uintptr_t>(pool->memory_.get());
  pool->base_ = pool->memory_.get() + ((kAlignment - raw % kAlignment) % kAlignment);
  WHARF_ASSIGN_OR_RETURN(shm::HeapAllocator allocator,
                         shm::HeapAllocator::Create(0, rounded, kAlignment));
  pool->allocator_.emplace(std::move(allocator));
  return pool;
}

std::span<std::byte> OwnedRegionPool::Take(uint64_t bytes, uint64_t alignment) {
  if (!allocator_ || alignment > kAlignment || bytes == 0) return {};
  Result<uint64_t> offset = allocator_->Allocate(bytes);
  if (!offset.ok()) return {};
  return {base_ + *offset, bytes};
}

void OwnedRegionPool::Give(std::span<std::byte> block) {
  if (allocator_ && !block.empty()) (void)allocator_->Free(block.data() - base_);
}

}  // namespace wharf::ucx
