#include "mesh/window_histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace wharf::mesh {
namespace {

constexpr DurationNs kSec = kNsPerSec;
constexpr DurationNs kMs = kNsPerMs;

// The nearest-rank percentile of sorted values, with the rank computed as
// CompactHistogram::Percentile computes it, so that both name the same sample.
uint64_t ExactPercentile(const std::vector<uint64_t>& sorted, double p) {
  if (p <= 0) return sorted.front();
  if (p >= 100) return sorted.back();
  long double rank = std::ceil(static_cast<long double>(p) / 100.0L * sorted.size());
  size_t r = std::clamp<size_t>(static_cast<size_t>(rank), 1, sorted.size());
  return sorted[r - 1];
}

// The stated bound: within 1/16 of the exact value (in integers, no rounding).
::testing::AssertionResult WithinASixteenth(uint64_t got, uint64_t exact) {
  const uint64_t error = got > exact ? got - exact : exact - got;
  if (16 * error <= exact) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got " << got << ", exact " << exact;
}

void ExpectPercentilesWithinASixteenth(std::vector<uint64_t> values, const std::string& name) {
  CompactHistogram h;
  for (uint64_t v : values) h.Record(v);
  std::sort(values.begin(), values.end());
  ASSERT_EQ(h.Count(), values.size()) << name;
  EXPECT_EQ(h.Min(), values.front()) << name;
  EXPECT_EQ(h.Max(), values.back()) << name;
  for (double p : {0.0, 0.1, 1.0, 10.0, 25.0, 50.0, 75.0, 90.0, 99.0, 99.9, 100.0}) {
    EXPECT_TRUE(WithinASixteenth(h.Percentile(p), ExactPercentile(values, p))) << name << " p" << p;
  }
}

TEST(WindowTest, NamesSpansAndSlots) {
  ASSERT_EQ(kWindows.size(), 3u);
  EXPECT_EQ(kWindows[0], Window::k10s);
  EXPECT_EQ(kWindows[1], Window::k1m);
  EXPECT_EQ(kWindows[2], Window::k10m);
  EXPECT_EQ(WindowName(Window::k10s), "10s");
  EXPECT_EQ(WindowName(Window::k1m), "1m");
  EXPECT_EQ(WindowName(Window::k10m), "10m");
  EXPECT_EQ(WindowSpan(Window::k10s), 10 * kSec);
  EXPECT_EQ(WindowSpan(Window::k1m), 60 * kSec);
  EXPECT_EQ(WindowSpan(Window::k10m), 600 * kSec);
  EXPECT_EQ(WindowSlotSpan(Window::k10s), 1 * kSec);
  EXPECT_EQ(WindowSlotSpan(Window::k1m), 10 * kSec);
  EXPECT_EQ(WindowSlotSpan(Window::k10m), 60 * kSec);
}

TEST(CompactHistogramTest, EmptyHistogramReportsZeros) {
  CompactHistogram h;
  EXPECT_EQ(h.Count(), 0u);
  EXPECT_EQ(h.Min(), 0u);
  EXPECT_EQ(h.Max(), 0u);
  EXPECT_EQ(h.OverflowCount(), 0u);
  EXPECT_EQ(h.Percentile(0), 0u);
  EXPECT_EQ(h.Percentile(50), 0u);
  EXPECT_EQ(h.Percentile(100), 0u);
}

TEST(CompactHistogramTest, BucketsTileTheRangeAndAreAtMostAnEighthOfTheirLowerBound) {
  EXPECT_EQ(CompactHistogram::BucketLower(0), 0u);
  for (size_t i = 0; i < CompactHistogram::kBuckets; ++i) {
    const uint64_t lower = CompactHistogram::BucketLower(i);
    const uint64_t upper = CompactHistogram::BucketUpper(i);
    ASSERT_LE(lower, upper) << i;
    if (i > 0) {
      ASSERT_EQ(lower, CompactHistogram::BucketUpper(i - 1) + 1) << i;
    }
    const uint64_t width = upper - lower + 1;
    if (lower < 16) {
      EXPECT_EQ(width, 1u) << i;
    } else {
      EXPECT_LE(8 * width, lower) << i;
    }
    EXPECT_EQ(CompactHistogram::BucketIndex(lower), i);
    EXPECT_EQ(CompactHistogram::BucketIndex(upper), i);
  }
  EXPECT_EQ(CompactHistogram::BucketUpper(CompactHistogram::kBuckets - 1), (uint64_t{1} << 36) - 1);
  // About 1.1 KiB, no heap.
  EXPECT_LE(sizeof(CompactHistogram), 1152u);
}

TEST(CompactHistogramTest, ValuesBelowSixteenAreExact) {
  for (uint64_t v = 0; v < 16; ++v) {
    CompactHistogram h;
    h.Record(v);
    h.Record(v);
    EXPECT_EQ(h.Percentile(50), v);
    EXPECT_EQ(h.Percentile(99.9), v);
  }
  CompactHistogram h;
  for (uint64_t v = 0; v < 16; ++v) h.Record(v);
  EXPECT_EQ(h.Percentile(50), 7u);   // rank 8 of 16
  EXPECT_EQ(h.Percentile(75), 11u);  // rank 12
}

TEST(CompactHistogramTest, PercentilesAreWithinASixteenthOfExactNearestRank) {
  std::mt19937_64 rng(42);
  std::vector<uint64_t> uniform;
  std::uniform_int_distribution<uint64_t> uniform_dist(0, 1'000'000);
  for (int i = 0; i < 20000; ++i) uniform.push_back(uniform_dist(rng));
  ExpectPercentilesWithinASixteenth(uniform, "uniform");

  std::vector<uint64_t> exponential;
  std::exponential_distribution<double> exp_dist(1.0 / 50'000.0);
  for (int i = 0; i < 20000; ++i) exponential.push_back(static_cast<uint64_t>(exp_dist(rng)));
  ExpectPercentilesWithinASixteenth(exponential, "exponential");

  std::vector<uint64_t> lognormal;
  std::lognormal_distribution<double> log_dist(11.0, 1.5);
  for (int i = 0; i < 20000; ++i) {
    lognormal.push_back(
        std::min<uint64_t>(static_cast<uint64_t>(log_dist(rng)), CompactHistogram::kMaxTrackable));
  }
  ExpectPercentilesWithinASixteenth(lognormal, "lognormal");

  std::vector<uint64_t> bimodal;
  std::normal_distribution<double> fast(20'000, 2'000), slow(5'000'000, 300'000);
  for (int i = 0; i < 20000; ++i) {
    bimodal.push_back(static_cast<uint64_t>(std::max(0.0, i % 10 == 0 ? slow(rng) : fast(rng))));
  }
  ExpectPercentilesWithinASixteenth(bimodal, "bimodal");

  // The worst case of the bound: every value at the top of its bucket.
  std::vector<uint64_t> tops;
  for (size_t i = 16; i < CompactHistogram::kBuckets; ++i) {
    tops.push_back(CompactHistogram::BucketUpper(i));
  }
  ExpectPercentilesWithinASixteenth(tops, "bucket tops");
  ExpectPercentilesWithinASixteenth(std::vector<uint64_t>(100, 123'456), "constant");
}

TEST(CompactHistogramTest, ValuesAbove2To36AreOverflowWithExactMax) {
  CompactHistogram h;
  for (int i = 0; i < 98; ++i) h.Record(1000);
  h.Record(CompactHistogram::kMaxTrackable);  // the last value with a bucket
  EXPECT_EQ(h.OverflowCount(), 0u);
  h.Record(CompactHistogram::kMaxTrackable + 1);
  h.Record(uint64_t{1} << 40);
  EXPECT_EQ(h.Count(), 101u);
  EXPECT_EQ(h.OverflowCount(), 2u);
  EXPECT_EQ(h.Min(), 1000u);
  EXPECT_EQ(h.Max(), uint64_t{1} << 40);
  EXPECT_TRUE(WithinASixteenth(h.Percentile(50), 1000));
  EXPECT_TRUE(WithinASixteenth(h.Percentile(98), CompactHistogram::kMaxTrackable));  // rank 99
  // Ranks 100 and 101 are overflowed: the only one of them known is Max.
  EXPECT_EQ(h.Percentile(99), uint64_t{1} << 40);
  EXPECT_EQ(h.Percentile(99.5), uint64_t{1} << 40);
  EXPECT_EQ(h.Percentile(100), uint64_t{1} << 40);

  CompactHistogram only_overflow;
  only_overflow.Record(UINT64_MAX);
  EXPECT_EQ(only_overflow.Count(), 1u);
  EXPECT_EQ(only_overflow.Min(), UINT64_MAX);
  EXPECT_EQ(only_overflow.Percentile(50), UINT64_MAX);
}

TEST(CompactHistogramTest, MergeEqualsRecordingBoth) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> dist(10.0, 2.0);
  CompactHistogram a, b, both;
  for (int i = 0; i < 5000; ++i) {
    const uint64_t v = static_cast<uint64_t>(dist(rng));
    (i % 3 == 0 ? a : b).Record(v);
    both.Record(v);
  }
  b.Record(uint64_t{1} << 38);  // an overflow on one side
  both.Record(uint64_t{1} << 38);
  CompactHistogram merged = a;
  merged.Merge(b);
  EXPECT_EQ(merged.Count(), both.Count());
  EXPECT_EQ(merged.OverflowCount(), 1u);
  EXPECT_EQ(merged.Min(), both.Min());
  EXPECT_EQ(merged.Max(), both.Max());
  for (double p : {0.0, 1.0, 50.0, 90.0, 99.0, 99.9, 100.0}) {
    EXPECT_EQ(merged.Percentile(p), both.Percentile(p)) << p;
  }

  // Merging an empty histogram changes nothing; merging into one copies.
  CompactHistogram unchanged = merged;
  unchanged.Merge(CompactHistogram{});
  EXPECT_EQ(unchanged.Count(), merged.Count());
  EXPECT_EQ(unchanged.Min(), merged.Min());
  CompactHistogram empty;
  empty.Merge(a);
  EXPECT_EQ(empty.Count(), a.Count());
  EXPECT_EQ(empty.Min(), a.Min());
  EXPECT_EQ(empty.Max(), a.Max());
  EXPECT_EQ(empty.Percentile(50), a.Percentile(50));
}

TEST(CompactHistogramTest, ResetForgetsEverything) {
  CompactHistogram h;
  h.Record(5);
  h.Record(uint64_t{1} << 50);
  h.Reset();
  EXPECT_EQ(h.Count(), 0u);
  EXPECT_EQ(h.OverflowCount(), 0u);
  EXPECT_EQ(h.Min(), 0u);
  EXPECT_EQ(h.Max(), 0u);
  EXPECT_EQ(h.Percentile(50), 0u);
  h.Record(700);
  EXPECT_EQ(h.Min(), 700u);
  EXPECT_EQ(h.Max(), 700u);
  EXPECT_EQ(h.Percentile(0), 700u);
}

TEST(CompactHistogramTest, PercentileArgumentIsClamped) {
  CompactHistogram h;
  for (uint64_t v = 100; v <= 10000; v += 100) h.Record(v);
  EXPECT_EQ(h.Percentile(-5), 100u);
  EXPECT_EQ(h.Percentile(std::numeric_limits<double>::quiet_NaN()), 100u);
  EXPECT_EQ(h.Percentile(150), 10000u);
  EXPECT_EQ(h.Percentile(1e-9), h.Percentile(1.0));  // rank 1 either way
}

void ExpectEmpty(const WindowSummary& s, const std::string& name) {
  EXPECT_EQ(s.answered, 0u) << name;
  EXPECT_EQ(s.lost, 0u) << name;
  EXPECT_EQ(s.min_ns, 0u) << name;
  EXPECT_EQ(s.p50_ns, 0u) << name;
  EXPECT_EQ(s.p90_ns, 0u) << name;
  EXPECT_EQ(s.p99_ns, 0u) << name;
  EXPECT_EQ(s.p999_ns, 0u) << name;
  EXPECT_EQ(s.max_ns, 0u) << name;
}

TEST(SlidingWindowsTest, EmptyStateReportsNoData) {
  const TimeNs t0 = 1000 * kSec;
  SlidingWindows windows(t0);
  for (Window w : kWindows) {
    ExpectEmpty(windows.Summary(w, t0), std::string(WindowName(w)));
    ExpectEmpty(windows.Summary(w, t0 + 5 * kSec), std::string(WindowName(w)));
  }
  EXPECT_TRUE(windows.History(t0).empty());
  EXPECT_TRUE(windows.History(t0 + 10 * kSec - 1).empty());
  const std::vector<HistoryPoint> history = windows.History(t0 + 10 * kSec);
  ASSERT_EQ(history.size(), 1u);
  EXPECT_EQ(history[0].start_ns, t0);
  EXPECT_EQ(history[0].answered, 0u);
  EXPECT_EQ(history[0].lost, 0u);
  EXPECT_EQ(history[0].max_ns, 0u);
}

TEST(SlidingWindowsTest, ALossOnlyWindowHasNoLatencies) {
  const TimeNs t0 = 50 * kSec;
  SlidingWindows windows(t0);
  windows.RecordLoss(t0 + 100 * kMs);
  windows.RecordLoss(t0 + 200 * kMs);
  windows.RecordLoss(t0 + 3 * kSec);
  for (Window w : kWindows) {
    const WindowSummary s = windows.Summary(w, t0 + 4 * kSec);
    EXPECT_EQ(s.answered, 0u) << WindowName(w);
    EXPECT_EQ(s.lost, 3u) << WindowName(w);
    EXPECT_EQ(s.min_ns, 0u);
    EXPECT_EQ(s.p50_ns, 0u);
    EXPECT_EQ(s.p99_ns, 0u);
    EXPECT_EQ(s.max_ns, 0u);
  }
  const std::vector<HistoryPoint> history = windows.History(t0 + 10 * kSec);
  ASSERT_EQ(history.size(), 1u);
  EXPECT_EQ(history[0].answered, 0u);
  EXPECT_EQ(history[0].lost, 3u);
  EXPECT_EQ(history[0].p50_ns, 0u);
  EXPECT_EQ(history[0].max_ns, 0u);
}

TEST(SlidingWindowsTest, ASummaryHasTheWindowsPercentiles) {
  const TimeNs t0 = 7 * kSec;
  SlidingWindows windows(t0);
  std::mt19937_64 rng(3);
  std::lognormal_distribution<double> dist(12.0, 1.0);
  std::vector<uint64_t> values;
  for (int i = 0; i < 3000; ++i) {
    values.push_back(static_cast<uint64_t>(dist(rng)));
    windows.RecordLatency(t0 + i * 300 * 1000, values.back());  // 0.9 s in all
  }
  windows.RecordLoss(t0 + 900 * kMs);
  std::sort(values.begin(), values.end());
  for (Window w : kWindows) {
    const WindowSummary s = windows.Summary(w, t0 + 950 * kMs);
    EXPECT_EQ(s.answered, values.size()) << WindowName(w);
    EXPECT_EQ(s.lost, 1u);
    EXPECT_EQ(s.min_ns, values.front());
    EXPECT_EQ(s.max_ns, values.back());
    EXPECT_TRUE(WithinASixteenth(s.p50_ns, ExactPercentile(values, 50))) << WindowName(w);
    EXPECT_TRUE(WithinASixteenth(s.p90_ns, ExactPercentile(values, 90))) << WindowName(w);
    EXPECT_TRUE(WithinASixteenth(s.p99_ns, ExactPercentile(values, 99))) << WindowName(w);
    EXPECT_TRUE(WithinASixteenth(s.p999_ns, ExactPercentile(values, 99.9))) << WindowName(w);
    EXPECT_LT(s.p50_ns, s.p99_ns);
  }
}

// A value recorded at t is in window w at `now` exactly while
// floor(now) - floor(t) <= span, floor to the window's slot.
TEST(SlidingWindowsTest, EachWindowKeepsItsSpanAndForgetsWhatIsOlder) {
  for (Window w : kWindows) {
    const DurationNs slot = WindowSlotSpan(w);
    const DurationNs span = WindowSpan(w);
    const TimeNs base = 3600 * kSec;  // a multiple of every slot
    for (DurationNs offset : {DurationNs{0}, DurationNs{1}, slot / 2, slot - 1}) {
      const std::string name = std::string(WindowName(w)) + " +" + std::to_string(offset);
      const TimeNs t = base + offset;
      // `stale` records once and is only read; `moving` also records a loss
      // at every step, so that its slots are closed and cleared as time goes.
      SlidingWindows stale(base - 5 * kSec);
      SlidingWindows moving(base - 5 * kSec);
      stale.RecordLatency(t, 777);
      moving.RecordLatency(t, 777);
      const TimeNs last_in = base + span + slot - 1;  // slot start + span + one slot
      std::vector<TimeNs> nows;
      for (TimeNs now = t; now <= t + span + 2 * slot; now += slot / 4) nows.push_back(now);
      for (TimeNs now : {t + span, last_in, last_in + 1}) nows.push_back(now);
      std::sort(nows.begin(), nows.end());
      for (TimeNs now : nows) {
        const uint64_t expected = now <= last_in ? 1 : 0;
        if (now <= t + span) {
          ASSERT_EQ(expected, 1u);  // everything of the last span is kept
        }
        EXPECT_EQ(stale.Summary(w, now).answered, expected) << name << " at t+" << now - t;
        moving.RecordLoss(now);
        const WindowSummary s = moving.Summary(w, now);
        EXPECT_EQ(s.answered, expected) << name << " at t+" << now - t << " (moving)";
        EXPECT_EQ(s.max_ns, expected * 777) << name;
      }
    }
  }
}

TEST(SlidingWindowsTest, TimesBeforeTheClocksOriginAreFlooredToTheirSlot) {
  SlidingWindows windows(-5 * kSec);
  windows.RecordLatency(-1, 10);  // second -1
  windows.RecordLatency(0, 20);   // second 0
  EXPECT_EQ(windows.Summary(Window::k10s, 10 * kSec - 1).answered, 2u);
  const WindowSummary s = windows.Summary(Window::k10s, 10 * kSec);
  EXPECT_EQ(s.answered, 1u);
  EXPECT_EQ(s.min_ns, 20u);
  const std::vector<HistoryPoint> history = windows.History(10 * kSec);
  ASSERT_EQ(history.size(), 2u);
  EXPECT_EQ(history[0].start_ns, -10 * kSec);
  EXPECT_EQ(history[0].max_ns, 10u);
  EXPECT_EQ(history[1].start_ns, 0);
  EXPECT_EQ(history[1].max_ns, 20u);
}

TEST(SlidingWindowsTest, AJumpOfHoursClearsEverything) {
  const TimeNs t0 = 100 * kSec;
  SlidingWindows moving(t0);
  SlidingWindows stale(t0);
  for (TimeNs t = t0; t < t0 + 15 * 60 * kSec; t += 700 * kMs) {
    for (SlidingWindows* windows : {&moving, &stale}) {
      windows->RecordLatency(t, 5000);
      windows->RecordLoss(t);
    }
  }
  const TimeNs later = t0 + 3 * 3600 * kSec + 123;
  moving.RecordLoss(later);
  for (Window w : kWindows) {
    const WindowSummary s = moving.Summary(w, later);
    EXPECT_EQ(s.answered, 0u) << WindowName(w);
    EXPECT_EQ(s.lost, 1u) << WindowName(w);
    ExpectEmpty(stale.Summary(w, later), std::string(WindowName(w)) + " (stale)");
  }
  for (SlidingWindows* windows : {&moving, &stale}) {
    const std::vector<HistoryPoint> history = windows->History(later);
    ASSERT_EQ(history.size(), 60u);
    for (const HistoryPoint& point : history) {
      EXPECT_EQ(point.answered, 0u) << point.start_ns;
      EXPECT_EQ(point.lost, 0u) << point.start_ns;
    }
  }
  // And recording goes on as before.
  moving.RecordLatency(later + kSec, 42);
  const WindowSummary s = moving.Summary(Window::k10m, later + kSec);
  EXPECT_EQ(s.answered, 1u);
  EXPECT_EQ(s.min_ns, 42u);
  EXPECT_EQ(s.max_ns, 42u);
}

TEST(SlidingWindowsTest, AnEarlierNowIsTakenAsTheLatest) {
  SlidingWindows windows(0);
  windows.RecordLatency(100 * kSec + 500 * kMs, 1000);
  windows.RecordLatency(50 * kSec, 2000);  // counts at 100.5 s
  windows.RecordLoss(0);
  const WindowSummary at_zero = windows.Summary(Window::k10s, 0);
  EXPECT_EQ(at_zero.answered, 2u);
  EXPECT_EQ(at_zero.lost, 1u);
  EXPECT_EQ(at_zero.max_ns, 2000u);
  // Both leave with the slot of 100.5 s, at 111 s.
  EXPECT_EQ(windows.Summary(Window::k10s, 111 * kSec - 1).answered, 2u);
  EXPECT_EQ(windows.Summary(Window::k10s, 111 * kSec).answered, 0u);
  const std::vector<HistoryPoint> early = windows.History(0);
  const std::vector<HistoryPoint> latest = windows.History(100 * kSec + 500 * kMs);
  ASSERT_EQ(early.size(), latest.size());
  EXPECT_EQ(early.size(), 10u);  // 0 s .. 90 s
  // An earlier `now` after time moved on leaves earlier slots alone.
  windows.RecordLatency(125 * kSec, 3000);
  windows.RecordLatency(5 * kSec, 4000);  // counts at 125 s
  const std::vector<HistoryPoint> history = windows.History(130 * kSec);
  ASSERT_EQ(history.size(), 13u);
  EXPECT_EQ(history[10].answered, 2u);  // 100 s
  EXPECT_EQ(history[10].lost, 1u);
  EXPECT_EQ(history[11].answered, 0u);  // 110 s
  EXPECT_EQ(history[12].answered, 2u);  // 120 s
  EXPECT_EQ(history[12].max_ns, 4000u);
}

TEST(SlidingWindowsTest, HistoryListsClosedIntervalsOldestFirstWithGaps) {
  const TimeNs t0 = 1003 * kSec;  // in the interval of 1000 s
  SlidingWindows windows(t0);
  windows.RecordLatency(1005 * kSec, 100);
  windows.RecordLatency(1025 * kSec, 200);
  windows.RecordLatency(1026 * kSec, 300);
  windows.RecordLoss(1029 * kSec);
  // 1030 s .. 1040 s saw nothing; 1040 s is the current interval.
  const std::vector<HistoryPoint> history = windows.History(1045 * kSec);
  ASSERT_EQ(history.size(), 4u);
  for (size_t i = 0; i < history.size(); ++i) {
    EXPECT_EQ(history[i].start_ns, (1000 + 10 * static_cast<int64_t>(i)) * kSec);
  }
  EXPECT_EQ(history[0].answered, 1u);
  EXPECT_EQ(history[0].p50_ns, 100u);
  EXPECT_EQ(history[0].p99_ns, 100u);
  EXPECT_EQ(history[0].max_ns, 100u);
  EXPECT_EQ(history[1].answered, 0u);  // a gap
  EXPECT_EQ(history[1].lost, 0u);
  EXPECT_EQ(history[1].max_ns, 0u);
  EXPECT_EQ(history[2].answered, 2u);
  EXPECT_EQ(history[2].lost, 1u);
  EXPECT_TRUE(WithinASixteenth(history[2].p50_ns, 200));
  EXPECT_TRUE(WithinASixteenth(history[2].p99_ns, 300));
  EXPECT_EQ(history[2].max_ns, 300u);
  EXPECT_EQ(history[3].answered, 0u);

  // The same once a record has closed the intervals.
  windows.RecordLoss(1047 * kSec);
  const std::vector<HistoryPoint> closed = windows.History(1049 * kSec);
  ASSERT_EQ(closed.size(), 4u);
  for (size_t i = 0; i < closed.size(); ++i) {
    EXPECT_EQ(closed[i].start_ns, history[i].start_ns);
    EXPECT_EQ(closed[i].answered, history[i].answered);
    EXPECT_EQ(closed[i].lost, history[i].lost);
    EXPECT_EQ(closed[i].p50_ns, history[i].p50_ns);
    EXPECT_EQ(closed[i].p99_ns, history[i].p99_ns);
    EXPECT_EQ(closed[i].max_ns, history[i].max_ns);
  }
  // The current interval is not listed until it closes.
  const std::vector<HistoryPoint> next = windows.History(1050 * kSec);
  ASSERT_EQ(next.size(), 5u);
  EXPECT_EQ(next[4].start_ns, 1040 * kSec);
  EXPECT_EQ(next[4].lost, 1u);
}

TEST(SlidingWindowsTest, HistoryIsCappedAtTheLastTenMinutes) {
  const TimeNs t0 = 0;
  SlidingWindows windows(t0);
  TimeNs now = t0;
  for (int64_t i = 0; i < 90; ++i) {  // 15 minutes, one latency per interval
    now = i * 10 * kSec + 4 * kSec;
    windows.RecordLatency(now, static_cast<uint64_t>(1000 + i));
  }
  // now is in interval 89: the points are intervals 29 .. 88.
  const std::vector<HistoryPoint> history = windows.History(now);
  ASSERT_EQ(history.size(), 60u);
  for (size_t k = 0; k < history.size(); ++k) {
    const int64_t interval = 29 + static_cast<int64_t>(k);
    EXPECT_EQ(history[k].start_ns, interval * 10 * kSec);
    EXPECT_EQ(history[k].answered, 1u);
    EXPECT_EQ(history[k].max_ns, static_cast<uint64_t>(1000 + interval));
  }
  // Ten minutes without records: only gaps, still 60.
  const std::vector<HistoryPoint> quiet = windows.History(now + 600 * kSec);
  ASSERT_EQ(quiet.size(), 60u);
  EXPECT_EQ(quiet.front().start_ns, 89 * 10 * kSec);
  EXPECT_EQ(quiet.front().answered, 1u);  // interval 89, never closed by a record
  for (size_t k = 1; k < quiet.size(); ++k) EXPECT_EQ(quiet[k].answered, 0u);
}

TEST(SlidingWindowsTest, HistoryStartsAtTheCreationInterval) {
  SlidingWindows windows(1035 * kSec);
  const std::vector<HistoryPoint> history = windows.History(1100 * kSec);
  ASSERT_EQ(history.size(), 7u);
  EXPECT_EQ(history.front().start_ns, 1030 * kSec);
  EXPECT_EQ(history.back().start_ns, 1090 * kSec);
  SlidingWindows on_boundary(1040 * kSec);
  EXPECT_EQ(on_boundary.History(1100 * kSec).size(), 6u);
}

// Random records and reads, checked against every sample kept in a vector.
TEST(SlidingWindowsTest, MatchesABruteForceModel) {
  struct Sample {
    TimeNs t;
    bool lost;
    uint64_t ns;
  };
  auto floor_div = [](TimeNs t, DurationNs d) { return t / d - (t % d < 0 ? 1 : 0); };
  std::mt19937_64 rng(2024);
  std::uniform_int_distribution<int> percent(0, 99);
  std::lognormal_distribution<double> latency(11.0, 1.2);

  const TimeNs created = -95 * kSec + 7;
  SlidingWindows windows(created);
  std::vector<Sample> samples;
  TimeNs last = created;  // the model's clamp
  TimeNs now = created;

  auto check_summary = [&](Window w, TimeNs at) {
    at = std::max(at, last);
    const DurationNs slot = WindowSlotSpan(w);
    const int64_t first = floor_div(at, slot) - WindowSpan(w) / slot;
    std::vector<uint64_t> values;
    uint64_t lost = 0;
    for (const Sample& s : samples) {
      if (floor_div(s.t, slot) < first) continue;
      if (s.lost) {
        ++lost;
      } else {
        values.push_back(s.ns);
      }
    }
    const WindowSummary got = windows.Summary(w, at);
    ASSERT_EQ(got.answered, values.size()) << WindowName(w) << " at " << at;
    ASSERT_EQ(got.lost, lost) << WindowName(w) << " at " << at;
    if (values.empty()) {
      ASSERT_EQ(got.max_ns, 0u);
      return;
    }
    std::sort(values.begin(), values.end());
    ASSERT_EQ(got.min_ns, values.front());
    ASSERT_EQ(got.max_ns, values.back());
    ASSERT_TRUE(WithinASixteenth(got.p50_ns, ExactPercentile(values, 50)));
    ASSERT_TRUE(WithinASixteenth(got.p90_ns, ExactPercentile(values, 90)));
    ASSERT_TRUE(WithinASixteenth(got.p99_ns, ExactPercentile(values, 99)));
    ASSERT_TRUE(WithinASixteenth(got.p999_ns, ExactPercentile(values, 99.9)));
  };
  auto check_history = [&](TimeNs at) {
    at = std::max(at, last);
    const int64_t current = floor_div(at, 10 * kSec);
    const int64_t first = std::max(floor_div(created, 10 * kSec), current - 60);
    const std::vector<HistoryPoint> got = windows.History(at);
    ASSERT_EQ(got.size(), static_cast<size_t>(current - first)) << at;
    for (size_t k = 0; k < got.size(); ++k) {
      const int64_t interval = first + static_cast<int64_t>(k);
      ASSERT_EQ(got[k].start_ns, interval * 10 * kSec);
      std::vector<uint64_t> values;
      uint64_t lost = 0;
      for (const Sample& s : samples) {
        if (floor_div(s.t, 10 * kSec) != interval) continue;
        if (s.lost) {
          ++lost;
        } else {
          values.push_back(s.ns);
        }
      }
      ASSERT_EQ(got[k].answered, values.size()) << at << " interval " << interval;
      ASSERT_EQ(got[k].lost, lost) << at << " interval " << interval;
      if (values.empty()) {
        ASSERT_EQ(got[k].max_ns, 0u);
        continue;
      }
      std::sort(values.begin(), values.end());
      ASSERT_EQ(got[k].max_ns, values.back());
      ASSERT_TRUE(WithinASixteenth(got[k].p50_ns, ExactPercentile(values, 50)));
      ASSERT_TRUE(WithinASixteenth(got[k].p99_ns, ExactPercentile(values, 99)));
    }
  };

  for (int step = 0; step < 6000; ++step) {
    const int dice = percent(rng);
    if (dice < 80) {
      now += std::uniform_int_distribution<DurationNs>(0, 900 * kMs)(rng);
    } else if (dice < 88) {
      now += std::uniform_int_distribution<DurationNs>(1 * kSec, 25 * kSec)(rng);
    } else if (dice < 92) {
      now += std::uniform_int_distribution<DurationNs>(30 * kSec, 400 * kSec)(rng);
    } else if (dice < 93) {
      now += std::uniform_int_distribution<DurationNs>(3600 * kSec, 3 * 3600 * kSec)(rng);
    } else {
      // Onto a slot boundary, or just before one.
      const DurationNs slot = std::array{1 * kSec, 10 * kSec, 60 * kSec}[dice % 3];
      now = (floor_div(now, slot) + 1) * slot - (dice % 2);
    }
    // Now and then an earlier `now`, as a late caller might pass.
    const TimeNs at = percent(rng) < 3 ? now - 2 * kSec : now;
    const TimeNs effective = std::max(at, last);
    last = effective;
    if (percent(rng) < 20) {
      windows.RecordLoss(at);
      samples.push_back({effective, true, 0});
    } else {
      const uint64_t ns = static_cast<uint64_t>(latency(rng));
      windows.RecordLatency(at, ns);
      samples.push_back({effective, false, ns});
    }
    // Drop samples no window or history point can still show.
    if (samples.size() > 4000) {
      const TimeNs horizon = last - 12 * 60 * kSec;
      std::erase_if(samples, [&](const Sample& s) { return s.t < horizon; });
    }
    if (step % 3 == 0) {
      // Read at now, and sometimes later, without records in between.
      const TimeNs read_at =
          percent(rng) < 30 ? now + std::uniform_int_distribution<DurationNs>(0, 700 * kSec)(rng)
                            : now;
      for (Window w : kWindows) {
        check_summary(w, read_at);
        if (HasFatalFailure()) return;
      }
      if (step % 30 == 0) {
        check_history(read_at);
        if (HasFatalFailure()) return;
      }
    }
  }
}

}  // namespace
}  // namespace wharf::mesh
