#include "mesh/window_histogram.h"

#include <gtest/gtest.h>

#include "base/testing/exact_percentile.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace wharf::mesh {
namespace {

using testing_support::ExactPercentile;
using testing_support::WithinASixteenth;

constexpr DurationNs kSec = kNsPerSec;
constexpr DurationNs kMs = kNsPerMs;


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
