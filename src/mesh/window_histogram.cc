// SlidingWindows: advancing the rings, and reading windows and history out
// of them. Recording into a histogram is inline in window_histogram.h.
#include "mesh/window_histogram.h"

#include <algorithm>
#include <cmath>

namespace wharf::mesh {

std::string_view WindowName(Window w) {
  switch (w) {
    case Window::k10s:
      return "10s";
    case Window::k1m:
      return "1m";
    case Window::k10m:
      return "10m";
  }
  return "?";
}

DurationNs WindowSpan(Window w) {
  switch (w) {
    case Window::k10s:
      return 10 * kNsPerSec;
    case Window::k1m:
      return 60 * kNsPerSec;
    case Window::k10m:
      return 600 * kNsPerSec;
  }
  return 0;
}

DurationNs WindowSlotSpan(Window w) {
  switch (w) {
    case Window::k10s:
      return kNsPerSec;
    case Window::k1m:
      return 10 * kNsPerSec;
    case Window::k10m:
      return 60 * kNsPerSec;
  }
  return kNsPerSec;
}

SlidingWindows::SlidingWindows(TimeNs now) : created_ns_(now), last_ns_(now) {}

void SlidingWindows::RecordLatency(TimeNs now, uint64_t ns) {
  if (now > last_ns_) Advance(now);
  Current().latencies.Record(ns);
}

void SlidingWindows::RecordLoss(TimeNs now) {
  if (now > last_ns_) Advance(now);
  ++Current().lost;
}

void SlidingWindows::RecordMany(TimeNs now, const CompactHistogram& latencies, uint64_t lost) {
  if (now > last_ns_) Advance(now);
  Slot& slot = Current();
  slot.latencies.Merge(latencies);
  slot.lost += static_cast<uint32_t>(lost);
}

void SlidingWindows::Advance(TimeNs now) {
  const int64_t old_second = SlotNumber(last_ns_, kSecondNs);
  const int64_t old_ten = SlotNumber(last_ns_, kTenNs);
  const int64_t old_minute = SlotNumber(last_ns_, kMinuteNs);
  const int64_t new_second = SlotNumber(now, kSecondNs);
  const int64_t new_ten = SlotNumber(now, kTenNs);
  const int64_t new_minute = SlotNumber(now, kMinuteNs);

  // Close first, while the finer slots of the closing periods are intact.
  if (new_ten > old_ten) {
    // old_ten's slot held old_ten - 6, which the 1 min window no longer needs.
    Slot& closed = tens_[RingIndex(old_ten, kTenSlots)];
    Tally tally;
    AddTen(old_ten, tally);  // from the seconds: old_ten is not closed as of last_ns_
    closed.latencies = tally.latencies;
    closed.lost = static_cast<uint32_t>(tally.lost);
    history_[RingIndex(old_ten, kHistoryPoints)] = StoredPoint{
        .p50_ns = closed.latencies.Percentile(50.0),
        .p99_ns = closed.latencies.Percentile(99.0),
        .max_ns = closed.latencies.Max(),
        .answered = static_cast<uint32_t>(closed.latencies.Count()),
        .lost = closed.lost,
    };
  }
  if (new_minute > old_minute) {
    Slot& closed = minutes_[RingIndex(old_minute, kMinuteSlots)];
    closed.Reset();
    // The minute's 10-second slots, old_ten among them, are all closed now.
    for (int64_t i = old_minute * 6; i <= old_ten; ++i) {
      const Slot& ten = tens_[RingIndex(i, kTenSlots)];
      closed.latencies.Merge(ten.latencies);
      closed.lost += ten.lost;
    }
  }

  // Clear the slots that come into range, at most a ring's worth each: after
  // a jump longer than a ring, every slot of it.
  for (int64_t s = std::max(old_second + 1, new_second - (kSecondSlots - 1)); s <= new_second;
       ++s) {
    seconds_[RingIndex(s, kSecondSlots)].Reset();
  }
  for (int64_t i = std::max(old_ten + 1, new_ten - kTenSlots); i < new_ten; ++i) {
    tens_[RingIndex(i, kTenSlots)].Reset();
  }
  for (int64_t m = std::max(old_minute + 1, new_minute - kMinuteSlots); m < new_minute; ++m) {
    minutes_[RingIndex(m, kMinuteSlots)].Reset();
  }
  for (int64_t i = std::max(old_ten + 1, new_ten - kHistoryPoints); i < new_ten; ++i) {
    history_[RingIndex(i, kHistoryPoints)] = StoredPoint{};
  }
  last_ns_ = now;
}

void SlidingWindows::AddSecond(int64_t s, Tally& tally) const {
  const int64_t last = SlotNumber(last_ns_, kSecondNs);
  if (s > last || s < last - (kSecondSlots - 1)) return;
  tally.Add(seconds_[RingIndex(s, kSecondSlots)]);
}

void SlidingWindows::AddTen(int64_t i, Tally& tally) const {
  const int64_t last = SlotNumber(last_ns_, kTenNs);
  if (i == last) {
    // Not closed yet: its seconds, all within the seconds ring.
    for (int64_t s = i * 10; s < (i + 1) * 10; ++s) AddSecond(s, tally);
  } else if (i < last && i >= last - kTenSlots) {
    tally.Add(tens_[RingIndex(i, kTenSlots)]);
  }
}

void SlidingWindows::AddMinute(int64_t m, Tally& tally) const {
  const int64_t last = SlotNumber(last_ns_, kMinuteNs);
  if (m == last) {
    // Not closed yet: its 10-second intervals, closed or not.
    for (int64_t i = m * 6; i < (m + 1) * 6; ++i) AddTen(i, tally);
  } else if (m < last && m >= last - kMinuteSlots) {
    tally.Add(minutes_[RingIndex(m, kMinuteSlots)]);
  }
}

WindowSummary SlidingWindows::Summary(Window w, TimeNs now) const {
  now = std::max(now, last_ns_);
  const DurationNs slot_ns = WindowSlotSpan(w);
  const int64_t last = SlotNumber(now, slot_ns);
  const int64_t first = last - WindowSpan(w) / slot_ns;
  Tally tally;
  for (int64_t n = first; n <= last; ++n) {
    switch (w) {
      case Window::k10s:
        AddSecond(n, tally);
        break;
      case Window::k1m:
        AddTen(n, tally);
        break;
      case Window::k10m:
        AddMinute(n, tally);
        break;
    }
  }
  WindowSummary summary;
  summary.answered = tally.latencies.Count();
  summary.lost = tally.lost;
  if (summary.answered == 0) return summary;
  summary.min_ns = tally.latencies.Min();
  summary.p50_ns = tally.latencies.Percentile(50.0);
  summary.p90_ns = tally.latencies.Percentile(90.0);
  summary.p99_ns = tally.latencies.Percentile(99.0);
  summary.p999_ns = tally.latencies.Percentile(99.9);
  summary.max_ns = tally.latencies.Max();
  return summary;
}

std::vector<HistoryPoint> SlidingWindows::History(TimeNs now) const {
  now = std::max(now, last_ns_);
  const int64_t current = SlotNumber(now, kTenNs);
  const int64_t last = SlotNumber(last_ns_, kTenNs);
  const int64_t first = std::max(SlotNumber(created_ns_, kTenNs), current - kHistoryPoints);
  std::vector<HistoryPoint> points;
  points.reserve(static_cast<size_t>(std::max<int64_t>(0, current - first)));
  for (int64_t i = first; i < current; ++i) {
    HistoryPoint point{
        .start_ns = i * kTenNs, .answered = 0, .lost = 0, .p50_ns = 0, .p99_ns = 0, .max_ns = 0};
    if (i < last) {
      const StoredPoint& stored = history_[RingIndex(i, kHistoryPoints)];
      point.answered = stored.answered;
      point.lost = stored.lost;
      point.p50_ns = stored.p50_ns;
      point.p99_ns = stored.p99_ns;
      point.max_ns = stored.max_ns;
    } else if (i == last) {
      // Ended by `now` but not closed yet: read from the seconds.
      Tally tally;
      AddTen(i, tally);
      point.answered = tally.latencies.Count();
      point.lost = tally.lost;
      point.p50_ns = tally.latencies.Percentile(50.0);
      point.p99_ns = tally.latencies.Percentile(99.0);
      point.max_ns = tally.latencies.Max();
    }
    points.push_back(point);
  }
  return points;
}

}  // namespace wharf::mesh
