// LargeBufferPool: taking a block that fits, lending it as a Buffer, keeping it
// when it comes back.
#include "transport/large_buffer_pool.h"

#include <sys/mman.h>

#include <cstring>
#include <new>

namespace wharf::transport {

std::shared_ptr<LargeBufferPool> LargeBufferPool::Create(const Limits& limits) {
  return std::shared_ptr<LargeBufferPool>(new LargeBufferPool(limits));
}

LargeBufferPool::~LargeBufferPool() {
  for (const Block& b : kept_) FreeBlock(b);
}

LargeBufferPool::Block LargeBufferPool::NewBlock(size_t capacity) {
  Block b;
  b.capacity = capacity;
  // Page-aligned, so the data (after kPrefix) is 64-byte aligned; only the
  // pages a message touches become resident.
  void* base = ::mmap(nullptr, kPrefix + Buffer::kHeadroom + capacity, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) throw std::bad_alloc();  // as operator new would
  b.base = static_cast<std::byte*>(base);
  std::memcpy(b.base, &capacity, sizeof capacity);
  return b;
}

void LargeBufferPool::FreeBlock(const Block& block) noexcept {
  ::munmap(block.base, kPrefix + Buffer::kHeadroom + block.capacity);
}

Buffer LargeBufferPool::Take(size_t size) {
  Block block;
  {
    MutexLock lock(mu_);
    // Smallest kept block that holds `size` and is at most twice it (a
    // small message must not pin a large block).
    auto best = kept_.end();
    for (auto it = kept_.begin(); it != kept_.end(); ++it) {
      if (it->capacity < size || it->capacity / 2 > size) continue;
      if (best == kept_.end() || it->capacity < best->capacity) best = it;
    }
    if (best != kept_.end()) {
      block = *best;
      kept_.erase(best);
      stats_.kept_bytes -= block.capacity;
      stats_.kept_blocks = kept_.size();
      ++stats_.reused;
    } else {
      ++stats_.allocated;
    }
  }
  if (block.base == nullptr) block = NewBlock((size + kGranule - 1) / kGranule * kGranule);
  return Buffer::Wrap(std::span(block.base + kPrefix, Buffer::kHeadroom + size), shared_from_this(),
                      Buffer::kHeadroom);
}

void LargeBufferPool::Release(std::span<std::byte> whole) noexcept {
  Block block;
  block.base = whole.data() - kPrefix;
  std::memcpy(&block.capacity, block.base, sizeof block.capacity);
  std::vector<Block> evicted;  // empty (no allocation) unless over a limit
  {
    MutexLock lock(mu_);
    block.kept_epoch = epoch_;
    kept_.push_back(block);
    stats_.kept_bytes += block.capacity;
    // The newest stays (it fits what arrives now); the oldest go.
    while (kept_.size() > limits_.max_blocks || stats_.kept_bytes > limits_.max_bytes) {
      evicted.push_back(kept_.front());
      stats_.kept_bytes -= kept_.front().capacity;
      kept_.erase(kept_.begin());
      ++stats_.freed;
    }
    stats_.kept_blocks = kept_.size();
  }
  // Outside the lock: freeing a large block may be a system call.
  for (const Block& b : evicted) FreeBlock(b);
}

size_t LargeBufferPool::ReleaseIdle(TimeNs now_ns) {
  std::vector<Block> idle;
  {
    MutexLock lock(mu_);
    if (now_ns < next_sweep_ns_) return 0;
    next_sweep_ns_ = now_ns + kIdleIntervalNs;
    // Kept before the previous sweep and not taken since: idle for at
    // least one interval.
    for (auto it = kept_.begin(); it != kept_.end();) {
      if (it->kept_epoch < epoch_) {
        idle.push_back(*it);
        stats_.kept_bytes -= it->capacity;
        ++stats_.freed;
        ++stats_.freed_idle;
        it = kept_.erase(it);
      } else {
        ++it;
      }
    }
    stats_.kept_blocks = kept_.size();
    ++epoch_;
  }
  for (const Block& b : idle) FreeBlock(b);
  return idle.size();
}

bool LargeBufferPool::HasKeptBlocks() const {
  MutexLock lock(mu_);
  return !kept_.empty();
}

LargeBufferPool::Stats LargeBufferPool::stats() const {
  MutexLock lock(mu_);
  return stats_;
}

}  // namespace wharf::transport
