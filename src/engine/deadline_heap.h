// engine/deadline_heap.h: DeadlineHeap, the engine's operations by deadline:
// a binary min-heap of (deadline, op id) in one vector, with lazy removal.
//
// Why not a std::multimap: every call registers a deadline and nearly every
// one finishes long before it, so the structure sees an insert and a removal
// per RPC. A multimap pays a node (malloc or recycle) and a red-black
// rebalance for each; here an insert of a deadline later than its parent's
// (the common case: now + the same timeout) is a push_back and one compare,
// and a finished operation is not searched for at all. An entry whose
// operation finished (or whose deadline changed) is stale: it leaves when it
// reaches the top (Finished, Expire) or when stale entries outnumber live ones
// (Compact), so the heap holds at most about twice the live deadlines.
//
// Whether an entry is live is the owner's to say (a predicate over the
// entry): the heap stores no per-operation state. Single-threaded.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "base/clock.h"

namespace wharf::engine {

class DeadlineHeap {
 public:
  struct Entry {
    TimeNs deadline_ns = kNever;
    uint64_t op_id = 0;
  };

  // Records that `op_id` ends at `deadline_ns` (kNever is not recorded).
  void Push(TimeNs deadline_ns, uint64_t op_id) {
    if (deadline_ns == kNever) return;
    heap_.push_back(Entry{deadline_ns, op_id});
    std::push_heap(heap_.begin(), heap_.end(), Later);
  }

  // The earliest deadline recorded, kNever if none. It may be a stale
  // entry's (earlier than any live one): the owner then looks once early.
  TimeNs Earliest() const { return heap_.empty() ? kNever : heap_.front().deadline_ns; }

  // After an operation with `deadline_ns` finished: drops stale entries from
  // the top, so that Earliest is a live one's, looking there only if the
  // finished one's entry may be at the top (no later deadline can be; most
  // operations finish while an older one holds it), and compacts when stale
  // entries outnumber `live` (an upper bound on the owner's operations with
  // a deadline) by more than kSlack.
  template <typename IsLive>
  void Finished(TimeNs deadline_ns, size_t live, IsLive&& is_live) {
    if (deadline_ns <= Earliest()) {
      while (!heap_.empty() && !is_live(heap_.front())) PopTop();
    }
    if (heap_.size() > 2 * live + kSlack) Compact(is_live);
  }

  // Calls `expire(op_id)` for each live entry due at `now`, earliest first,
  // removing every due entry, stale or not. `expire` may use the heap (push,
  // finish): the entry it is called for has left it already.
  template <typename IsLive, typename OnExpiry>
  void Expire(TimeNs now, IsLive&& is_live, OnExpiry&& expire) {
    while (!heap_.empty() && heap_.front().deadline_ns <= now) {
      const Entry due = heap_.front();
      PopTop();
      if (is_live(due)) expire(due.op_id);
    }
  }

  // Keeps only live entries (linear).
  template <typename IsLive>
  void Compact(IsLive&& is_live) {
    heap_.erase(std::remove_if(heap_.begin(), heap_.end(),
                               [&](const Entry& e) { return !is_live(e); }),
                heap_.end());
    std::make_heap(heap_.begin(), heap_.end(), Later);
  }

  void Clear() { heap_.clear(); }
  size_t size() const { return heap_.size(); }  // live and stale entries

  // Stale entries tolerated beyond the live count before Finished compacts:
  // small heaps are not compacted on every finish.
  static constexpr size_t kSlack = 256;

 private:
  // std::push_heap builds a max-heap: "less" is "later".
  static bool Later(const Entry& a, const Entry& b) { return a.deadline_ns > b.deadline_ns; }
  void PopTop() {
    std::pop_heap(heap_.begin(), heap_.end(), Later);
    heap_.pop_back();
  }

  std::vector<Entry> heap_;
};

}  // namespace wharf::engine
