#include "shm/validator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "shm/forked_child_testing.h"
#include "shm/region.h"

namespace wharf::shm {
namespace {

using ::testing::HasSubstr;
using testutil::Backoff;
using testutil::Deadline;
using testutil::ForkedChild;

constexpr Geometry kGeometry{.command_entries = 64, .completion_entries = 64, .heap_bytes = 65536};
constexpr uint64_t kMaxMessage = 16384;

DescriptorRules Rules() {
  return DescriptorRules{.heap_bytes = kGeometry.heap_bytes,
                         .max_message_bytes = kMaxMessage,
                         .opcodes = {Opcode::kNop, Opcode::kSend},
                         .known_flags = 0x3};
}

Descriptor Valid(uint64_t cookie = 1) {
  Descriptor d{};
  d.opcode = static_cast<uint16_t>(Opcode::kSend);
  d.cookie = cookie;
  d.heap_offset = 4096;
  d.length = 1000;
  return d;
}

// ValidateHeader

TEST(ValidateHeaderTest, AcceptsWhatCreateWrites) {
  const Layout layout = ComputeLayout(kGeometry).value();
  EXPECT_TRUE(ValidateHeader(MakeHeader(layout), layout).ok());
}

TEST(ValidateHeaderTest, IgnoresReservedBytes) {
  const Layout layout = ComputeLayout(kGeometry).value();
  RegionHeader h = MakeHeader(layout);
  std::memset(h.reserved, 0xff, sizeof(h.reserved));
  EXPECT_TRUE(ValidateHeader(h, layout).ok());
}

struct HeaderCorruption {
  std::string name;
  std::function<void(RegionHeader&)> corrupt;
  std::string message;  // expected, in full
};

TEST(ValidateHeaderTest, NamesEachCorruptField) {
  const Layout layout = ComputeLayout(kGeometry).value();
  const std::vector<HeaderCorruption> cases = {
      {"magic", [](RegionHeader& h) { h.magic = 0x1234; },
       "region header: magic 0x1234 (expected 0x4d48534652414857)"},
      {"version", [](RegionHeader& h) { h.layout_version = kLayoutVersion + 1; },
       "region header: layout version " + std::to_string(kLayoutVersion + 1) + " (expected " +
           std::to_string(kLayoutVersion) + ")"},
      {"header bytes", [](RegionHeader& h) { h.header_bytes = 8192; },
       "region header: header bytes 8192 (expected 4096)"},
      {"total", [](RegionHeader& h) { h.total_bytes = UINT64_MAX; },
       "region header: total bytes 18446744073709551615 (expected " +
           std::to_string(layout.total_bytes) + ")"},
      {"cmd control", [](RegionHeader& h) { h.command.control_offset = 0; },
       "region header: command ring control offset 0 (expected 4096)"},
      {"cmd slots", [](RegionHeader& h) { h.command.slots_offset += 64; },
       "region header: command ring slots offset 4288 (expected 4224)"},
      {"cmd entries", [](RegionHeader& h) { h.command.entries = 1u << 31; },
       "region header: command ring entries 2147483648 (expected 64)"},
      {"cmd entry bytes", [](RegionHeader& h) { h.command.entry_bytes = 128; },
       "region header: command ring entry bytes 128 (expected 64)"},
      {"cpl control", [](RegionHeader& h) { h.completion.control_offset = 1; },
       "region header: completion ring control offset 1 (expected 12288)"},
      {"cpl slots", [](RegionHeader& h) { h.completion.slots_offset = 0; },
       "region header: completion ring slots offset 0 (expected 12416)"},
      {"cpl entries", [](RegionHeader& h) { h.completion.entries = 0; },
       "region header: completion ring entries 0 (expected 64)"},
      {"cpl entry bytes", [](RegionHeader& h) { h.completion.entry_bytes = 0; },
       "region header: completion ring entry bytes 0 (expected 64)"},
      {"heap offset", [](RegionHeader& h) { h.heap_offset = UINT64_MAX - 4095; },
       "region header: heap offset 18446744073709547520 (expected 20480)"},
      {"heap bytes", [](RegionHeader& h) { h.heap_bytes = 1; },
       "region header: heap bytes 1 (expected 65536)"},
  };
  for (const HeaderCorruption& c : cases) {
    RegionHeader h = MakeHeader(layout);
    c.corrupt(h);
    const Status status = ValidateHeader(h, layout);
    EXPECT_EQ(status.code(), StatusCode::kDataLoss) << c.name;
    EXPECT_EQ(status.message(), c.message) << c.name;
  }
}

TEST(ValidateHeaderTest, ComparesAgainstOwnGeometryNotTheHeaders) {
  // A self-consistent header for another geometry is still wrong for us.
  const Layout ours = ComputeLayout(kGeometry).value();
  Geometry other = kGeometry;
  other.heap_bytes *= 4;
  const Layout theirs = ComputeLayout(other).value();
  const Status status = ValidateHeader(MakeHeader(theirs), ours);
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("total bytes"));
}

// ValidateProducerIndex / ValidateConsumerIndex

TEST(ValidateProducerIndexTest, AcceptsAnythingUpToOneLapAhead) {
  EXPECT_TRUE(ValidateProducerIndex("command ring", 100, 100, 100, 64).ok());
  EXPECT_TRUE(ValidateProducerIndex("command ring", 164, 100, 100, 64).ok());
  EXPECT_TRUE(ValidateProducerIndex("command ring", 120, 110, 100, 64).ok());
}

TEST(ValidateProducerIndexTest, RejectsTooFarAhead) {
  const Status status = ValidateProducerIndex("command ring", 1000, 100, 100, 64);
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  EXPECT_EQ(status.message(),
            "command ring: producer index 1000 is 900 ahead of consumer 100 "
            "(capacity 64)");
  EXPECT_FALSE(ValidateProducerIndex("command ring", 165, 100, 100, 64).ok());
}

TEST(ValidateProducerIndexTest, RejectsHuge) {
  const Status status = ValidateProducerIndex("command ring", UINT64_MAX, 0, 0, 64);
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  EXPECT_EQ(status.message(),
            "command ring: producer index 18446744073709551615 is 18446744073709551615 ahead of "
            "consumer 0 (capacity 64)");
}

TEST(ValidateProducerIndexTest, RejectsBackwards) {
  const Status status = ValidateProducerIndex("command ring", 99, 120, 100, 64);
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  EXPECT_EQ(status.message(), "command ring: producer index moved backwards from 120 to 99");
}

TEST(ValidateProducerIndexTest, RejectsBehindConsumerEvenIfLastWasToo) {
  // Arguments no sane caller passes; still a Status, not an underflow.
  const Status status = ValidateProducerIndex("command ring", 50, 40, 60, 64);
  EXPECT_EQ(status.message(), "command ring: producer index 50 is behind consumer 60");
}

TEST(ValidateConsumerIndexTest, AcceptsUpToProducer) {
  EXPECT_TRUE(ValidateConsumerIndex("completion ring", 100, 100, 100).ok());
  EXPECT_TRUE(ValidateConsumerIndex("completion ring", 100, 50, 150).ok());
}

TEST(ValidateConsumerIndexTest, RejectsAheadOfProducer) {
  const Status status = ValidateConsumerIndex("completion ring", 150, 50, 100);
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  EXPECT_EQ(status.message(), "completion ring: consumer index 150 is 50 ahead of producer 100");
  EXPECT_FALSE(ValidateConsumerIndex("completion ring", UINT64_MAX, 0, 100).ok());
}

TEST(ValidateConsumerIndexTest, RejectsBackwards) {
  const Status status = ValidateConsumerIndex("completion ring", 10, 50, 100);
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  EXPECT_EQ(status.message(), "completion ring: consumer index moved backwards from 50 to 10");
}

// ValidateDescriptor

Status Check(const Descriptor& d) { return ValidateDescriptor("command ring", 7, d, Rules()); }

TEST(ValidateDescriptorTest, AcceptsValid) {
  EXPECT_TRUE(Check(Valid()).ok());
  Descriptor d = Valid();
  d.flags = 0x3;
  EXPECT_TRUE(Check(d).ok());
}

TEST(ValidateDescriptorTest, RejectsUnknownOpcodes) {
  Descriptor d = Valid();
  d.opcode = 999;
  Status status = Check(d);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "command ring: descriptor at index 7: unknown opcode 999");
  d.opcode = kOpcodeLimit;
  EXPECT_EQ(Check(d).message(), "command ring: descriptor at index 7: unknown opcode 64");
  d.opcode = UINT16_MAX;
  EXPECT_FALSE(Check(d).ok());
}

TEST(ValidateDescriptorTest, RejectsZeroedSlot) {
  const Status status = Check(Descriptor{});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "command ring: descriptor at index 7: opcode INVALID (0) is not accepted on this ring");
}

TEST(ValidateDescriptorTest, RejectsKnownOpcodeNotAcceptedOnThisRing) {
  Descriptor d = Valid();
  d.opcode = static_cast<uint16_t>(Opcode::kCompletion);
  EXPECT_EQ(Check(d).message(),
            "command ring: descriptor at index 7: opcode COMPLETION (5) is not accepted on this "
            "ring");
}

TEST(ValidateDescriptorTest, RejectsUnknownFlags) {
  Descriptor d = Valid();
  d.flags = 0x84;
  const Status status = Check(d);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "command ring: descriptor at index 7: unknown flags 0x84 (known 0x3)");
}

TEST(ValidateDescriptorTest, RejectsLengthOverTheMaximum) {
  Descriptor d = Valid();
  d.heap_offset = 0;
  d.length = kMaxMessage + 1;
  const Status status = Check(d);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "command ring: descriptor at index 7: length 16385 exceeds the maximum message size "
            "16384");
  d.length = kMaxMessage;
  EXPECT_TRUE(Check(d).ok());
}

TEST(ValidateDescriptorTest, RejectsRangesOutsideTheHeap) {
  Descriptor d = Valid();
  d.heap_offset = 65536 - 999;
  d.length = 1000;
  Status status = Check(d);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "command ring: descriptor at index 7: heap range offset 64537 length 1000 does not "
            "fit in the heap of 65536 bytes");
  d.heap_offset = 65537;
  d.length = 0;
  EXPECT_FALSE(Check(d).ok());
  // Exactly to the end, and the empty range at the end, are fine.
  d.heap_offset = 65536 - 1000;
  d.length = 1000;
  EXPECT_TRUE(Check(d).ok());
  d.heap_offset = 65536;
  d.length = 0;
  EXPECT_TRUE(Check(d).ok());
}

TEST(ValidateDescriptorTest, RejectsRangesThatOverflow) {
  Descriptor d = Valid();
  // offset + length wraps to 99: a naive "offset + length <= heap" passes.
  d.heap_offset = UINT64_MAX - 900;
  d.length = 1000;
  Status status = Check(d);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("heap range offset 18446744073709550715 length 1000"));
  d.heap_offset = UINT64_MAX;
  d.length = 1;
  EXPECT_FALSE(Check(d).ok());
  d.heap_offset = 1;
  d.length = UINT64_MAX;
  EXPECT_FALSE(Check(d).ok());
}

// ValidatingConsumer

class ValidatingRingTest : public ::testing::Test {
 protected:
  void SetUp() override { region_ = Region::Create(kGeometry, "validating").value(); }

  RingMemory command() { return region_->command_ring(); }
  RingMemory completion() { return region_->completion_ring(); }

  std::unique_ptr<Region> region_;
};

TEST_F(ValidatingRingTest, ConsumerPassesValidEntries) {
  SpscProducer app(command());
  ValidatingConsumer daemon(command(), "command ring", Rules());
  std::array<Descriptor, 3> in = {Valid(1), Valid(2), Valid(3)};
  ASSERT_EQ(app.TryPush(in), 3u);
  std::array<Descriptor, 8> out;
  Result<size_t> n = daemon.TryPop(out);
  ASSERT_TRUE(n.ok()) << n.status();
  ASSERT_EQ(*n, 3u);
  EXPECT_EQ(out[2].cookie, 3u);
  EXPECT_EQ(daemon.TryPop(out).value_or(99), 0u);
  EXPECT_FALSE(daemon.broken());
  EXPECT_EQ(daemon.position(), 3u);
}

TEST_F(ValidatingRingTest, ConsumerLatchesOnAProducerIndexTooFarAhead) {
  ValidatingConsumer daemon(command(), "command ring", Rules());
  command().control->producer.value = 1000;
  std::array<Descriptor, 8> out;
  Result<size_t> n = daemon.TryPop(out);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(n.status().message(),
            "command ring: producer index 1000 is 1000 ahead of consumer 0 (capacity 64)");
  EXPECT_TRUE(daemon.broken());
  // Putting the index back does not revive the ring.
  command().control->producer.value = 0;
  EXPECT_EQ(daemon.TryPop(out).status(), n.status());
  EXPECT_EQ(daemon.position(), 0u);
}

TEST_F(ValidatingRingTest, ConsumerLatchesOnAProducerIndexMovingBackwards) {
  SpscProducer app(command());
  ValidatingConsumer daemon(command(), "command ring", Rules());
  std::array<Descriptor, 5> in;
  in.fill(Valid());
  ASSERT_EQ(app.TryPush(in), 5u);
  std::array<Descriptor, 2> out;
  ASSERT_EQ(daemon.TryPop(out).value_or(0), 2u);  // adopts producer index 5
  command().control->producer.value = 3;
  // Entries 2..4 are still cached as readable, so the next pop serves them...
  std::array<Descriptor, 3> rest;
  ASSERT_EQ(daemon.TryPop(rest).value_or(0), 3u);
  // ...and the one after that sees the index went back.
  const Status status = daemon.TryPop(out).status();
  EXPECT_EQ(status.message(), "command ring: producer index moved backwards from 5 to 3");
  EXPECT_TRUE(daemon.broken());
}

TEST_F(ValidatingRingTest, ConsumerReturnsTheValidPrefixThenTheError) {
  SpscProducer app(command());
  ValidatingConsumer daemon(command(), "command ring", Rules());
  std::array<Descriptor, 4> in = {Valid(1), Valid(2), Valid(3), Valid(4)};
  in[2].heap_offset = UINT64_MAX;
  ASSERT_EQ(app.TryPush(in), 4u);
  std::array<Descriptor, 8> out;
  Result<size_t> n = daemon.TryPop(out);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 2u);
  EXPECT_EQ(daemon.position(), 2u);
  EXPECT_EQ(command().control->consumer.value, 2u);
  Result<size_t> next = daemon.TryPop(out);
  ASSERT_FALSE(next.ok());
  EXPECT_EQ(next.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(next.status().message(),
              HasSubstr("command ring: descriptor at index 2: heap range"));
  EXPECT_EQ(daemon.position(), 2u);  // the bad one is never consumed
}

TEST_F(ValidatingRingTest, ConsumerFailsAtOnceWhenTheFirstEntryIsBad) {
  SpscProducer app(command());
  ValidatingConsumer daemon(command(), "command ring", Rules());
  Descriptor bad = Valid();
  bad.opcode = 999;
  ASSERT_TRUE(app.TryPush(bad));
  std::array<Descriptor, 8> out;
  Result<size_t> n = daemon.TryPop(out);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().message(), "command ring: descriptor at index 0: unknown opcode 999");
}

TEST_F(ValidatingRingTest, ConsumerRejectsSlotsThePeerNeverWrote) {
  // The producer index says 3 entries; the slots are still zero.
  command().control->producer.value = 3;
  ValidatingConsumer daemon(command(), "command ring", Rules());
  std::array<Descriptor, 8> out;
  EXPECT_THAT(daemon.TryPop(out).status().message(), HasSubstr("opcode INVALID (0)"));
}

TEST_F(ValidatingRingTest, ConsumerIgnoresScribblesOnItsOwnIndex) {
  SpscProducer app(command());
  ValidatingConsumer daemon(command(), "command ring", Rules());
  ASSERT_TRUE(app.TryPush(Valid(1)));
  command().control->consumer.value = UINT64_MAX;  // the app writes the daemon's index
  std::array<Descriptor, 8> out;
  EXPECT_EQ(daemon.TryPop(out).value_or(0), 1u);
  EXPECT_EQ(command().control->consumer.value, 1u);
}

// ValidatingProducer

TEST_F(ValidatingRingTest, ProducerFillsAndRefillsAsTheAppConsumes) {
  ValidatingProducer daemon(completion(), "completion ring");
  SpscConsumer app(completion());
  std::vector<Descriptor> in(100, Valid());
  Result<size_t> n = daemon.TryPush(in);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 64u);
  EXPECT_EQ(daemon.TryPush(in).value_or(99), 0u);
  std::array<Descriptor, 10> out;
  ASSERT_EQ(app.TryPop(out), 10u);
  EXPECT_EQ(daemon.TryPush(in).value_or(0), 10u);
  EXPECT_FALSE(daemon.broken());
}

TEST_F(ValidatingRingTest, ProducerLatchesOnAConsumerIndexAheadOfIt) {
  ValidatingProducer daemon(completion(), "completion ring");
  std::vector<Descriptor> in(64, Valid());
  ASSERT_EQ(daemon.TryPush(in).value_or(0), 64u);
  completion().control->consumer.value = 1u << 20;
  Result<size_t> n = daemon.TryPush(in);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(n.status().message(),
            "completion ring: consumer index 1048576 is 1048512 ahead of producer 64");
  EXPECT_TRUE(daemon.broken());
  completion().control->consumer.value = 64;
  EXPECT_FALSE(daemon.TryPush(in).ok());
}

TEST_F(ValidatingRingTest, ProducerLatchesOnAConsumerIndexMovingBackwards) {
  ValidatingProducer daemon(completion(), "completion ring");
  SpscConsumer app(completion());
  std::vector<Descriptor> in(64, Valid());
  ASSERT_EQ(daemon.TryPush(in).value_or(0), 64u);
  std::array<Descriptor, 32> out;
  ASSERT_EQ(app.TryPop(out), 32u);
  ASSERT_EQ(daemon.TryPush(in).value_or(0), 32u);  // adopts consumer index 32
  completion().control->consumer.value = 8;
  EXPECT_EQ(daemon.TryPush(in).status().message(),
            "completion ring: consumer index moved backwards from 32 to 8");
}

// Cross-process: a forked "application" corrupts the region; the parent
// ("wharfd") must get a Status and carry on.

constexpr DurationNs kChildBudgetNs = 30 * kNsPerSec;

TEST(ValidatorCrossProcessTest, GarbageIndexFromAnotherProcessIsAnError) {
  std::unique_ptr<Region> region = Region::Create(kGeometry, "xproc-garbage-index").value();
  const int fd = region->fd();
  ForkedChild child([fd] {
    Result<std::unique_ptr<Region>> mine = Region::Attach(fd, kGeometry);
    if (!mine.ok()) return 10;
    (*mine)->command_ring().control->producer.value = 1000;
    (*mine)->bytes()[0] = std::byte{0xee};  // and the magic, for good measure
    return 0;
  });
  ASSERT_TRUE(child.started());
  ASSERT_EQ(child.Wait(kChildBudgetNs), "exit 0");

  ValidatingConsumer daemon(region->command_ring(), "command ring", Rules());
  std::array<Descriptor, 8> out;
  EXPECT_EQ(daemon.TryPop(out).status().message(),
            "command ring: producer index 1000 is 1000 ahead of consumer 0 (capacity 64)");
  EXPECT_THAT(ValidateHeader(region->ReadHeader(), region->layout()).message(),
              HasSubstr("region header: magic"));
}

TEST(ValidatorCrossProcessTest, IndexMovingBackwardsInAnotherProcessIsAnError) {
  std::unique_ptr<Region> region = Region::Create(kGeometry, "xproc-backwards").value();
  const int fd = region->fd();
  ForkedChild child([fd] {
    Result<std::unique_ptr<Region>> mine = Region::Attach(fd, kGeometry);
    if (!mine.ok()) return 10;
    RingMemory ring = (*mine)->command_ring();
    SpscProducer app(ring);
    std::array<Descriptor, 10> in;
    in.fill(Valid());
    if (app.TryPush(in) != in.size()) return 11;
    // Wait until the daemon consumed all ten, then pull the index back.
    Backoff backoff;
    const Deadline deadline(kChildBudgetNs);
    while (std::atomic_ref<uint64_t>(ring.control->consumer.value).load() < 10) {
      if (deadline.Expired()) return 12;
      backoff.Pause();
    }
    std::atomic_ref<uint64_t>(ring.control->producer.value).store(5);
    return 0;
  });
  ASSERT_TRUE(child.started());

  ValidatingConsumer daemon(region->command_ring(), "command ring", Rules());
  std::array<Descriptor, 4> out;
  uint64_t popped = 0;
  Status failure;
  Backoff backoff;
  const Deadline deadline(kChildBudgetNs);
  while (failure.ok() && !deadline.Expired()) {
    Result<size_t> n = daemon.TryPop(out);
    if (!n.ok()) {
      failure = n.status();
    } else if (*n == 0) {
      backoff.Pause();
    }
    popped += n.value_or(0);
  }
  EXPECT_EQ(popped, 10u);
  EXPECT_EQ(failure.message(), "command ring: producer index moved backwards from 10 to 5");
  EXPECT_EQ(child.Wait(kChildBudgetNs), "exit 0");
}

TEST(ValidatorCrossProcessTest, RandomGarbageWhileTheDaemonPollsIsAnErrorNotACrash) {
  std::unique_ptr<Region> region = Region::Create(kGeometry, "xproc-spray").value();
  const int fd = region->fd();
  ForkedChild child([fd] {
    Result<std::unique_ptr<Region>> mine = Region::Attach(fd, kGeometry);
    if (!mine.ok()) return 10;
    // Sprays the whole command ring (both indices and every slot) with
    // random bytes, over and over, racing the parent's reads.
    const uint64_t ring_bytes =
        (*mine)->layout().completion.control_offset - (*mine)->layout().command.control_offset;
    auto* ring = reinterpret_cast<uint64_t*>((*mine)->command_ring().control);
    std::mt19937_64 rng(12345);
    for (int round = 0; round < 2000; ++round) {
      for (uint64_t i = 0; i < ring_bytes / 8; ++i) {
        std::atomic_ref<uint64_t>(ring[i]).store(rng(), std::memory_order_relaxed);
      }
    }
    return 0;
  });
  ASSERT_TRUE(child.started());

  ValidatingConsumer daemon(region->command_ring(), "command ring", Rules());
  std::array<Descriptor, 16> out;
  Status failure;
  const Deadline deadline(kChildBudgetNs);
  while (failure.ok() && !deadline.Expired()) {
    Result<size_t> n = daemon.TryPop(out);
    if (!n.ok()) failure = n.status();
    for (size_t i = 0; i < n.value_or(0); ++i) {
      // Whatever got through passed validation.
      ASSERT_TRUE(ValidateDescriptor("command ring", 0, out[i], Rules()).ok());
    }
    if (child.Exited() && failure.ok()) failure = daemon.TryPop(out).status();
  }
  EXPECT_FALSE(failure.ok()) << "the validator accepted random bytes";
  EXPECT_TRUE(failure.code() == StatusCode::kDataLoss ||
              failure.code() == StatusCode::kInvalidArgument)
      << failure;
  EXPECT_EQ(child.Wait(kChildBudgetNs), "exit 0");
}

}  // namespace
}  // namespace wharf::shm
