// SendQueue: an indexed binary min-heap.
#include "homa/send_queue.h"

namespace wharf::homa {

void SendQueue::Set(Rpc& rpc, uint32_t remaining) {
  if (!Contains(rpc)) {
    rpc.send_key = remaining;
    heap_.push_back(&rpc);
    rpc.send_index = static_cast<int64_t>(heap_.size() - 1);
    SiftUp(heap_.size() - 1);
    return;
  }
  if (rpc.send_key == remaining) return;
  const bool smaller = remaining < rpc.send_key;
  rpc.send_key = remaining;
  if (smaller) {
    SiftUp(static_cast<size_t>(rpc.send_index));
  } else {
    SiftDown(static_cast<size_t>(rpc.send_index));
  }
}

void SendQueue::Remove(Rpc& rpc) {
  if (!Contains(rpc)) return;
  const auto i = static_cast<size_t>(rpc.send_index);
  rpc.send_index = -1;
  Rpc* last = heap_.back();
  heap_.pop_back();
  if (i == heap_.size()) return;  // it was the last
  Place(i, last);
  SiftUp(i);
  SiftDown(static_cast<size_t>(last->send_index));
}

void SendQueue::SiftUp(size_t i) {
  Rpc* rpc = heap_[i];
  while (i > 0) {
    const size_t parent = (i - 1) / 2;
    if (!Before(rpc, heap_[parent])) break;
    Place(i, heap_[parent]);
    i = parent;
  }
  Place(i, rpc);
}

void SendQueue::SiftDown(size_t i) {
  Rpc* rpc = heap_[i];
  const size_t n = heap_.size();
  while (true) {
    size_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && Before(heap_[child + 1], heap_[child])) ++child;
    if (!Before(heap_[child], rpc)) break;
    Place(i, heap_[child]);
    i = child;
  }
  Place(i, rpc);
}

}  // namespace wharf::homa
