#include "transport/fake/packet_log.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace wharf::transport::fake {
namespace {

LogEntry Entry(std::string src, std::string dst, std::string description) {
  return LogEntry{std::move(src), std::move(dst), std::move(description)};
}

TEST(LogEntryTest, ShowsAtMostTheMostTellingFate) {
  LogEntry e = Entry("A", "B", "DATA 1400@0");
  EXPECT_EQ(e.ToString(), "A->B DATA 1400@0");
  e.delayed = true;
  EXPECT_EQ(e.ToString(), "A->B DATA 1400@0 [delayed]");
  e.duplicate = true;
  EXPECT_EQ(e.ToString(), "A->B DATA 1400@0 [dup]");
  e.loss = PacketLoss::kDropped;
  EXPECT_EQ(e.ToString(), "A->B DATA 1400@0 [dropped]");
  e.loss = PacketLoss::kPartitioned;
  EXPECT_EQ(e.ToString(), "A->B DATA 1400@0 [partitioned]");
  e.loss = PacketLoss::kNoRoute;
  EXPECT_EQ(e.ToString(), "A->B DATA 1400@0 [no route]");
}

TEST(PacketLogTest, RecordsInOrderAndRendersWithSeparator) {
  PacketLog log;
  log.Record(Entry("A", "B", "DATA 1400@0"));
  log.Record(Entry("B", "A", "GRANT 10000"));
  EXPECT_EQ(log.Render("; "), "A->B DATA 1400@0; B->A GRANT 10000");
  EXPECT_EQ(log.Render("\n"), "A->B DATA 1400@0\nB->A GRANT 10000");
  EXPECT_EQ(log.Lines(), (std::vector<std::string>{"A->B DATA 1400@0", "B->A GRANT 10000"}));
  EXPECT_EQ(PacketLog().Render("; "), "");
}

TEST(PacketLogTest, FindUpdatesAFateLater) {
  PacketLog log;
  PacketLog::EntryId id = log.Record(Entry("A", "B", "BUSY"));
  ASSERT_NE(log.Find(id), nullptr);
  log.Find(id)->loss = PacketLoss::kPartitioned;
  EXPECT_EQ(log.Render("; "), "A->B BUSY [partitioned]");
  EXPECT_EQ(log.Find(PacketLog::kNotLogged), nullptr);
  EXPECT_EQ(log.Find(id + 1), nullptr);
}

TEST(PacketLogTest, ClearForgetsEntriesAndStaleIds) {
  PacketLog log;
  PacketLog::EntryId old_id = log.Record(Entry("A", "B", "x"));
  log.Clear();
  EXPECT_EQ(log.size(), 0u);
  EXPECT_EQ(log.Find(old_id), nullptr);
  PacketLog::EntryId new_id = log.Record(Entry("A", "B", "y"));
  EXPECT_NE(new_id, old_id);
  EXPECT_EQ(log.Find(old_id), nullptr);  // never aliases the new entry
  ASSERT_NE(log.Find(new_id), nullptr);
  EXPECT_EQ(log.Find(new_id)->description, "y");
}

TEST(PacketLogTest, FilterKeepsOnlyMatchingPackets) {
  PacketLog log;
  log.Record(Entry("A", "B", "CUTOFFS v1"));
  log.SetFilter(DescriptionStartsWithAnyOf({"DATA", "GRANT"}));
  EXPECT_EQ(log.Record(Entry("A", "B", "BUSY")), PacketLog::kNotLogged);
  log.Record(Entry("A", "B", "DATA 1400@0"));
  log.Record(Entry("B", "A", "GRANT 2800"));
  EXPECT_EQ(log.Render("; "), "A->B CUTOFFS v1; A->B DATA 1400@0; B->A GRANT 2800");
  log.SetFilter(nullptr);
  log.Record(Entry("A", "B", "BUSY"));
  EXPECT_EQ(log.size(), 4u);
}

TEST(PacketPredicateTest, Builders) {
  EXPECT_TRUE(DescriptionStartsWith("GRANT")("A", "B", "GRANT 1"));
  EXPECT_FALSE(DescriptionStartsWith("GRANT")("A", "B", "DATA 1@0"));
  EXPECT_TRUE(DescriptionStartsWith("")("A", "B", "anything"));
  PacketPredicate flow = FlowDescriptionStartsWith("B", "A", "GRANT");
  EXPECT_TRUE(flow("B", "A", "GRANT 1"));
  EXPECT_FALSE(flow("A", "B", "GRANT 1"));
  EXPECT_FALSE(flow("B", "A", "BUSY"));
}

}  // namespace
}  // namespace wharf::transport::fake
