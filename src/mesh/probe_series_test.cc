// ProbeSeries: sequence numbers, outcomes, the network-time split and the
// Prometheus buckets.
#include "mesh/probe_series.h"

#include <gtest/gtest.h>

namespace wharf::mesh {
namespace {

constexpr TimeNs kStart = 50 * kNsPerSec;

TEST(ProbeSeriesTest, SequenceNumbersStartAtOneAndIncrease) {
  ProbeSeries s(kStart);
  EXPECT_EQ(s.Start(kStart), 1u);
  EXPECT_EQ(s.Start(kStart), 2u);
  EXPECT_EQ(s.in_flight(), 2u);
  EXPECT_EQ(s.counters().sent, 2u);
  EXPECT_EQ(s.last_sent_ns(), kStart);
}

TEST(ProbeSeriesTest, NetworkTimeIsTheRoundTripLessTheDwell) {
  ProbeSeries s(kStart);
  const uint64_t seq = *s.Start(kStart);
  s.OnAnswer(seq, kStart + 100 * kNsPerUs, 30 * kNsPerUs);
  EXPECT_EQ(s.rtt().Summary(Window::k10s, kStart + kNsPerMs).max_ns, 100 * kNsPerUs);
  EXPECT_EQ(s.network().Summary(Window::k10s, kStart + kNsPerMs).max_ns, 70 * kNsPerUs);
  EXPECT_EQ(s.rtt_buckets().count, 1u);
  EXPECT_EQ(s.rtt_buckets().sum_ns, 100 * kNsPerUs);
  EXPECT_EQ(s.network_buckets().sum_ns, 70 * kNsPerUs);
  EXPECT_EQ(s.last_answer_ns(), kStart + 100 * kNsPerUs);
}

TEST(ProbeSeriesTest, ADwellLongerThanTheRoundTripIsWeirdAndGivesNoNetworkTime) {
  ProbeSeries s(kStart);
  const uint64_t seq = *s.Start(kStart);
  s.OnAnswer(seq, kStart + 10 * kNsPerUs, 20 * kNsPerUs);
  EXPECT_EQ(s.counters().weird, 1u);
  EXPECT_EQ(s.counters().answered, 1u);
  EXPECT_EQ(s.network().Summary(Window::k10s, kStart + kNsPerMs).answered, 0u);
  EXPECT_EQ(s.network_buckets().count, 0u);
}

TEST(ProbeSeriesTest, BucketsHoldEachValueUnderTheFirstBoundAtOrAboveIt) {
  LatencyBuckets b;
  b.Record(1000);             // exactly 1 us: the first bound
  b.Record(1001);             // just above: the second
  b.Record(100 * kNsPerSec);  // above every bound: only in count
  EXPECT_EQ(b.counts[0], 1u);
  EXPECT_EQ(b.counts[1], 1u);
  uint64_t in_buckets = 0;
  for (uint64_t c : b.counts) in_buckets += c;
  EXPECT_EQ(in_buckets, 2u);
  EXPECT_EQ(b.count, 3u);
}

TEST(ProbeSeriesTest, AnUnknownSequenceIsAStray) {
  ProbeSeries s(kStart);
  s.OnAnswer(7, kStart, 0);
  s.OnFailure(0, kStart, StatusCode::kDeadlineExceeded);
  EXPECT_EQ(s.counters().stray, 2u);
  EXPECT_EQ(s.counters().answered, 0u);
  EXPECT_EQ(s.counters().lost, 0u);
}

TEST(ProbeSeriesTest, ASlotIsFreeAgainOnceItsProbeEnded) {
  ProbeSeries s(kStart);
  for (size_t i = 0; i < ProbeSeries::kMaxInFlight; ++i) ASSERT_TRUE(s.Start(kStart).has_value());
  EXPECT_FALSE(s.Start(kStart).has_value());
  EXPECT_EQ(s.counters().skipped, 1u);
  s.OnFailure(1, kStart, StatusCode::kDeadlineExceeded);
  // Sequence 65 takes slot 1 once probe 1 is gone.
  EXPECT_EQ(s.Start(kStart), ProbeSeries::kMaxInFlight + 1);
}

}  // namespace
}  // namespace wharf::mesh
