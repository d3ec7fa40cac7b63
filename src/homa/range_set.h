// homa/range_set.h: RangeSet, the set of byte ranges of a message received so
// far. Packets usually arrive in order, so the common case is one counter (the
// contiguous prefix) and no allocation; a std::map holds only ranges that
// arrived past a gap, keeping reordering, duplicates and retransmits of any
// alignment correct without assuming the sender's packet size.
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
  size_t num_ranges() const { return ranges_.size() + (prefix_end_ > 0 ? 1 : 0); }

 private:
  // Moves ranges that now touch the prefix into it.
  void AbsorbIntoPrefix();

  uint32_t prefix_end_ = 0;  // [0, prefix_end_) is covered
  // Covered ranges beyond the prefix: begin -> end, disjoint, non-adjacent,
  // every begin > prefix_end_.
  std::map<uint32_t, uint32_t> ranges_;
  uint64_t covered_ = 0;
};

}  // namespace wharf::homa
