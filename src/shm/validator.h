// shm/validator.h: the checks wharfd runs on everything it reads from a
// region the application can write, and the ring ends that run them.
//
// Rule: shared memory is input. Every value is copied into private memory
// once, checked there, and only the copy is used (the application may change
// the original between two reads). A failed check is a Status naming the
// ring, field and values, never an assert, a crash, a hang or a read outside
// the region. Whether to tear the application down is the daemon's call.
//
// Codes: kDataLoss for a corrupt header or ring index (the region's own
// bookkeeping is broken); kInvalidArgument for a descriptor that asks for
// something impossible.
#pragma once

#include <bitset>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include "shm/layout.h"
#include "shm/spsc_ring.h"
#include "wharf/result.h"

namespace wharf::shm {

// Checks every header field against the Layout this side computed itself:
// magic, layout version, header size, total size, both ring records (control
// and slot offsets, entries, entry size) and the heap's offset and size.
// Reserved bytes are ignored.
Status ValidateHeader(const RegionHeader& header, const Layout& expected);

// The consumer's check of a producer index it just loaded. `last` is the
// producer index it adopted before and `consumer` its own index (in a sane
// ring consumer <= last). The index must not move backwards and must not be
// more than `capacity` ahead of `consumer`.
Status ValidateProducerIndex(std::string_view ring, uint64_t producer, uint64_t last,
                             uint64_t consumer, uint32_t capacity);

// The producer's check of a consumer index it just loaded. `last` is the
// consumer index it adopted before, `producer` its own index. The index must
// not move backwards and must not pass `producer`.
Status ValidateConsumerIndex(std::string_view ring, uint64_t consumer, uint64_t last,
                             uint64_t producer);

// Which opcodes a ring may carry. Values at or above kOpcodeLimit are never
// in the set.
class OpcodeSet {
 public:
  OpcodeSet() = default;
  OpcodeSet(std::initializer_list<Opcode> opcodes) {
    for (Opcode op : opcodes) Add(op);
  }
  void Add(Opcode op) {
    if (static_cast<uint16_t>(op) < kOpcodeLimit) bits_.set(static_cast<uint16_t>(op));
  }
  bool Contains(uint16_t raw) const { return raw < kOpcodeLimit && bits_.test(raw); }

 private:
  std::bitset<kOpcodeLimit> bits_;
};

// What a descriptor on one ring may say. Filled by the daemon from its own
// Layout and configuration, never from the region.
struct DescriptorRules {
  uint64_t heap_bytes = 0;         // the heap's size from the private Layout
  uint64_t max_message_bytes = 0;  // configured ceiling on `length`
  OpcodeSet opcodes;               // opcodes accepted on this ring
  uint16_t known_flags = 0;        // flag bits accepted; any other bit is an error
};

// Checks one descriptor (already copied out of the ring): opcode in the set,
// no unknown flags, length <= max_message_bytes, and [heap_offset,
// heap_offset + length) inside the heap without overflow. `index` is its
// ring index, for the message.
Status ValidateDescriptor(std::string_view ring, uint64_t index, const Descriptor& descriptor,
                          const DescriptorRules& rules);
// The same checks as a bool, for the per-entry fast path: no Status is built
// unless something is wrong. ValidateDescriptor(...).ok() == DescriptorIsValid(...).
bool DescriptorIsValid(const Descriptor& descriptor, const DescriptorRules& rules);

// The consuming end wharfd uses on a ring the application produces (the
// command ring). Owned by the daemon's per-application state; one thread.
//
// Every producer index it loads is checked before it is adopted and every
// descriptor after it is copied out. The first failure latches: the ring is
// broken for good and every later TryPop returns the same Status, so the
// daemon cannot act on anything that follows garbage.
class ValidatingConsumer {
 public:
  // `ring` names the ring in messages ("command ring").
  ValidatingConsumer(RingMemory memory, std::string ring, DescriptorRules rules);

  // Pops up to out.size() descriptors into `out` and returns how many, all
  // valid. If one fails validation, the valid ones before it are returned
  // (and consumed) first and the failure comes from the next call; the bad
  // one is never consumed or returned.
  Result<size_t> TryPop(std::span<Descriptor> out);

  bool broken() const { return !broken_.ok(); }
  // The latched failure (ok while the ring is sound).
  const Status& status() const { return broken_; }
  uint64_t position() const { return ring_.position(); }
  // The sleep/wake protocol of spsc_ring.h, on the wrapped end.
  void SetWaiting(bool waiting) { ring_.SetWaiting(waiting); }
  void SetWaitingToken(uint32_t token) { ring_.SetWaitingToken(token); }
  // Whether the producer index moved past ours: a hint (unvalidated; TryPop
  // checks it), for deciding not to sleep.
  bool HasEntries() const { return ring_.LoadPeerIndex() != ring_.position(); }
  uint32_t capacity() const { return ring_.capacity(); }

 private:
  SpscConsumer ring_;
  const std::string name_;
  const DescriptorRules rules_;
  Status broken_;  // first failure; ok until then
};

// The producing end wharfd uses on a ring the application consumes (the
// completion ring). Same ownership and latching as ValidatingConsumer; it
// checks each consumer index before adopting it (it writes the descriptors
// itself, so there is nothing else to check).
class ValidatingProducer {
 public:
  ValidatingProducer(RingMemory memory, std::string ring);

  // Pushes the longest prefix of `entries` that fits; returns its length.
  Result<size_t> TryPush(std::span<const Descriptor> entries);

  bool broken() const { return !broken_.ok(); }
  const Status& status() const { return broken_; }
  uint64_t position() const { return ring_.position(); }
  // The sleep/wake protocol of spsc_ring.h; the application's flag is a hint
  // that only decides whether it gets a doorbell.
  bool PeerWaiting() const { return ring_.PeerWaiting(); }
  uint32_t PeerWaitingToken() const { return ring_.PeerWaitingToken(); }
  // The application's hint that it spins waiting for entries with no work of
  // its own (SpscConsumer::SetIdle); it only decides how long wharfd keeps a
  // CPU they share before yielding it.
  bool PeerIdle() const { return ring_.PeerIdle(); }
  uint32_t capacity() const { return ring_.capacity(); }

 private:
  SpscProducer ring_;
  const std::string name_;
  Status broken_;
};

}  // namespace wharf::shm
