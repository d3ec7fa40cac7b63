// The SPSC ring ends declared in spsc_ring.h.
#include "shm/spsc_ring.h"

#include <algorithm>
#include <cstring>

namespace wharf::shm {
namespace {

uint64_t LoadAcquire(RingIndex& index) {
  return std::atomic_ref<uint64_t>(index.value).load(std::memory_order_acquire);
}

void StoreRelease(RingIndex& index, uint64_t value) {
  std::atomic_ref<uint64_t>(index.value).store(value, std::memory_order_release);
}

}  // namespace

SpscProducer::SpscProducer(RingMemory memory)
    : control_(memory.control),
      slots_(memory.slots),
      capacity_(memory.entries),
      mask_(uint64_t{memory.entries} - 1) {}

uint64_t SpscProducer::LoadPeerIndex() const { return LoadAcquire(control_->consumer); }

size_t SpscProducer::FreeSlots() const {
  // Unsigned: a consumer index ahead of ours wraps to a huge `used`, which
  // reads as "full" rather than as a huge amount of room.
  const uint64_t used = producer_ - cached_consumer_;
  return used >= capacity_ ? 0 : static_cast<size_t>(capacity_ - used);
}

void SpscProducer::Write(std::span<const Descriptor> entries) {
  // At most two contiguous runs: up to the end of the slot array, then from
  // its start.
  const uint64_t first_slot = producer_ & mask_;
  const size_t first_run = std::min<size_t>(entries.size(), capacity_ - first_slot);
  std::memcpy(slots_ + first_slot, entries.data(), first_run * sizeof(Descriptor));
  std::memcpy(slots_, entries.data() + first_run,
              (entries.size() - first_run) * sizeof(Descriptor));
}

void SpscProducer::Publish(size_t n) {
  producer_ += n;
  StoreRelease(control_->producer, producer_);
}

uint32_t SpscProducer::PeerWaitingToken() const {
  // Orders our producer-index store (Publish) before the load below; pairs
  // with the fence in SpscConsumer::SetWaiting.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return std::atomic_ref<uint32_t>(control_->consumer.waiting).load(std::memory_order_relaxed);
}

bool SpscProducer::PeerIdle() const {
  return std::atomic_ref<uint32_t>(control_->consumer.idle).load(std::memory_order_relaxed) != 0;
}

size_t SpscProducer::TryPush(std::span<const Descriptor> entries) {
  if (FreeSlots() < entries.size()) AdoptPeerIndex(LoadPeerIndex());
  const size_t n = std::min(entries.size(), FreeSlots());
  if (n == 0) return 0;
  Write(entries.first(n));
  Publish(n);
  return n;
}

SpscConsumer::SpscConsumer(RingMemory memory)
    : control_(memory.control),
      slots_(memory.slots),
      capacity_(memory.entries),
      mask_(uint64_t{memory.entries} - 1) {}

uint64_t SpscConsumer::LoadPeerIndex() const { return LoadAcquire(control_->producer); }

size_t SpscConsumer::Readable() const {
  // Clamped so that an insane producer index can at worst make us read
  // each slot once, never loop past the slot array.
  return static_cast<size_t>(std::min<uint64_t>(cached_producer_ - consumer_, capacity_));
}

void SpscConsumer::Read(std::span<Descriptor> out) const {
  const uint64_t first_slot = consumer_ & mask_;
  const size_t first_run = std::min<size_t>(out.size(), capacity_ - first_slot);
  std::memcpy(out.data(), slots_ + first_slot, first_run * sizeof(Descriptor));
  std::memcpy(out.data() + first_run, slots_, (out.size() - first_run) * sizeof(Descriptor));
}

void SpscConsumer::Release(size_t n) {
  consumer_ += n;
  StoreRelease(control_->consumer, consumer_);
}

void SpscConsumer::SetWaitingToken(uint32_t token) {
  std::atomic_ref<uint32_t>(control_->consumer.waiting).store(token, std::memory_order_relaxed);
  // Orders the store above before the caller's next load of the producer
  // index; pairs with the fence in SpscProducer::PeerWaiting.
  if (token != 0) std::atomic_thread_fence(std::memory_order_seq_cst);
}

void SpscConsumer::SetIdle(bool idle) {
  if (idle == idle_) return;
  idle_ = idle;
  std::atomic_ref<uint32_t>(control_->consumer.idle).store(idle ? 1 : 0, std::memory_order_relaxed);
}

size_t SpscConsumer::TryPop(std::span<Descriptor> out) {
  if (Readable() < out.size()) AdoptPeerIndex(LoadPeerIndex());
  const size_t n = std::min(out.size(), Readable());
  if (n == 0) return 0;
  Read(out.first(n));
  Release(n);
  return n;
}

}  // namespace wharf::shm
