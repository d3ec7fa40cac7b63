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
// Sleep and wake-up (docs/shm.md "Sleeping and waking"): a consumer that
// found the ring empty for a while sleeps on an eventfd (doorbell.h) that the
// producer rings. To ring only when someone sleeps, and still never lose a
// wake-up, the two sides run Dekker's pattern on two words in different
// cache lines: the producer index and the consumer's `waiting` flag.
//
//   consumer                              producer
//   SetWaiting(true):                     Write(); Publish():
//     store waiting = 1                     store-release producer index
//     seq_cst fence                       PeerWaiting():
//   TryPop() again (loads the               seq_cst fence
//     producer index); if empty:            load waiting
//     sleep on the doorbell                 if set: ring the doorbell
//   SetWaiting(false); drain doorbell
//
// Each side stores, fences, then loads the other's word. The two seq_cst
// fences are ordered one way or the other, so at least one side sees the
// other's store: either the consumer's re-check sees the new entry (and does
// not sleep) or the producer sees `waiting` (and rings; the eventfd keeps the
// count, so a ring that lands before the consumer calls poll() still wakes
// it). Both can see each other, which costs one spurious doorbell, never a
// lost one. Plain release/acquire is not enough: it allows both loads to read
// the old values (store-buffering), the consumer to sleep on an entry already
// published and the producer not to ring. The fences are hardware fences
// (mfence / dmb ish), so they order the two processes' accesses to the
// shared lines like two threads'.
//
// `waiting` is a hint owned by the consumer. A hostile peer that writes its
// own flag wrong (or clears ours) only causes extra or missing doorbells for
// rings it is party to: missing ones delay its own traffic, extra ones cost
// the other side a wake-up. It is never used as a count or an address.
//
// `idle` (SetIdle / PeerIdle), on the same line, needs no protocol: the
// consumer says it spins waiting for entries with no work of its own, and a
// producer that shares its CPU and spins too may keep the CPU longer instead
// of yielding it to a process that would only yield it back. A wrong value
// costs the liar CPU time or the producer a yield, nothing more.
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
static_assert(std::atomic_ref<uint32_t>::is_always_lock_free,
              "the waiting flag must be lock-free to work across processes");

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

  // After Publish (or TryPush): whether the consumer said it is going to
  // sleep, so the caller must ring its doorbell. seq_cst fence, then a load
  // of the consumer's `waiting` word (see the protocol above). Untrusted.
  bool PeerWaiting() const { return PeerWaitingToken() != 0; }
  // The same, with the consumer's token: a consumer that numbers its sleeps
  // (SetWaitingToken) lets the producer ring once per sleep, not once per
  // batch it publishes while the consumer is still waking up.
  uint32_t PeerWaitingToken() const;
  // The consumer's `idle` hint (SpscConsumer::SetIdle): a relaxed load, no
  // fence. Untrusted.
  bool PeerIdle() const;

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

  // Announces (true) or withdraws (false) that we are about to sleep on the
  // doorbell. Setting it stores the flag and then issues a seq_cst fence;
  // the caller must then look for entries once more (TryPop) and sleep only
  // if there are none. Clearing it is a plain store: a producer that still
  // sees the old value rings once too often, which is harmless.
  void SetWaiting(bool waiting) { SetWaitingToken(waiting ? 1 : 0); }
  // The same with a token naming this sleep (nonzero: waiting), so that a
  // producer remembering the last token it rang for rings once per sleep.
  void SetWaitingToken(uint32_t token);
  // Says whether we spin waiting for entries with nothing else to do (true)
  // or have work of our own (false). A relaxed store, made only when the
  // value changes (the line is the producer's to read on every pass).
  void SetIdle(bool idle);

 private:
  RingControl* const control_;
  const Descriptor* const slots_;
  const uint32_t capacity_;
  const uint64_t mask_;
  uint64_t consumer_ = 0;         // our index; the shared copy is write-only to us
  uint64_t cached_producer_ = 0;  // the peer's index as last adopted
  bool idle_ = false;             // what we last stored in `idle`
};

}  // namespace wharf::shm
