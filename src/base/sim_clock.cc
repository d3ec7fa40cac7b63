// SimClock timers: an ordered map from (deadline, sequence) to callback.
#include "base/sim_clock.h"

#include <algorithm>

namespace wharf {

SimClock::TimerId SimClock::ScheduleAt(TimeNs at_ns, std::function<void()> fn) {
  at_ns = std::max(at_ns, now_ns_);
  TimerId id = next_seq_++;
  timers_.emplace(std::make_pair(at_ns, id), std::move(fn));
  deadline_of_.emplace(id, at_ns);
  return id;
}

bool SimClock::Cancel(TimerId id) {
  auto it = deadline_of_.find(id);
  if (it == deadline_of_.end()) return false;
  timers_.erase({it->second, id});
  deadline_of_.erase(it);
  return true;
}

int SimClock::AdvanceTo(TimeNs t_ns) {
  int fired = 0;
  while (!timers_.empty() && timers_.begin()->first.first <= t_ns) {
    auto node = timers_.extract(timers_.begin());
    deadline_of_.erase(node.key().second);
    now_ns_ = std::max(now_ns_, node.key().first);
    node.mapped()();
    ++fired;
  }
  now_ns_ = std::max(now_ns_, t_ns);
  return fired;
}

bool SimClock::RunNext() {
  if (timers_.empty()) return false;
  AdvanceTo(timers_.begin()->first.first);
  return true;
}

TimeNs SimClock::NextDeadline() const {
  return timers_.empty() ? kNever : timers_.begin()->first.first;
}

}  // namespace wharf
