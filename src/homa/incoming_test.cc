// Unit tests of IncomingMessage: reassembly, grants, gaps.
#include "homa/incoming.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wharf::homa {
namespace {

std::vector<std::byte> Bytes(std::string_view s) {
  std::vector<std::byte> out(s.size());
  for (size_t i = 0; i < s.size(); ++i) out[i] = static_cast<std::byte>(s[i]);
  return out;
}

using Gap = std::pair<uint32_t, uint32_t>;

TEST(IncomingMessageTest, StartsWithUnscheduledGrantClampedToLength) {
  IncomingMessage m(10, 4, /*birth_ns=*/123);
  EXPECT_EQ(m.length(), 10u);
  EXPECT_EQ(m.granted(), 4u);
  EXPECT_EQ(m.birth_ns(), 123);
  EXPECT_EQ(m.received_bytes(), 0u);
  EXPECT_EQ(m.bytes_remaining(), 10u);
  EXPECT_FALSE(m.complete());
  EXPECT_TRUE(m.NeedsGrants());

  IncomingMessage small(5, 60'000, 0);
  EXPECT_EQ(small.granted(), 5u);
  EXPECT_FALSE(small.NeedsGrants());
}

TEST(IncomingMessageTest, InOrderDataCompletesAndTakesBytes) {
  IncomingMessage m(10, 10, 0);
  auto a = Bytes("hello");
  auto b = Bytes("world");
  EXPECT_EQ(m.AddData(0, a, 10), 5u);
  EXPECT_FALSE(m.complete());
  EXPECT_EQ(m.bytes_remaining(), 5u);
  EXPECT_EQ(m.AddData(5, b, 10), 5u);
  EXPECT_TRUE(m.complete());
  EXPECT_EQ(m.received_bytes(), 10u);
  EXPECT_EQ(m.bytes_remaining(), 0u);
  EXPECT_EQ(m.FirstGap(), std::nullopt);
  Buffer out = m.TakeMessage();
  EXPECT_EQ(out.AsStringView(), "helloworld");
}

TEST(IncomingMessageTest, LargeMessagesAreReassembledInPooledBlocksThatComeBack) {
  auto pool = transport::LargeBufferPool::Create({});
  const auto large = static_cast<uint32_t>(transport::LargeBufferPool::kMinBytes);
  std::vector<std::byte> payload(large, std::byte{7});
  const std::byte* first_data = nullptr;
  {
    IncomingMessage m(large, large, 0, pool.get());
    EXPECT_EQ(m.AddData(0, payload, large), large);
    ASSERT_TRUE(m.complete());
    Buffer out = m.TakeMessage();
    ASSERT_EQ(out.size(), large);
    EXPECT_EQ(out.data()[large - 1], std::byte{7});
    first_data = out.data();
  }  // the delivered message is dropped: its block goes back to the pool
  EXPECT_EQ(pool->stats().allocated, 1u);
  EXPECT_EQ(pool->stats().kept_blocks, 1u);
  IncomingMessage again(large, large, 0, pool.get());
  EXPECT_EQ(pool->stats().reused, 1u);
  EXPECT_EQ(again.AddData(0, payload, large), large);
  EXPECT_EQ(again.TakeMessage().data(), first_data);
  // Short messages are not worth the pool (malloc recycles them).
  IncomingMessage small(1000, 1000, 0, pool.get());
  EXPECT_EQ(pool->stats().allocated, 1u);
  EXPECT_EQ(pool->stats().reused, 1u);
}

TEST(IncomingMessageTest, OutOfOrderDataReassembles) {
  IncomingMessage m(9, 9, 0);
  auto c = Bytes("ghi");
  auto a = Bytes("abc");
  auto b = Bytes("def");
  EXPECT_EQ(m.AddData(6, c, 9), 3u);
  EXPECT_EQ(m.FirstGap(), Gap(0, 6));
  EXPECT_EQ(m.AddData(0, a, 9), 3u);
  EXPECT_EQ(m.FirstGap(), Gap(3, 6));
  EXPECT_FALSE(m.complete());
  EXPECT_EQ(m.AddData(3, b, 9), 3u);
  EXPECT_TRUE(m.complete());
  EXPECT_EQ(m.TakeMessage().AsStringView(), "abcdefghi");
}

TEST(IncomingMessageTest, DuplicatesAndOverlapsCountOnlyNewBytes) {
  IncomingMessage m(8, 8, 0);
  auto first = Bytes("abcd");
  EXPECT_EQ(m.AddData(0, first, 8), 4u);
  EXPECT_EQ(m.AddData(0, first, 8), 0u);  // exact duplicate
  EXPECT_EQ(m.received_bytes(), 4u);
  auto overlap = Bytes("cdef");  // [2, 6): two bytes new
  EXPECT_EQ(m.AddData(2, overlap, 8), 2u);
  EXPECT_EQ(m.received_bytes(), 6u);
  auto tail = Bytes("gh");
  EXPECT_EQ(m.AddData(6, tail, 8), 2u);
  EXPECT_EQ(m.AddData(6, tail, 8), 0u);
  EXPECT_TRUE(m.complete());
  EXPECT_EQ(m.TakeMessage().AsStringView(), "abcdefgh");
}

TEST(IncomingMessageTest, PacketIncomingOnlyRaisesGranted) {
  IncomingMessage m(100, 10, 0);
  auto x = Bytes("x");
  m.AddData(0, x, 5);  // a lower incoming does not lower granted
  EXPECT_EQ(m.granted(), 10u);
  m.AddData(1, x, 40);  // a retransmit after a lost GRANT raises it
  EXPECT_EQ(m.granted(), 40u);
  m.AddData(2, x, 1000);  // clamped to the length
  EXPECT_EQ(m.granted(), 100u);
  EXPECT_FALSE(m.NeedsGrants());
}

TEST(IncomingMessageTest, GrantRaisesClampsAndNeverLowers) {
  IncomingMessage m(100, 10, 0);
  EXPECT_FALSE(m.Grant(5));
  EXPECT_FALSE(m.Grant(10));
  EXPECT_EQ(m.granted(), 10u);
  EXPECT_TRUE(m.Grant(50));
  EXPECT_EQ(m.granted(), 50u);
  EXPECT_TRUE(m.NeedsGrants());
  EXPECT_TRUE(m.Grant(1'000'000));
  EXPECT_EQ(m.granted(), 100u);
  EXPECT_FALSE(m.NeedsGrants());
  EXPECT_FALSE(m.Grant(200));  // already at the length
}

TEST(IncomingMessageTest, FirstGapLooksOnlyBelowGranted) {
  IncomingMessage m(100, 20, 0);
  EXPECT_EQ(m.FirstGap(), Gap(0, 20));
  auto ten = Bytes("0123456789");
  m.AddData(0, ten, 20);
  EXPECT_EQ(m.FirstGap(), Gap(10, 20));
  m.AddData(10, ten, 20);
  // Everything granted has arrived: nothing to ask for, though incomplete.
  EXPECT_EQ(m.FirstGap(), std::nullopt);
  EXPECT_FALSE(m.complete());
  m.Grant(40);
  m.AddData(30, ten, 40);
  EXPECT_EQ(m.FirstGap(), Gap(20, 30));
}

TEST(IncomingMessageTest, EmptyMessageIsCompleteAtOnce) {
  IncomingMessage m(0, 0, 0);
  EXPECT_TRUE(m.complete());
  EXPECT_FALSE(m.NeedsGrants());
  EXPECT_EQ(m.FirstGap(), std::nullopt);
  EXPECT_EQ(m.TakeMessage().size(), 0u);
}

}  // namespace
}  // namespace wharf::homa
