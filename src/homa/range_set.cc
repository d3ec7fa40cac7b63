// RangeSet: merge-on-insert interval set.
#include "homa/range_set.h"

#include <algorithm>

namespace wharf::homa {

uint32_t RangeSet::Add(uint32_t begin, uint32_t end) {
  if (begin >= end) return 0;
  uint64_t before = covered_;
  // Start from the range that begins at or before `begin`, if it reaches it.
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

bool RangeSet::Complete(uint32_t length) const {
  if (length == 0) return true;
  return ranges_.size() == 1 && ranges_.begin()->first == 0 && ranges_.begin()->second >= length;
}

uint32_t RangeSet::ContiguousPrefix() const {
  if (ranges_.empty() || ranges_.begin()->first != 0) return 0;
  return ranges_.begin()->second;
}

std::optional<std::pair<uint32_t, uint32_t>> RangeSet::FirstGap(uint32_t limit) const {
  uint32_t cursor = 0;
  for (const auto& [b, e] : ranges_) {
    if (cursor >= limit) break;
    if (b > cursor) return std::make_pair(cursor, std::min(b, limit));
    cursor = e;
  }
  if (cursor < limit) return std::make_pair(cursor, limit);
  return std::nullopt;
}

}  // namespace wharf::homa
