#include "homa/outgoing.h"

#include <vector>

#include <gtest/gtest.h>

namespace wharf::homa {
namespace {

Buffer Bytes(size_t n) {
  Buffer b = Buffer::Allocate(n);
  for (size_t i = 0; i < n; ++i) b.data()[i] = std::byte(i & 0xff);
  return b;
}

std::vector<std::pair<uint32_t, uint32_t>> Drain(OutgoingMessage& m) {
  std::vector<std::pair<uint32_t, uint32_t>> out;
  while (m.HasPacketReady()) {
    DataSlice s = m.NextPacket();
    out.emplace_back(s.offset, s.length);
  }
  return out;
}

TEST(OutgoingMessageTest, UnscheduledPrefixRoundsUpToWholePackets) {
  OutgoingMessage m(Bytes(10'000), /*unsched=*/2500, /*payload=*/1000, /*prio=*/6);
  EXPECT_EQ(m.unsched_limit(), 3000u);
  auto sent = Drain(m);
  ASSERT_EQ(sent.size(), 3u);
  EXPECT_EQ(sent.back(), std::make_pair(2000u, 1000u));
  EXPECT_FALSE(m.FullySent());
}

TEST(OutgoingMessageTest, ShortMessageIsAllUnscheduled) {
  OutgoingMessage m(Bytes(1500), 60'000, 1000, 7);
  EXPECT_EQ(m.granted(), 1500u);
  auto sent = Drain(m);
  EXPECT_EQ(sent, (std::vector<std::pair<uint32_t, uint32_t>>{{0, 1000}, {1000, 500}}));
  EXPECT_TRUE(m.FullySent());
}

TEST(OutgoingMessageTest, ZeroLengthSendsOneEmptyPacket) {
  OutgoingMessage m(Buffer(), 60'000, 1000, 7);
  auto sent = Drain(m);
  EXPECT_EQ(sent, (std::vector<std::pair<uint32_t, uint32_t>>{{0, 0}}));
  EXPECT_TRUE(m.FullySent());
  EXPECT_TRUE(m.HandleResend(0, 100, 0));
  EXPECT_EQ(Drain(m).size(), 1u);
}

TEST(OutgoingMessageTest, GrantsReleaseMoreAndNeverShrink) {
  OutgoingMessage m(Bytes(10'000), 1000, 1000, 6);
  Drain(m);
  EXPECT_TRUE(m.HandleGrant(3000, 2));
  EXPECT_FALSE(m.HandleGrant(2000, 2));
  auto sent = Drain(m);
  ASSERT_EQ(sent.size(), 2u);
  DataSlice last{};
  EXPECT_TRUE(m.HandleGrant(50'000, 1));  // clamped to length
  EXPECT_EQ(m.granted(), 10'000u);
  while (m.HasPacketReady()) last = m.NextPacket();
  EXPECT_EQ(last.priority, 1);
  EXPECT_TRUE(m.FullySent());
}

TEST(OutgoingMessageTest, StaleGrantChangesNeitherOffsetNorPriority) {
  OutgoingMessage m(Bytes(10'000), 1000, 1000, 6);
  Drain(m);
  EXPECT_TRUE(m.HandleGrant(5000, 3));
  EXPECT_FALSE(m.HandleGrant(3000, 0));  // reordered: older and lower
  DataSlice s = m.NextPacket();
  EXPECT_EQ(s.priority, 3);
  EXPECT_EQ(m.granted(), 5000u);
}

TEST(OutgoingMessageTest, ResendQueuesSentBytesFirstAndMarksRetransmit) {
  OutgoingMessage m(Bytes(5000), 5000, 1000, 6);
  Drain(m);
  EXPECT_TRUE(m.HandleResend(1000, 1500, 3));
  DataSlice a = m.NextPacket();
  DataSlice b = m.NextPacket();
  EXPECT_TRUE(a.retransmit);
  EXPECT_EQ(a.offset, 1000u);
  EXPECT_EQ(a.length, 1000u);
  EXPECT_EQ(b.offset, 2000u);
  EXPECT_EQ(b.length, 500u);
  EXPECT_FALSE(m.HasPacketReady());
}

TEST(OutgoingMessageTest, ResendBeyondSentImpliesGrantAndAsksForBusy) {
  OutgoingMessage m(Bytes(10'000), 1000, 1000, 6);
  Drain(m);  // sent [0, 1000); a GRANT to 3000 was lost
  EXPECT_FALSE(m.HandleResend(1000, 2000, 2));
  EXPECT_EQ(m.granted(), 3000u);
  auto sent = Drain(m);
  EXPECT_EQ(sent, (std::vector<std::pair<uint32_t, uint32_t>>{{1000, 1000}, {2000, 1000}}));
}

TEST(OutgoingMessageTest, RestartSendsEverythingAgain) {
  OutgoingMessage m(Bytes(3000), 1000, 1000, 6);
  m.HandleGrant(3000, 0);
  Drain(m);
  m.Restart();
  EXPECT_EQ(m.granted(), 1000u);
  EXPECT_EQ(Drain(m).size(), 1u);
}

}  // namespace
}  // namespace wharf::homa
