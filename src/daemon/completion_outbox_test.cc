// daemon/completion_outbox_test.cc: what reaches the application's
// completion ring, read from its end of the ring: completions and their
// flags, payloads delivered into the receive area, the ring and the area
// filling up, and doorbells.
#include "daemon/completion_outbox.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "daemon/testing/region_parts.h"

namespace wharf::daemon {
namespace {

using shm::Descriptor;
using shm::Opcode;
using testing::RegionParts;

Descriptor Entry(Opcode opcode, uint64_t cookie) {
  Descriptor d{};
  d.opcode = static_cast<uint16_t>(opcode);
  d.cookie = cookie;
  return d;
}

TEST(CompletionOutbox, Complete__CarriesTheSendReleasedFlagWhenTheRangeCameBack) {
  RegionParts parts;
  (void)parts.loans->Lend(5, 1000, 10);  // the engine let go of it already
  parts.outbox->Complete(5, OkStatus(), Buffer(), 42);
  parts.outbox->Complete(6, OkStatus());
  ASSERT_TRUE(parts.outbox->Flush().value());
  std::vector<Descriptor> got = parts.Read();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].opcode, static_cast<uint16_t>(Opcode::kCompletion));
  EXPECT_EQ(got[0].cookie, 5u);
  EXPECT_EQ(got[0].handle, 42u);
  EXPECT_EQ(got[0].flags, shm::kFlagSendReleased);
  EXPECT_EQ(got[1].cookie, 6u);
  EXPECT_EQ(got[1].flags, 0u);
  EXPECT_FALSE(parts.loans->has_released());  // told with its completion
}

TEST(CompletionOutbox, Complete__AnErrorCarriesItsText) {
  RegionParts parts;
  parts.outbox->Complete(7, NotFoundError("gone"), Buffer::Copy("ignored"));
  ASSERT_TRUE(parts.outbox->Flush().ok());
  std::vector<Descriptor> got = parts.Read();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status, static_cast<uint32_t>(StatusCode::kNotFound));
  EXPECT_EQ(parts.Text(got[0]), "gone");
}

TEST(CompletionOutbox, Push__APayloadThatCanNeverFitFailsTheCompletionAndDropsARequest) {
  RegionParts parts(65536);  // a receive area of 32768 bytes
  parts.outbox->Complete(8, OkStatus(), Buffer::Allocate(40000), 3);
  Descriptor request = Entry(Opcode::kRequest, 0);
  EXPECT_FALSE(parts.outbox->Push(request, Buffer::Allocate(40000)));
  EXPECT_EQ(parts.outbox->payloads_refused(), 2u);
  EXPECT_EQ(parts.outbox->backlog(), 1u);
  ASSERT_TRUE(parts.outbox->Flush().ok());
  std::vector<Descriptor> got = parts.Read();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].cookie, 8u);
  EXPECT_EQ(got[0].status, static_cast<uint32_t>(StatusCode::kResourceExhausted));
  EXPECT_EQ(got[0].handle, 0u);
  EXPECT_EQ(parts.Text(got[0]),
            "a message of 40000 bytes does not fit the application's receive area (32768 "
            "bytes: wharfd limits.heap_bytes / 2)");
  EXPECT_EQ(parts.outbox->TooBig(40000).message(), parts.Text(got[0]));
}

TEST(CompletionOutbox, Flush__PublishesInOrderWithPayloadsDelivered) {
  RegionParts parts;
  EXPECT_TRUE(parts.outbox->Push(Entry(Opcode::kRequest, 0), Buffer::Copy("first")));
  EXPECT_TRUE(parts.outbox->Push(Entry(Opcode::kCallCancelled, 0)));
  EXPECT_TRUE(parts.outbox->Push(Entry(Opcode::kPeerName, 0), Buffer::Copy("homa://a")));
  EXPECT_TRUE(parts.outbox->Flush().value());
  std::vector<Descriptor> got = parts.Read();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(parts.Text(got[0]), "first");
  EXPECT_EQ(got[1].opcode, static_cast<uint16_t>(Opcode::kCallCancelled));
  EXPECT_EQ(got[1].length, 0u);
  EXPECT_EQ(parts.Text(got[2]), "homa://a");
  EXPECT_EQ(parts.outbox->completions(), 3u);
  EXPECT_TRUE(parts.outbox->empty());
  EXPECT_EQ(parts.area->bytes_received(), 13u);
}

TEST(CompletionOutbox, Flush__WaitsAtAPayloadTheAreaHasNoRoomFor) {
  RegionParts parts(65536);
  parts.outbox->Complete(1, OkStatus(), Buffer::Allocate(30000));
  parts.outbox->Complete(2, OkStatus(), Buffer::Allocate(5000));
  parts.outbox->Complete(3, OkStatus());
  ASSERT_TRUE(parts.outbox->Flush().value());
  std::vector<Descriptor> got = parts.Read();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(parts.outbox->backlog(), 2u);  // in order: 3 waits behind 2
  EXPECT_FALSE(parts.outbox->Flush().value());
  ASSERT_TRUE(parts.area->Release(got[0].heap_offset, got[0].length, {}).ok());
  ASSERT_TRUE(parts.outbox->Flush().value());
  got = parts.Read();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].cookie, 2u);
  EXPECT_EQ(got[0].length, 5000u);
  EXPECT_EQ(got[1].cookie, 3u);
}

TEST(CompletionOutbox, Flush__WaitsForRoomInTheRing) {
  RegionParts parts(65536, /*completion_entries=*/8);
  for (uint64_t cookie = 1; cookie <= 10; ++cookie) parts.outbox->Complete(cookie, OkStatus());
  ASSERT_TRUE(parts.outbox->Flush().value());
  EXPECT_EQ(parts.outbox->backlog(), 2u);
  EXPECT_FALSE(parts.outbox->Flush().value());  // the application read nothing
  EXPECT_EQ(parts.Read().size(), 8u);
  ASSERT_TRUE(parts.outbox->Flush().value());
  std::vector<Descriptor> got = parts.Read();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].cookie, 9u);
  EXPECT_EQ(got[1].cookie, 10u);
  EXPECT_EQ(parts.outbox->completions(), 10u);
}

TEST(CompletionOutbox, Flush__SendReleasedEntriesAloneAreNotUrgent) {
  RegionParts parts;
  (void)parts.loans->Lend(9, 1000, 10);
  (void)parts.loans->Lend(10, 2000, 10);
  EXPECT_FALSE(parts.outbox->Flush().value());
  std::vector<Descriptor> got = parts.Read();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].opcode, static_cast<uint16_t>(Opcode::kSendReleased));
  EXPECT_EQ(got[0].cookie, 9u);
  EXPECT_EQ(got[0].aux[0], 10u);
  EXPECT_EQ(got[0].aux[1], 0u);
}

TEST(CompletionOutbox, Flush__AGarbageConsumerIndexIsAnError) {
  RegionParts parts(65536, /*completion_entries=*/8);
  for (uint64_t cookie = 1; cookie <= 9; ++cookie) parts.outbox->Complete(cookie, OkStatus());
  ASSERT_TRUE(parts.outbox->Flush().ok());  // the ring is full
  // The application claims to have read entries never written.
  std::atomic_ref<uint64_t>(parts.region->completion_ring().control->consumer.value)
      .store(1000);
  Result<bool> flushed = parts.outbox->Flush();
  EXPECT_FALSE(flushed.ok());
}

TEST(CompletionOutbox, TakeDoorbell__OncePerSleepOfTheApplication) {
  RegionParts parts;
  EXPECT_FALSE(parts.outbox->TakeDoorbell());  // awake
  parts.app_completions.SetWaitingToken(3);
  EXPECT_TRUE(parts.outbox->TakeDoorbell());
  EXPECT_FALSE(parts.outbox->TakeDoorbell());  // still the same sleep
  parts.app_completions.SetWaitingToken(4);
  EXPECT_TRUE(parts.outbox->TakeDoorbell());
}

TEST(CompletionOutbox, Clear__DropsWhatWaits) {
  RegionParts parts;
  parts.outbox->Complete(1, OkStatus(), Buffer::Copy("x"));
  parts.outbox->Clear();
  EXPECT_TRUE(parts.outbox->empty());
  EXPECT_FALSE(parts.outbox->Flush().value());
  EXPECT_TRUE(parts.Read().empty());
}

}  // namespace
}  // namespace wharf::daemon
