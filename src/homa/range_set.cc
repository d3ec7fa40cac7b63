// RangeSet: merge-on-insert interval set.
#include "homa/range_set.h"

#include <algorithm>

namespace wharf::homa {

uint32_t RangeSet::Add(uint32_t begin, uint32_t end) {
  if (begin >= end) return 0;
  uint64_t before = covered_;
  if (begin <= prefix_end_) {
    // Extends (or repeats) the contiguous prefix: the in-order fast path.
    if (end > prefix_end_) {
      covered_ += end - prefix_end_;
      prefix_end_ = end;
      // Overlaps with ranges that arrived early are counted once.
      AbsorbIntoPrefix();
    }
    return static_cast<uint32_t>(covered_ - before);
  }
  // Past a gap: merge into the map.
  auto it = ranges_.upper_bound(begin);
  if (it != ranges_.begin()) {
    auto prev = std::prev(it);
    if (prev->second >= begin) it = prev;
  }
  uint32_t new_begin = begin;
  uint32_t new_end = end;
  while (it != ranges_.end() && it->first <= new_end) {
    new_begin = std::min(new_begin, it->first);
    new_end = std::max(new_end, it->second);
    covered_ -= it->second - it->first;
    it = ranges_.erase(it);
  }
  ranges_.emplace(new_begin, new_end);
  covered_ += new_end - new_begin;
  return static_cast<uint32_t>(covered_ - before);
}

void RangeSet::AbsorbIntoPrefix() {
  // The prefix just grew and was counted in full, so any early range it now
  // reaches is partly counted twice: take the range out entirely, then count
  // back only its part past the prefix.
  while (!ranges_.empty() && ranges_.begin()->first <= prefix_end_) {
    auto [b, e] = *ranges_.begin();
    ranges_.erase(ranges_.begin());
    covered_ -= e - b;
    if (e > prefix_end_) {
      covered_ += e - prefix_end_;
      prefix_end_ = e;
    }
  }
}

bool RangeSet::Complete(uint32_t length) const { return prefix_end_ >= length; }

uint32_t RangeSet::ContiguousPrefix() const { return prefix_end_; }

std::optional<std::pair<uint32_t, uint32_t>> RangeSet::FirstGap(uint32_t limit) const {
  uint32_t cursor = prefix_end_;
  for (const auto& [b, e] : ranges_) {
    if (cursor >= limit) break;
    if (b > cursor) return std::make_pair(cursor, std::min(b, limit));
    cursor = e;
  }
  if (cursor < limit) return std::make_pair(cursor, limit);
  return std::nullopt;
}

}  // namespace wharf::homa
