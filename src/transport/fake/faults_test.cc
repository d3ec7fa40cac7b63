#include "transport/fake/faults.h"

#include <gtest/gtest.h>

namespace wharf::transport::fake {
namespace {

TEST(FaultDiceTest, ZeroProbabilitiesNeverFire) {
  FaultDice dice(1);
  LinkConfig config;
  for (int i = 0; i < 1000; ++i) {
    FaultDecision d = dice.Roll(config);
    EXPECT_FALSE(d.drop || d.duplicate || d.delayed);
  }
}

TEST(FaultDiceTest, CertainProbabilitiesAlwaysFire) {
  FaultDice dice(1);
  LinkConfig config;
  config.drop_probability = 1.0;
  config.duplicate_probability = 1.0;
  config.reorder_probability = 1.0;
  config.reorder_extra_delay_ns = 123;
  for (int i = 0; i < 100; ++i) {
    FaultDecision d = dice.Roll(config);
    EXPECT_TRUE(d.drop && d.duplicate && d.delayed);
    EXPECT_EQ(d.extra_delay_ns, 123);
  }
}

TEST(FaultDiceTest, RatesMatchAndSameSeedRepeats) {
  LinkConfig config;
  config.drop_probability = 0.1;
  config.duplicate_probability = 0.05;
  config.reorder_probability = 0.2;
  FaultDice a(42), b(42), c(43);
  int drops = 0, dups = 0, reorders = 0, differ_from_c = 0;
  constexpr int kRolls = 20000;
  for (int i = 0; i < kRolls; ++i) {
    FaultDecision da = a.Roll(config);
    FaultDecision db = b.Roll(config);
    FaultDecision dc = c.Roll(config);
    EXPECT_EQ(da.drop, db.drop);
    EXPECT_EQ(da.duplicate, db.duplicate);
    EXPECT_EQ(da.delayed, db.delayed);
    differ_from_c += da.drop != dc.drop;
    drops += da.drop;
    dups += da.duplicate;
    reorders += da.delayed;
  }
  // Expected 2000 / 1000 / 4000; bounds are about 5 standard deviations.
  EXPECT_NEAR(drops, 2000, 220);
  EXPECT_NEAR(dups, 1000, 160);
  EXPECT_NEAR(reorders, 4000, 290);
  EXPECT_GT(differ_from_c, 0);
}

TEST(FaultDiceTest, ChangingOneProbabilityKeepsTheOthersOutcomes) {
  LinkConfig lossy;
  lossy.drop_probability = 0.3;
  LinkConfig lossy_and_dup = lossy;
  lossy_and_dup.duplicate_probability = 0.5;
  FaultDice a(7), b(7);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(a.Roll(lossy).drop, b.Roll(lossy_and_dup).drop);
}

TEST(FaultScriptTest, DropsOnlyTheFirstMatchingPacket) {
  FaultScript script;
  script.DropNext(DescriptionStartsWith("GRANT"));
  EXPECT_EQ(script.pending(), 1u);
  EXPECT_FALSE(script.Apply("A", "B", "DATA 1400@0", false).drop);
  EXPECT_TRUE(script.Apply("B", "A", "GRANT 2800", false).drop);
  EXPECT_EQ(script.pending(), 0u);
  EXPECT_FALSE(script.Apply("B", "A", "GRANT 4200", false).drop);
}

TEST(FaultScriptTest, SeveralArmedFaultsFireOnSuccessiveMatches) {
  FaultScript script;
  script.DropNext(DescriptionStartsWith("GRANT"));
  script.DropNext(DescriptionStartsWith("GRANT"));
  EXPECT_TRUE(script.Apply("B", "A", "GRANT 1", false).drop);
  EXPECT_TRUE(script.Apply("B", "A", "GRANT 2", false).drop);
  EXPECT_FALSE(script.Apply("B", "A", "GRANT 3", false).drop);
}

TEST(FaultScriptTest, DuplicateAndDelayFireTogether) {
  FaultScript script;
  script.DelayNext(DescriptionStartsWith("DATA"), 500);
  script.DuplicateNext(DescriptionStartsWith("DATA"));
  FaultDecision d = script.Apply("A", "B", "DATA 1400@0", false);
  EXPECT_FALSE(d.drop);
  EXPECT_TRUE(d.duplicate);
  EXPECT_TRUE(d.delayed);
  EXPECT_EQ(d.extra_delay_ns, 500);
  EXPECT_EQ(script.pending(), 0u);
}

TEST(FaultScriptTest, ADroppedPacketLeavesOtherFaultsArmed) {
  FaultScript script;
  script.DuplicateNext(DescriptionStartsWith("DATA"));
  script.DropNext(DescriptionStartsWith("DATA"));
  FaultDecision d = script.Apply("A", "B", "DATA 0@0", false);
  EXPECT_TRUE(d.drop);
  EXPECT_FALSE(d.duplicate);
  EXPECT_EQ(script.pending(), 1u);
  // A random drop also spares the duplicate fault.
  EXPECT_TRUE(script.Apply("A", "B", "DATA 1@0", true).drop);
  EXPECT_EQ(script.pending(), 1u);
  EXPECT_TRUE(script.Apply("A", "B", "DATA 2@0", false).duplicate);
  EXPECT_EQ(script.pending(), 0u);
}

TEST(FaultScriptTest, PredicateSeesHosts) {
  FaultScript script;
  script.DropNext(FlowDescriptionStartsWith("B", "A"));
  EXPECT_FALSE(script.Apply("B", "C", "x", false).drop);
  EXPECT_TRUE(script.Apply("B", "A", "x", false).drop);
}

}  // namespace
}  // namespace wharf::transport::fake
