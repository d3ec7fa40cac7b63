// shm/spsc_ring.h: the two ends of a lock-free single-producer
// single-consumer ring of Descriptors that lives in shared memory and works
// across processes. The ring itself is bytes in a region (layout.h); this
// file holds the private state each end keeps about it.
//
// Protocol (docs/shm.md has the long form):
//   - producer and consumer indices count entries ever pushed / popped; they
//     only grow, and slot = index & (capacity - 1).
//   - the producer writes slots, then store-releases its index; the consumer
//     load-acquires the producer index before reading slots, and
//     store-releases its own index after copying them out, which the
//     producer load-acquires before reusing those slots.
//   - each end keeps a private copy of its own index (it never reads its own
//     index back from shared memory) and a cached copy of the peer's, which
//     it refreshes only when the cache says there is not enough room or
//     data; so in steady state each end touches the peer's cache line once
//     per batch, not once per entry.
//   - capacity and mask come from the caller's private Layout, never from
//     the shared header.
//
// These ends trust the peer: a garbage peer index cannot make them touch
// memory outside the ring's slots, but can make them read or overwrite
// garbage. The daemon wraps them in validator.h's ValidatingConsumer /
// ValidatingProducer, which vet the peer's index before adopting it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

#include "shm/layout.h"

namespace wharf::shm {

static_assert(std::atomic_ref<uint64_t>::is_always_lock_free,
              "ring indices must be lock-free (hence address-free) to work across processes");
static_assert(std::atomic_ref<uint64_t>::required_alignment <= alignof(RingIndex));

// One ring's memory in the caller's mapping: borrowed pointers plus the
// capacity from the caller's own Layout. The mapping must outlive every end
// built on it.
struct RingMemory {
  RingControl* control = nullptr;
  Descriptor* slots = nullptr;
  uint32_t entries = 0;  // a power of two
};

// The producing end. Owned by whoever produces; one thread at a time. Starts
// at index 0: build it once per region, before any traffic.
class SpscProducer {
 public:
  explicit SpscProducer(RingMemory memory);

  // Copies the longest prefix of `entries` that fits, makes it visible to
  // the consumer with one release store, and returns its length (0: full).
  size_t TryPush(std::span<const Descriptor> entries);
  bool TryPush(const Descriptor& entry) { return TryPush(std::span(&entry, 1)) == 1; }

  uint32_t capacity() const { return capacity_; }
  // Entries pushed so far (our index).
  uint64_t position() const { return producer_; }
  // The consumer index as last adopted.
  uint64_t cached_peer() const { return cached_consumer_; }

  // Building blocks for an end that vets the peer (ValidatingProducer):
  // Acquire-loads the consumer index from shared memory; untrusted.
  uint64_t LoadPeerIndex() const;
  // Adopts a consumer index (the caller checked it is sane).
  void AdoptPeerIndex(uint64_t consumer) { cached_consumer_ = consumer; }
  // Free slots according to the cached consumer index (0 if it is insane).
  size_t FreeSlots() const;
  // Copies entries into the slots after our index; not yet visible.
  // entries.size() must be <= FreeSlots().
  void Write(std::span<const Descriptor> entries);
  // Advances our index by n and release-stores it: the entries become visible.
  void Publish(size_t n);

 private:
  RingControl* const control_;
  Descriptor* const slots_;
  const uint32_t capacity_;
  const uint64_t mask_;
  uint64_t producer_ = 0;         // our index; the shared copy is write-only to us
  uint64_t cached_consumer_ = 0;  // the peer's index as last adopted
};

// The consuming end. Same ownership and thread rules as SpscProducer.
class SpscConsumer {
 public:
  explicit SpscConsumer(RingMemory memory);

  // Copies up to out.size() entries out of the ring into `out` (private
  // memory), releases their slots with one release store, returns how many
  // (0: empty).
  size_t TryPop(std::span<Descriptor> out);

  uint32_t capacity() const { return capacity_; }
  // Entries popped so far (our index).
  uint64_t position() const { return consumer_; }
  // The producer index as last adopted.
  uint64_t cached_peer() const { return cached_producer_; }

  // Building blocks for an end that vets the peer (ValidatingConsumer):
  // Acquire-loads the producer index from shared memory; untrusted.
  uint64_t LoadPeerIndex() const;
  // Adopts a producer index (the caller checked it is sane).
  void AdoptPeerIndex(uint64_t producer) { cached_producer_ = producer; }
  // Readable entries according to the cached producer index, at most capacity.
  size_t Readable() const;
  // Copies out.size() <= Readable() entries, starting at our index, into `out`
  // without releasing them.
  void Read(std::span<Descriptor> out) const;
  // Advances our index by n and release-stores it: the slots may be reused.
  void Release(size_t n);

 private:
  RingControl* const control_;
  const Descriptor* const slots_;
  const uint32_t capacity_;
  const uint64_t mask_;
  uint64_t consumer_ = 0;         // our index; the shared copy is write-only to us
  uint64_t cached_producer_ = 0;  // the peer's index as last adopted
};

}  // namespace wharf::shm
