// ProbeSchedule: spreading, jitter and the total-rate cap.
#include "mesh/probe_schedule.h"

#include <algorithm>
#include <cmath>

namespace wharf::mesh {

void ProbeSchedule::Reset(std::span<const DurationNs> intervals, double max_per_second,
                          TimeNs now) {
  intervals_.assign(intervals.begin(), intervals.end());
  double asked = 0;
  for (DurationNs& interval : intervals_) {
    interval = std::max<DurationNs>(interval, 1);
    asked += static_cast<double>(kNsPerSec) / static_cast<double>(interval);
  }
  stretch_ = max_per_second > 0 && asked > max_per_second ? asked / max_per_second : 1.0;
  rate_per_second_ = asked / stretch_;
  heap_.clear();
  const size_t n = intervals_.size();
  std::uniform_real_distribution<double> slot_fraction(0.0, 1.0);
  for (size_t i = 0; i < n; ++i) {
    DurationNs& interval = intervals_[i];
    interval = static_cast<DurationNs>(std::ceil(static_cast<double>(interval) * stretch_));
    // Slot i of n, at a random point within the slot.
    const double phase = (static_cast<double>(i) + slot_fraction(random_)) / static_cast<double>(n);
    heap_.push_back({now + static_cast<DurationNs>(phase * static_cast<double>(interval)), i});
  }
  std::make_heap(heap_.begin(), heap_.end(), Later);
}

std::optional<size_t> ProbeSchedule::TakeDue(TimeNs now, TimeNs horizon) {
  if (heap_.empty() || heap_.front().due > horizon) return std::nullopt;
  std::pop_heap(heap_.begin(), heap_.end(), Later);
  Due& top = heap_.back();
  const size_t target = top.target;
  const DurationNs interval = intervals_[target];
  TimeNs next = top.due + Jittered(interval);
  if (next + std::max(interval, kCatchUpSlack) <= now) {
    // Behind by more than two intervals (or a millisecond and one): the
    // probes in between are not sent.
    skipped_ += static_cast<uint64_t>((now - top.due) / interval);
    next = now + Jittered(interval);
  }
  top.due = next;
  std::push_heap(heap_.begin(), heap_.end(), Later);
  return target;
}

DurationNs ProbeSchedule::Jittered(DurationNs interval) {
  std::uniform_real_distribution<double> u(-kJitter, kJitter);
  return std::max<DurationNs>(1, static_cast<DurationNs>(static_cast<double>(interval) * (1.0 + u(random_))));
}

}  // namespace wharf::mesh
