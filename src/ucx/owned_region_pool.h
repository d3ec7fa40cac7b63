// ucx/owned_region_pool.h: OwnedRegionPool, the memory a ucx:// endpoint
// lends regions from when its host gives it none (ucx.pool_bytes): one
// block of this process's memory, 4 KiB-aligned, carved by a best-fit
// shm::HeapAllocator. wharfd gives each application's transport the
// application's heap instead (transport::RemoteMemory::UsePool).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "shm/heap_allocator.h"
#include "transport/remote_memory.h"
#include "wharf/result.h"

namespace wharf::ucx {

// Single-threaded, like the transport that owns it.
class OwnedRegionPool final : public transport::RegionPool {
 public:
  static constexpr uint64_t kAlignment = 4096;

  // `bytes` rounded up to kAlignment; 0 gives a pool with no room.
  static Result<std::unique_ptr<OwnedRegionPool>> Create(uint64_t bytes);

  std::span<std::byte> Take(uint64_t bytes, uint64_t alignment) override;
  void Give(std::span<std::byte> block) override;

 private:
  OwnedRegionPool() = default;

  std::unique_ptr<std::byte[]> memory_;
  std::byte* base_ = nullptr;  // the first kAlignment-aligned byte of memory_
  std::optional<shm::HeapAllocator> allocator_;
};

}  // namespace wharf::ucx
