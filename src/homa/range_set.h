// homa/range_set.h: RangeSet, the set of byte ranges of a message received so
// far. Packets usually arrive in order, so the set is almost always one range;
// a std::map keeps reordering, duplicates and retransmits of any alignment
// correct without assuming the sender's packet size.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <utility>

namespace wharf::homa {

class RangeSet {
 public:
  // Adds [begin, end). Returns how many bytes were new (0 for a duplicate).
  uint32_t Add(uint32_t begin, uint32_t end);

  // Total bytes covered.
  uint64_t covered() const { return covered_; }
  // True when [0, length) is fully covered.
  bool Complete(uint32_t length) const;
  // Bytes covered contiguously from offset 0.
  uint32_t ContiguousPrefix() const;
  // First gap inside [0, limit) as [begin, end), or nullopt when none.
  std::optional<std::pair<uint32_t, uint32_t>> FirstGap(uint32_t limit) const;
  size_t num_ranges() const { return ranges_.size(); }

 private:
  std::map<uint32_t, uint32_t> ranges_;  // begin -> end, disjoint, non-adjacent
  uint64_t covered_ = 0;
};

}  // namespace wharf::homa
