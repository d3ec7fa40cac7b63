// libFuzzer target for the shm validator (src/shm/validator.h). The input is
// what a hostile application could write into its region:
//
//   [0]            mode: bit 0 set -> the header bytes are XORed onto a valid
//                  header (reaches deep field checks), clear -> taken raw
//   [1, 89)        the header's fields (everything before `reserved`, which
//                  the validator ignores); zero-padded if the input is short
//   [89, ...)      a program of ring operations, each an op byte and its
//                  operands: write producer/consumer indices (absolute or as
//                  a small step), write raw descriptor bytes into slots, pop
//                  through the ValidatingConsumer, push through the
//                  ValidatingProducer, or run the free validator functions
//                  on raw values.
//
// The checks: nothing crashes or reads out of bounds (ASan/UBSan), every
// descriptor a pop returns passes ValidateDescriptor, positions never pass
// what was validated, and a broken ring stays broken.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>

#include "shm/layout.h"
#include "shm/region.h"
#include "shm/validator.h"

namespace wharf::shm {
namespace {

constexpr Geometry kGeometry{.command_entries = 8, .completion_entries = 8, .heap_bytes = 8192};

DescriptorRules Rules() {
  return DescriptorRules{.heap_bytes = kGeometry.heap_bytes,
                         .max_message_bytes = 4096,
                         .opcodes = {Opcode::kNop, Opcode::kSend},
                         .known_flags = 0x1};
}

// Reads operands from the input; past the end it yields zeros.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool empty() const { return pos_ >= size_; }
  void Bytes(void* out, size_t n) {
    const size_t take = pos_ < size_ ? std::min(n, size_ - pos_) : 0;
    std::memcpy(out, data_ + pos_, take);
    std::memset(static_cast<uint8_t*>(out) + take, 0, n - take);
    pos_ += take;
  }
  uint8_t U8() {
    uint8_t v;
    Bytes(&v, 1);
    return v;
  }
  uint64_t U64() {
    uint64_t v;
    Bytes(&v, 8);
    return v;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

void Check(bool ok) {
  if (!ok) std::abort();
}

Region& SharedRegion() {
  static Region* region = Region::Create(kGeometry, "fuzz").value().release();
  return *region;
}

void FuzzHeader(Input& in, uint8_t mode, const Layout& layout) {
  RegionHeader header = MakeHeader(layout);
  uint8_t raw[offsetof(RegionHeader, reserved)];
  in.Bytes(raw, sizeof(raw));
  auto* bytes = reinterpret_cast<uint8_t*>(&header);
  for (size_t i = 0; i < sizeof(raw); ++i) bytes[i] = (mode & 1) ? bytes[i] ^ raw[i] : raw[i];
  const Status status = ValidateHeader(header, layout);
  // The validator accepts exactly the header MakeHeader writes (up to the
  // reserved bytes).
  RegionHeader want = MakeHeader(layout);
  std::memcpy(want.reserved, header.reserved, sizeof(want.reserved));
  Check(status.ok() == (std::memcmp(&want, &header, sizeof(header)) == 0));
}

void FuzzRings(Input& in, Region& region) {
  RingMemory command = region.command_ring();
  RingMemory completion = region.completion_ring();
  // Fresh rings for every input.
  std::memset(command.control, 0,
              region.layout().completion.control_offset - region.layout().command.control_offset);
  std::memset(completion.control, 0,
              region.layout().heap_offset - region.layout().completion.control_offset);
  const DescriptorRules rules = Rules();
  ValidatingConsumer consumer(command, "command ring", rules);
  ValidatingProducer producer(completion, "completion ring");
  Descriptor batch[17];

  for (int steps = 0; steps < 256 && !in.empty(); ++steps) {
    switch (in.U8() % 9) {
      case 0:  // absolute producer index
        command.control->producer.value = in.U64();
        break;
      case 1:  // producer index a small step from the consumer's position
        command.control->producer.value = consumer.position() + in.U8() - 8;
        break;
      case 2: {  // raw descriptor bytes into a slot
        const uint8_t slot = in.U8() % kGeometry.command_entries;
        in.Bytes(&command.slots[slot], sizeof(Descriptor));
        break;
      }
      case 3: {  // pop
        const bool was_broken = consumer.broken();
        const uint64_t before = consumer.position();
        const size_t want = in.U8() % 17;
        Result<size_t> n = consumer.TryPop(std::span(batch, want));
        if (was_broken) Check(!n.ok());
        if (!n.ok()) {
          Check(consumer.broken() && consumer.position() == before);
          break;
        }
        Check(*n <= want && consumer.position() == before + *n);
        for (size_t i = 0; i < *n; ++i) {
          Check(ValidateDescriptor("command ring", before + i, batch[i], rules).ok());
        }
        break;
      }
      case 4:  // absolute consumer index
        completion.control->consumer.value = in.U64();
        break;
      case 5:  // consumer index a small step back from the producer's position
        completion.control->consumer.value = producer.position() - in.U8() + 4;
        break;
      case 6: {  // push
        const bool was_broken = producer.broken();
        const uint64_t before = producer.position();
        const size_t want = in.U8() % 17;
        std::memset(batch, 0, sizeof(batch));
        Result<size_t> n = producer.TryPush(std::span(batch, want));
        if (was_broken) Check(!n.ok());
        Check(n.ok() ? producer.position() == before + *n : producer.position() == before);
        break;
      }
      case 7: {  // the index checks on raw values
        const uint64_t a = in.U64(), b = in.U64(), c = in.U64();
        const uint32_t capacity = static_cast<uint32_t>(in.U64());
        const bool producer_ok = ValidateProducerIndex("r", a, b, c, capacity).ok();
        Check(producer_ok == (a >= b && a >= c && a - c <= capacity));
        const bool consumer_ok = ValidateConsumerIndex("r", a, b, c).ok();
        Check(consumer_ok == (a >= b && a <= c));
        break;
      }
      case 8: {  // the descriptor check on raw bytes
        Descriptor d;
        in.Bytes(&d, sizeof(d));
        const bool ok = ValidateDescriptor("r", 0, d, rules).ok();
        Check(ok == DescriptorIsValid(d, rules));
        const bool in_heap =
            d.heap_offset <= rules.heap_bytes && d.length <= rules.heap_bytes - d.heap_offset;
        Check(ok == (rules.opcodes.Contains(d.opcode) && (d.flags & ~rules.known_flags) == 0 &&
                     d.length <= rules.max_message_bytes && in_heap));
        break;
      }
    }
  }
}

}  // namespace
}  // namespace wharf::shm

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace wharf::shm;
  Region& region = SharedRegion();
  Input in(data, size);
  const uint8_t mode = in.U8();
  FuzzHeader(in, mode, region.layout());
  FuzzRings(in, region);
  return 0;
}
