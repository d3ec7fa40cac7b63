// transport/large_buffer_pool.h: LargeBufferPool, memory for messages of 64 KiB
// or more, kept for the next message once whoever holds one drops it. The
// message transports (tcp://, homa://, ucx://) receive large messages into it; the
// embedded engine's AllocateBuffer hands large send buffers out of it.
//
// Why: a fresh 1 MiB buffer per message is 256 page faults when the kernel
// (or the transport's copy) first touches it, and glibc gives freed blocks
// back (MADV_DONTNEED on a thread's arena) as readily as it takes them, so
// without reuse a bulk sender or receiver spends more CPU faulting pages in
// than moving them. Blocks in the pool stay mapped and touched.
//
// And the other way round: blocks are mapped by the pool itself (mmap), so
// that a block it lets go of goes back to the system at once. From glibc's
// heap, the pages a burst touched stayed with the process after the burst:
// a flood of first packets of large messages from many peers (garbage, or
// an incast) left wharfd at 60 MB instead of 8 long after every such RPC
// had ended. Kept blocks have an idle timeout too (ReleaseIdle): a pool
// that sits unused gives its memory back.
//
// What it does not do: decide which messages are pooled (its users do:
// messages of at least kMinBytes) or count them against a transport's
// incoming-memory limit (the transport charges what it takes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "wharf/buffer.h"

namespace wharf::transport {

// Owned through shared_ptr: its user (a transport, the engine) holds one
// reference and every Buffer lent from it another (Buffer::Wrap's rule), so
// the pool outlives the last message lent from it. Thread rules: Take is
// called by one thread at a time (the transport's, or the engine's caller
// under the host lock); Release (from a Buffer's destructor) on any thread; a
// mutex guards the kept blocks.
class LargeBufferPool final : public BufferOwner,
                              public std::enable_shared_from_this<LargeBufferPool> {
 public:
  // Messages shorter than this are not worth pooling: malloc recycles small
  // blocks without page faults, and the pool's lock and reference count
  // would cost more than they save.
  static constexpr size_t kMinBytes = 64u << 10;
  // New blocks are rounded up to this, so that messages of nearby sizes
  // share blocks.
  static constexpr size_t kGranule = 64u << 10;

  struct Limits {
    // Free blocks kept for reuse, and their total capacity; past either the
    // oldest kept block is freed. High enough that a burst of large
    // messages reuses blocks as the heap would; ReleaseIdle returns them.
    size_t max_blocks = 64;
    uint64_t max_bytes = 64ull << 20;
  };
  // How long a kept block may go unused before ReleaseIdle frees it:
  // between one and two of these.
  static constexpr DurationNs kIdleIntervalNs = kNsPerSec;

  // Counters, read under the lock.
  struct Stats {
    uint64_t reused = 0;      // Take served from a kept block
    uint64_t allocated = 0;   // Take that allocated a new block
    uint64_t freed = 0;       // blocks given back to the system (over a limit)
    uint64_t freed_idle = 0;  // of those, kept blocks unused for kIdleIntervalNs
    uint64_t kept_bytes = 0;  // gauge: capacity of the blocks kept now
    size_t kept_blocks = 0;   // gauge
  };

  static std::shared_ptr<LargeBufferPool> Create(const Limits& limits);
  ~LargeBufferPool() override;
  LargeBufferPool(const LargeBufferPool&) = delete;
  LargeBufferPool& operator=(const LargeBufferPool&) = delete;

  // A Buffer of exactly `size` bytes (uninitialised, Buffer::kHeadroom of
  // headroom in front, like Buffer::Allocate), from the smallest kept block
  // that holds it without wasting more than half, else from a new block.
  Buffer Take(size_t size) ABSL_LOCKS_EXCLUDED(mu_);

  // BufferOwner: a lent block comes back (kept, or freed over the limits).
  void Release(std::span<std::byte> whole) noexcept override ABSL_LOCKS_EXCLUDED(mu_);

  // The idle timeout: frees the blocks kept since the previous sweep and
  // not taken since. Its user calls it from its timer, as often as it
  // likes; a sweep happens at most every kIdleIntervalNs of `now_ns`.
  // Returns the number of blocks freed.
  size_t ReleaseIdle(TimeNs now_ns) ABSL_LOCKS_EXCLUDED(mu_);
  // Whether ReleaseIdle has anything to do (for users whose timer runs
  // only when they have a deadline).
  bool HasKeptBlocks() const ABSL_LOCKS_EXCLUDED(mu_);

  Stats stats() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  explicit LargeBufferPool(const Limits& limits) : limits_(limits) {
    kept_.reserve(limits.max_blocks + 1);
  }

  // A block: kPrefix bytes holding its capacity, then Buffer::kHeadroom, then
  // `capacity` bytes of data. `base` is the start of the allocation.
  struct Block {
    std::byte* base = nullptr;
    size_t capacity = 0;
    uint64_t kept_epoch = 0;  // the sweep epoch it was kept in
  };
  static constexpr size_t kPrefix = 64;  // keeps the data 64-byte aligned as Allocate does

  static Block NewBlock(size_t capacity);
  static void FreeBlock(const Block& block) noexcept;

  const Limits limits_;
  mutable Mutex mu_;
  // Oldest first; at most max_blocks + 1, so a vector (no allocation once
  // grown).
  std::vector<Block> kept_ ABSL_GUARDED_BY(mu_);
  Stats stats_ ABSL_GUARDED_BY(mu_);
  // Sweeps so far; blocks kept in an earlier epoch than the current one
  // are idle.
  uint64_t epoch_ ABSL_GUARDED_BY(mu_) = 0;
  TimeNs next_sweep_ns_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace wharf::transport
