// The shared-memory validator and the validating ring ends (validator.h).
#include "shm/validator.h"

#include <algorithm>
#include <charconv>
#include <utility>

namespace wharf::shm {
namespace {

std::string Dec(uint64_t v) { return std::to_string(v); }

std::string Hex(uint64_t v) {
  char buf[2 + 16];
  buf[0] = '0';
  buf[1] = 'x';
  auto [end, ec] = std::to_chars(buf + 2, buf + sizeof(buf), v, 16);
  (void)ec;  // 16 hex digits always fit
  return std::string(buf, end);
}

// "region header: <field> <got> (expected <want>)", or ok if equal.
Status CheckField(std::string_view field, uint64_t got, uint64_t want, bool hex = false) {
  if (got == want) return OkStatus();
  return DataLossError("region header: " + std::string(field) + " " + (hex ? Hex(got) : Dec(got)) +
                       " (expected " + (hex ? Hex(want) : Dec(want)) + ")");
}

Status CheckRing(std::string_view ring, const RingRecord& got, const RingRecord& want) {
  const std::string r(ring);
  WHARF_RETURN_IF_ERROR(
      CheckField(r + " ring control offset", got.control_offset, want.control_offset));
  WHARF_RETURN_IF_ERROR(CheckField(r + " ring slots offset", got.slots_offset, want.slots_offset));
  WHARF_RETURN_IF_ERROR(CheckField(r + " ring entries", got.entries, want.entries));
  WHARF_RETURN_IF_ERROR(CheckField(r + " ring entry bytes", got.entry_bytes, want.entry_bytes));
  return OkStatus();
}

}  // namespace

Status ValidateHeader(const RegionHeader& header, const Layout& expected) {
  WHARF_RETURN_IF_ERROR(CheckField("magic", header.magic, kRegionMagic, /*hex=*/true));
  WHARF_RETURN_IF_ERROR(CheckField("layout version", header.layout_version, kLayoutVersion));
  WHARF_RETURN_IF_ERROR(CheckField("header bytes", header.header_bytes, sizeof(RegionHeader)));
  WHARF_RETURN_IF_ERROR(CheckField("total bytes", header.total_bytes, expected.total_bytes));
  WHARF_RETURN_IF_ERROR(CheckRing("command", header.command, expected.command));
  WHARF_RETURN_IF_ERROR(CheckRing("completion", header.completion, expected.completion));
  WHARF_RETURN_IF_ERROR(CheckField("heap offset", header.heap_offset, expected.heap_offset));
  WHARF_RETURN_IF_ERROR(CheckField("heap bytes", header.heap_bytes, expected.heap_bytes));
  return OkStatus();
}

Status ValidateProducerIndex(std::string_view ring, uint64_t producer, uint64_t last,
                             uint64_t consumer, uint32_t capacity) {
  // Runs on every index refresh: builds no string unless something is wrong.
  const auto r = [ring] { return std::string(ring); };
  if (producer < last) {
    return DataLossError(r() + ": producer index moved backwards from " + Dec(last) + " to " +
                         Dec(producer));
  }
  if (producer < consumer) {
    return DataLossError(r() + ": producer index " + Dec(producer) + " is behind consumer " +
                         Dec(consumer));
  }
  if (producer - consumer > capacity) {
    return DataLossError(r() + ": producer index " + Dec(producer) + " is " +
                         Dec(producer - consumer) + " ahead of consumer " + Dec(consumer) +
                         " (capacity " + Dec(capacity) + ")");
  }
  return OkStatus();
}

Status ValidateConsumerIndex(std::string_view ring, uint64_t consumer, uint64_t last,
                             uint64_t producer) {
  const auto r = [ring] { return std::string(ring); };
  if (consumer < last) {
    return DataLossError(r() + ": consumer index moved backwards from " + Dec(last) + " to " +
                         Dec(consumer));
  }
  if (consumer > producer) {
    return DataLossError(r() + ": consumer index " + Dec(consumer) + " is " +
                         Dec(consumer - producer) + " ahead of producer " + Dec(producer));
  }
  return OkStatus();
}

bool DescriptorIsValid(const Descriptor& descriptor, const DescriptorRules& rules) {
  return rules.opcodes.Contains(descriptor.opcode) &&
         (descriptor.flags & ~rules.known_flags) == 0 &&
         descriptor.length <= rules.max_message_bytes &&
         descriptor.heap_offset <= rules.heap_bytes &&
         descriptor.length <= rules.heap_bytes - descriptor.heap_offset;
}

Status ValidateDescriptor(std::string_view ring, uint64_t index, const Descriptor& descriptor,
                          const DescriptorRules& rules) {
  if (DescriptorIsValid(descriptor, rules)) return OkStatus();
  const auto where = [&] {
    return std::string(ring) + ": descriptor at index " + Dec(index) + ": ";
  };
  if (!rules.opcodes.Contains(descriptor.opcode)) {
    const std::string_view name = OpcodeName(static_cast<Opcode>(descriptor.opcode));
    if (name == "UNKNOWN") {
      return InvalidArgumentError(where() + "unknown opcode " + Dec(descriptor.opcode));
    }
    return InvalidArgumentError(where() + "opcode " + std::string(name) + " (" +
                                Dec(descriptor.opcode) + ") is not accepted on this ring");
  }
  if ((descriptor.flags & ~rules.known_flags) != 0) {
    return InvalidArgumentError(where() + "unknown flags " + Hex(descriptor.flags) + " (known " +
                                Hex(rules.known_flags) + ")");
  }
  if (descriptor.length > rules.max_message_bytes) {
    return InvalidArgumentError(where() + "length " + Dec(descriptor.length) +
                                " exceeds the maximum message size " +
                                Dec(rules.max_message_bytes));
  }
  // Written so that nothing overflows: offset + length is never computed.
  if (descriptor.heap_offset > rules.heap_bytes ||
      descriptor.length > rules.heap_bytes - descriptor.heap_offset) {
    return InvalidArgumentError(where() + "heap range offset " + Dec(descriptor.heap_offset) +
                                " length " + Dec(descriptor.length) +
                                " does not fit in the heap of " + Dec(rules.heap_bytes) + " bytes");
  }
  // Unreachable while the checks above mirror DescriptorIsValid; if they ever
  // drift apart, reject.
  return InternalError(where() + "rejected by DescriptorIsValid for no reason given here");
}

ValidatingConsumer::ValidatingConsumer(RingMemory memory, std::string ring, DescriptorRules rules)
    : ring_(memory), name_(std::move(ring)), rules_(rules) {}

Result<size_t> ValidatingConsumer::TryPop(std::span<Descriptor> out) {
  if (broken()) return broken_;
  if (out.empty()) return size_t{0};
  if (ring_.Readable() < out.size()) {
    const uint64_t producer = ring_.LoadPeerIndex();  // the one read of it; checked, then adopted
    if (producer != ring_.cached_peer()) {
      Status status = ValidateProducerIndex(name_, producer, ring_.cached_peer(), ring_.position(),
                                            ring_.capacity());
      if (!status.ok()) {
        broken_ = std::move(status);
        return broken_;
      }
      ring_.AdoptPeerIndex(producer);
    }
  }
  const size_t n = std::min(out.size(), ring_.Readable());
  if (n == 0) return size_t{0};
  ring_.Read(out.first(n));
  for (size_t i = 0; i < n; ++i) {
    if (DescriptorIsValid(out[i], rules_)) continue;
    Status status = ValidateDescriptor(name_, ring_.position() + i, out[i], rules_);
    broken_ = std::move(status);
    if (i == 0) return broken_;
    ring_.Release(i);  // the valid prefix; the bad descriptor stays in the ring
    return i;
  }
  ring_.Release(n);
  return n;
}

ValidatingProducer::ValidatingProducer(RingMemory memory, std::string ring)
    : ring_(memory), name_(std::move(ring)) {}

Result<size_t> ValidatingProducer::TryPush(std::span<const Descriptor> entries) {
  if (broken()) return broken_;
  if (entries.empty()) return size_t{0};
  if (ring_.FreeSlots() < entries.size()) {
    const uint64_t consumer = ring_.LoadPeerIndex();
    if (consumer != ring_.cached_peer()) {
      Status status = ValidateConsumerIndex(name_, consumer, ring_.cached_peer(), ring_.position());
      if (!status.ok()) {
        broken_ = std::move(status);
        return broken_;
      }
      ring_.AdoptPeerIndex(consumer);
    }
  }
  const size_t n = std::min(entries.size(), ring_.FreeSlots());
  if (n == 0) return size_t{0};
  ring_.Write(entries.first(n));
  ring_.Publish(n);
  return n;
}

}  // namespace wharf::shm
