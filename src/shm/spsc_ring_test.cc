#include "shm/spsc_ring.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "shm/forked_child_testing.h"
#include "shm/region.h"
#include "shm/validator.h"

namespace wharf::shm {
namespace {

using testutil::Backoff;
using testutil::Deadline;
using testutil::ForkedChild;

// A descriptor whose every byte is a function of `seq`, so that a reordered,
// duplicated, torn or lost entry shows up as a mismatch.
Descriptor Sequenced(uint64_t seq) {
  Descriptor d{};
  d.opcode = static_cast<uint16_t>(Opcode::kNop);
  d.flags = 0;
  d.status = static_cast<uint32_t>(seq * 7);
  d.cookie = seq;
  d.handle = ~seq;
  d.heap_offset = seq % 4096;
  d.length = seq % 97;
  d.aux[0] = seq * 3;
  d.aux[1] = seq ^ 0x5555555555555555ull;
  d.aux[2] = seq + 1;
  return d;
}

bool Matches(const Descriptor& d, uint64_t seq) {
  const Descriptor want = Sequenced(seq);
  return std::memcmp(&d, &want, sizeof(d)) == 0;
}

std::unique_ptr<Region> MakeRegion(uint32_t entries, std::string_view name) {
  return Region::Create(
             Geometry{
                 .command_entries = entries, .completion_entries = entries, .heap_bytes = 8192},
             name)
      .value();
}

// Pushes [first, first + count) in one batch; returns how many went in.
size_t PushRange(SpscProducer& producer, uint64_t first, size_t count) {
  std::vector<Descriptor> batch(count);
  for (size_t i = 0; i < count; ++i) batch[i] = Sequenced(first + i);
  return producer.TryPush(batch);
}

TEST(SpscRingTest, EmptyRingPopsNothing) {
  auto region = MakeRegion(8, "empty");
  SpscConsumer consumer(region->command_ring());
  std::array<Descriptor, 4> out;
  EXPECT_EQ(consumer.TryPop(out), 0u);
  EXPECT_EQ(consumer.TryPop(std::span<Descriptor>()), 0u);
  EXPECT_EQ(consumer.position(), 0u);
}

TEST(SpscRingTest, PushThenPopKeepsEveryByte) {
  auto region = MakeRegion(8, "one");
  SpscProducer producer(region->command_ring());
  SpscConsumer consumer(region->command_ring());
  EXPECT_TRUE(producer.TryPush(Sequenced(42)));
  std::array<Descriptor, 1> out;
  ASSERT_EQ(consumer.TryPop(out), 1u);
  EXPECT_TRUE(Matches(out[0], 42));
  EXPECT_EQ(consumer.TryPop(out), 0u);
}

TEST(SpscRingTest, FillsToCapacityThenRefuses) {
  auto region = MakeRegion(8, "full");
  SpscProducer producer(region->command_ring());
  SpscConsumer consumer(region->command_ring());
  EXPECT_EQ(producer.capacity(), 8u);
  EXPECT_EQ(PushRange(producer, 0, 8), 8u);
  EXPECT_FALSE(producer.TryPush(Sequenced(8)));
  EXPECT_EQ(producer.FreeSlots(), 0u);
  std::array<Descriptor, 1> out;
  ASSERT_EQ(consumer.TryPop(out), 1u);
  EXPECT_TRUE(Matches(out[0], 0));
  // One slot is free again, but only one.
  EXPECT_EQ(PushRange(producer, 8, 2), 1u);
}

TEST(SpscRingTest, PartialBatchPushesThePrefixThatFits) {
  auto region = MakeRegion(8, "partial");
  SpscProducer producer(region->command_ring());
  SpscConsumer consumer(region->command_ring());
  EXPECT_EQ(PushRange(producer, 0, 5), 5u);
  EXPECT_EQ(PushRange(producer, 5, 5), 3u);
  std::array<Descriptor, 16> out;
  ASSERT_EQ(consumer.TryPop(out), 8u);
  for (uint64_t i = 0; i < 8; ++i) EXPECT_TRUE(Matches(out[i], i)) << i;
}

TEST(SpscRingTest, PopBatchTakesWhatIsThere) {
  auto region = MakeRegion(16, "popbatch");
  SpscProducer producer(region->command_ring());
  SpscConsumer consumer(region->command_ring());
  EXPECT_EQ(PushRange(producer, 0, 10), 10u);
  std::array<Descriptor, 4> small;
  ASSERT_EQ(consumer.TryPop(small), 4u);
  std::array<Descriptor, 16> big;
  ASSERT_EQ(consumer.TryPop(big), 6u);
  for (uint64_t i = 0; i < 6; ++i) EXPECT_TRUE(Matches(big[i], 4 + i));
}

TEST(SpscRingTest, PublishesIndicesInSharedMemory) {
  auto region = MakeRegion(8, "indices");
  RingMemory ring = region->command_ring();
  SpscProducer producer(ring);
  SpscConsumer consumer(ring);
  EXPECT_EQ(PushRange(producer, 0, 5), 5u);
  EXPECT_EQ(ring.control->producer.value, 5u);
  EXPECT_EQ(producer.position(), 5u);
  std::array<Descriptor, 3> out;
  EXPECT_EQ(consumer.TryPop(out), 3u);
  EXPECT_EQ(ring.control->consumer.value, 3u);
  EXPECT_EQ(consumer.position(), 3u);
  EXPECT_EQ(consumer.cached_peer(), 5u);
}

// Wrap-around: a small ring, thousands of laps, every mix of batch sizes on
// both ends, so that batches straddle the end of the slot array in every
// possible way.
TEST(SpscRingTest, WrapsAroundWithEveryBatchSplit) {
  auto region = MakeRegion(8, "wrap");
  SpscProducer producer(region->command_ring());
  SpscConsumer consumer(region->command_ring());
  uint64_t pushed = 0;
  uint64_t popped = 0;
  std::array<Descriptor, 8> out;
  for (int round = 0; round < 20000; ++round) {
    const size_t push_n = 1 + round % 7;
    const size_t pop_n = 1 + (round / 7) % 8;
    pushed += PushRange(producer, pushed, push_n);
    const size_t n = consumer.TryPop(std::span(out).first(pop_n));
    for (size_t i = 0; i < n; ++i) ASSERT_TRUE(Matches(out[i], popped + i)) << popped + i;
    popped += n;
    ASSERT_LE(pushed - popped, 8u);
  }
  EXPECT_GT(popped / 8, 1000u);  // over a thousand laps
}

class SpscRingBatchTest : public ::testing::TestWithParam<size_t> {};

TEST_P(SpscRingBatchTest, MovesManyEntriesInOrder) {
  const size_t batch = GetParam();
  auto region = MakeRegion(64, "batch");
  SpscProducer producer(region->command_ring());
  SpscConsumer consumer(region->command_ring());
  std::vector<Descriptor> out(batch);
  uint64_t pushed = 0;
  uint64_t popped = 0;
  constexpr uint64_t kTotal = 10000;
  while (popped < kTotal) {
    pushed += PushRange(producer, pushed, std::min<uint64_t>(batch, kTotal - pushed));
    const size_t n = consumer.TryPop(out);
    ASSERT_GT(n, 0u);
    for (size_t i = 0; i < n; ++i) ASSERT_TRUE(Matches(out[i], popped + i));
    popped += n;
  }
  EXPECT_EQ(pushed, kTotal);
}

INSTANTIATE_TEST_SUITE_P(Sizes, SpscRingBatchTest, ::testing::Values(1, 3, 16, 63, 64));

TEST(SpscRingTest, ProducerReadsConsumerIndexOnlyWhenItsCacheRunsShort) {
  auto region = MakeRegion(8, "cache");
  RingMemory ring = region->command_ring();
  SpscProducer producer(ring);
  EXPECT_EQ(PushRange(producer, 0, 4), 4u);
  // Room for 4 more according to the cache, so these never look at the
  // (scribbled) consumer index...
  ring.control->consumer.value = 1000;
  EXPECT_EQ(PushRange(producer, 4, 4), 4u);
  EXPECT_EQ(producer.cached_peer(), 0u);
  // ...but this one does, and an index ahead of ours reads as "full", not as
  // a lot of room.
  EXPECT_FALSE(producer.TryPush(Sequenced(8)));
  EXPECT_EQ(producer.cached_peer(), 1000u);
}

TEST(SpscRingTest, TrustingConsumerStaysInsideTheSlotsOnGarbage) {
  auto region = MakeRegion(8, "garbage");
  RingMemory ring = region->command_ring();
  SpscConsumer consumer(ring);
  ring.control->producer.value = UINT64_MAX;
  std::array<Descriptor, 32> out;
  EXPECT_EQ(consumer.TryPop(out), 8u);  // at most one lap of (garbage) slots
}

TEST(SpscRingTest, OwnIndexInSharedMemoryIsNeverReadBack) {
  auto region = MakeRegion(8, "own");
  RingMemory ring = region->command_ring();
  SpscProducer producer(ring);
  SpscConsumer consumer(ring);
  EXPECT_EQ(PushRange(producer, 0, 2), 2u);
  ring.control->producer.value = 0;  // the peer scribbles on our index...
  ring.control->producer.value = 2;  // (and a racing write restores it)
  EXPECT_EQ(PushRange(producer, 2, 1), 1u);
  EXPECT_EQ(ring.control->producer.value, 3u);  // ...we publish from our copy
  std::array<Descriptor, 8> out;
  ASSERT_EQ(consumer.TryPop(out), 3u);
  EXPECT_TRUE(Matches(out[2], 2));
}

TEST(SpscRingTest, TwoThreadsKeepOrder) {
  auto region = MakeRegion(64, "threads");
  constexpr uint64_t kTotal = 200000;
  std::atomic<bool> producer_timed_out{false};
  std::atomic<bool> consumer_done{false};  // a failing consumer stops the producer too
  std::thread producer_thread([&] {
    SpscProducer producer(region->command_ring());
    Backoff backoff;
    const Deadline deadline(60 * kNsPerSec);
    for (uint64_t next = 0; next < kTotal;) {
      const size_t n = PushRange(producer, next, std::min<uint64_t>(1 + next % 17, kTotal - next));
      if (n == 0) {
        if (consumer_done) return;
        if (deadline.Expired()) {
          producer_timed_out = true;
          return;
        }
        backoff.Pause();
      }
      next += n;
    }
  });
  SpscConsumer consumer(region->command_ring());
  std::array<Descriptor, 16> out;
  uint64_t popped = 0;
  bool in_order = true;
  Backoff backoff;
  const Deadline deadline(60 * kNsPerSec);
  while (popped < kTotal && in_order && !deadline.Expired()) {
    const size_t n = consumer.TryPop(out);
    if (n == 0) backoff.Pause();
    for (size_t i = 0; i < n; ++i) in_order = in_order && Matches(out[i], popped + i);
    popped += n;
  }
  consumer_done = true;
  producer_thread.join();
  EXPECT_TRUE(in_order) << "mismatch near " << popped;
  EXPECT_EQ(popped, kTotal);
  EXPECT_FALSE(producer_timed_out);
}

// SetWaiting / PeerWaiting: the flag itself. The lost-wake-up proof runs in
// doorbell_test.cc, across processes.

TEST(SpscRingWaitingTest, ConsumerFlagIsSeenByTheProducer) {
  auto region = MakeRegion(8, "waiting");
  SpscProducer producer(region->command_ring());
  SpscConsumer consumer(region->command_ring());
  EXPECT_FALSE(producer.PeerWaiting());
  consumer.SetWaiting(true);
  EXPECT_TRUE(producer.PeerWaiting());
  // It lives in the consumer's line, 8 bytes after the consumer index.
  const auto* control = reinterpret_cast<const std::byte*>(region->command_ring().control);
  uint32_t raw = 0;
  std::memcpy(&raw, control + kCacheLineBytes + 8, sizeof(raw));
  EXPECT_EQ(raw, 1u);
  EXPECT_EQ(region->command_ring().control->producer.waiting, 0u);
  consumer.SetWaiting(false);
  EXPECT_FALSE(producer.PeerWaiting());
  // The other ring's flag is separate.
  SpscConsumer other(region->completion_ring());
  other.SetWaiting(true);
  EXPECT_FALSE(producer.PeerWaiting());
}

TEST(SpscRingWaitingTest, GarbageFlagOnlyMeansADoorbell) {
  auto region = MakeRegion(8, "waiting-garbage");
  SpscProducer producer(region->command_ring());
  SpscConsumer consumer(region->command_ring());
  // A peer may write anything there; any non-zero value reads as "ring".
  region->command_ring().control->consumer.waiting = 0xdeadbeef;
  EXPECT_TRUE(producer.PeerWaiting());
  EXPECT_EQ(PushRange(producer, 0, 3), 3u);
  std::array<Descriptor, 4> out;
  ASSERT_EQ(consumer.TryPop(out), 3u);
  EXPECT_TRUE(Matches(out[2], 2));
}

// SetIdle / PeerIdle: the spin hint, in the consumer's line 12 bytes after its
// index, stored only when it changes.
TEST(SpscRingIdleTest, ConsumerHintIsSeenByTheProducer) {
  auto region = MakeRegion(8, "idle");
  SpscProducer producer(region->completion_ring());
  SpscConsumer consumer(region->completion_ring());
  EXPECT_FALSE(producer.PeerIdle());
  consumer.SetIdle(true);
  EXPECT_TRUE(producer.PeerIdle());
  const auto* control = reinterpret_cast<const std::byte*>(region->completion_ring().control);
  uint32_t raw = 0;
  std::memcpy(&raw, control + kCacheLineBytes + 12, sizeof(raw));
  EXPECT_EQ(raw, 1u);
  EXPECT_EQ(region->completion_ring().control->producer.idle, 0u);
  // Independent of the sleep flag beside it.
  EXPECT_FALSE(producer.PeerWaiting());
  consumer.SetIdle(false);
  EXPECT_FALSE(producer.PeerIdle());
  // The other ring's hint is separate.
  SpscConsumer other(region->command_ring());
  other.SetIdle(true);
  EXPECT_FALSE(producer.PeerIdle());
}

TEST(SpscRingIdleTest, StoredOnlyWhenItChanges) {
  auto region = MakeRegion(8, "idle-changes");
  SpscProducer producer(region->completion_ring());
  SpscConsumer consumer(region->completion_ring());
  consumer.SetIdle(true);
  // Someone else overwrites the word; setting the same value again does not
  // store, so the overwrite stays (the consumer keeps its line quiet).
  region->completion_ring().control->consumer.idle = 0;
  consumer.SetIdle(true);
  EXPECT_FALSE(producer.PeerIdle());
  consumer.SetIdle(false);
  consumer.SetIdle(true);
  EXPECT_TRUE(producer.PeerIdle());
  // Any non-zero value a peer writes reads as idle.
  region->completion_ring().control->consumer.idle = 0xdeadbeef;
  EXPECT_TRUE(producer.PeerIdle());
}

// Cross-process: the parent plays wharfd (the validating ends), a forked
// child plays the application (the trusting ends) on its own mapping of the
// inherited memfd.

constexpr Geometry kCrossGeometry{
    .command_entries = 256, .completion_entries = 256, .heap_bytes = 65536};
constexpr uint64_t kCrossEntries = 1000000;
constexpr DurationNs kCrossBudgetNs = 60 * kNsPerSec;

DescriptorRules CrossRules() {
  return DescriptorRules{.heap_bytes = kCrossGeometry.heap_bytes,
                         .max_message_bytes = 1 << 20,
                         .opcodes = {Opcode::kNop},
                         .known_flags = 0};
}

// Child exit codes.
constexpr int kChildOk = 0;
constexpr int kChildAttachFailed = 10;
constexpr int kChildTimedOut = 11;
constexpr int kChildMismatch = 12;

// Child: pushes kCrossEntries sequenced entries into the command ring, in
// batches of 1..32.
int ProduceSequence(int fd) {
  Result<std::unique_ptr<Region>> region = Region::Attach(fd, kCrossGeometry);
  if (!region.ok()) return kChildAttachFailed;
  SpscProducer producer((*region)->command_ring());
  std::array<Descriptor, 32> batch;
  Backoff backoff;
  const Deadline deadline(kCrossBudgetNs);
  for (uint64_t next = 0; next < kCrossEntries;) {
    const size_t want = std::min<uint64_t>(1 + next % batch.size(), kCrossEntries - next);
    for (size_t i = 0; i < want; ++i) batch[i] = Sequenced(next + i);
    const size_t n = producer.TryPush(std::span(batch).first(want));
    if (n == 0) {
      if (deadline.Expired()) return kChildTimedOut;
      backoff.Pause();
    }
    next += n;
  }
  return kChildOk;
}

// Child: pops kCrossEntries from the completion ring and checks each.
int ConsumeSequence(int fd) {
  Result<std::unique_ptr<Region>> region = Region::Attach(fd, kCrossGeometry);
  if (!region.ok()) return kChildAttachFailed;
  SpscConsumer consumer((*region)->completion_ring());
  std::array<Descriptor, 32> batch;
  Backoff backoff;
  const Deadline deadline(kCrossBudgetNs);
  for (uint64_t next = 0; next < kCrossEntries;) {
    const size_t n = consumer.TryPop(std::span(batch).first(1 + next % 19));
    if (n == 0) {
      if (deadline.Expired()) return kChildTimedOut;
      backoff.Pause();
    }
    for (size_t i = 0; i < n; ++i) {
      if (!Matches(batch[i], next + i)) {
        // Leave the evidence where the parent can read it.
        const std::string report =
            "entry " + std::to_string(next + i) + " has cookie " + std::to_string(batch[i].cookie);
        std::memcpy((*region)->heap().data(), report.c_str(), report.size() + 1);
        return kChildMismatch;
      }
    }
    next += n;
  }
  return kChildOk;
}

std::string ChildReport(const Region& region) {
  const auto* text = reinterpret_cast<const char*>(region.heap().data());
  return std::string(text, strnlen(text, 256));
}

TEST(SpscRingCrossProcessTest, ChildProducesParentConsumesAMillionInOrder) {
  std::unique_ptr<Region> region = Region::Create(kCrossGeometry, "xproc-command").value();
  const int fd = region->fd();
  ForkedChild child([fd] { return ProduceSequence(fd); });
  ASSERT_TRUE(child.started());

  ValidatingConsumer consumer(region->command_ring(), "command ring", CrossRules());
  std::array<Descriptor, 32> batch;
  uint64_t next = 0;
  uint64_t idle_polls = 0;
  Backoff backoff;
  const Deadline deadline(kCrossBudgetNs);
  while (next < kCrossEntries && !deadline.Expired()) {
    Result<size_t> n = consumer.TryPop(batch);
    ASSERT_TRUE(n.ok()) << n.status();
    if (*n == 0) {
      // A child that died early must not keep us spinning to the deadline.
      if (++idle_polls % 1024 == 0 && child.Exited() && consumer.TryPop(batch).value_or(0) == 0) {
        break;
      }
      backoff.Pause();
      continue;
    }
    for (size_t i = 0; i < *n; ++i) {
      ASSERT_TRUE(Matches(batch[i], next)) << "entry " << next << " has cookie " << batch[i].cookie;
      ++next;
    }
  }
  EXPECT_EQ(next, kCrossEntries);
  EXPECT_EQ(child.Wait(10 * kNsPerSec), "exit 0");
}

TEST(SpscRingCrossProcessTest, ParentProducesChildConsumesAMillionInOrder) {
  std::unique_ptr<Region> region = Region::Create(kCrossGeometry, "xproc-completion").value();
  const int fd = region->fd();
  ForkedChild child([fd] { return ConsumeSequence(fd); });
  ASSERT_TRUE(child.started());

  ValidatingProducer producer(region->completion_ring(), "completion ring");
  std::array<Descriptor, 32> batch;
  uint64_t next = 0;
  uint64_t idle_polls = 0;
  Backoff backoff;
  const Deadline deadline(kCrossBudgetNs);
  while (next < kCrossEntries && !deadline.Expired()) {
    const size_t want = std::min<uint64_t>(1 + next % 23, kCrossEntries - next);
    for (size_t i = 0; i < want; ++i) batch[i] = Sequenced(next + i);
    Result<size_t> n = producer.TryPush(std::span(batch).first(want));
    ASSERT_TRUE(n.ok()) << n.status();
    if (*n == 0) {
      if (++idle_polls % 1024 == 0 && child.Exited()) break;
      backoff.Pause();
    }
    next += *n;
  }
  EXPECT_EQ(next, kCrossEntries);
  EXPECT_EQ(child.Wait(kCrossBudgetNs), "exit 0") << ChildReport(*region);
}

}  // namespace
}  // namespace wharf::shm
