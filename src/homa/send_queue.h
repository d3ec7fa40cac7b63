// homa/send_queue.h: SendQueue, the sender's SRPT queue: the RPCs with a
// DATA packet ready, fewest untransmitted bytes first (ties: older RPC
// first). A binary heap of Rpc pointers that each Rpc indexes into, so
// adding, re-ranking and removing cost O(log n) and no allocation; the
// transport looks at the head for every packet it sends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "homa/rpc.h"

namespace wharf::homa {

// Owned by HomaHost (one per socket, shared by its endpoints). Borrows the
// RPCs, which leave the queue before they are destroyed. Single-threaded.
class SendQueue {
 public:
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  // The RPC to send for next. Precondition: !empty().
  Rpc& Top() const { return *heap_.front(); }
  static bool Contains(const Rpc& rpc) { return rpc.send_index >= 0; }

  // Queues `rpc` with `remaining` untransmitted bytes, or re-ranks it.
  void Set(Rpc& rpc, uint32_t remaining);
  // Takes `rpc` out; nothing if it is not queued.
  void Remove(Rpc& rpc);

 private:
  // Strict order: (send_key, handle).
  static bool Before(const Rpc* a, const Rpc* b) {
    return a->send_key != b->send_key ? a->send_key < b->send_key : a->handle < b->handle;
  }
  void Place(size_t i, Rpc* rpc) {
    heap_[i] = rpc;
    rpc->send_index = static_cast<int64_t>(i);
  }
  void SiftUp(size_t i);
  void SiftDown(size_t i);

  std::vector<Rpc*> heap_;
};

}  // namespace wharf::homa
