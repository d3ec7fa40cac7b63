// The open-loop driver and the unloaded pass of a cluster node.
#include "tools/bench/cluster_load.h"

#include <algorithm>

namespace wharf::tools::bench {
namespace {

// The RPCs in flight: a fixed table of slots (tag = index), so the hot path
// allocates nothing but the samples' growth.
class Slots final : public CompletionSink {
 public:
  Slots(int capacity, const Clock& clock, LoadResult& result)
      : clock_(clock), result_(result), slots_(static_cast<size_t>(capacity)) {
    free_.reserve(slots_.size());
    for (int i = capacity - 1; i >= 0; --i) free_.push_back(static_cast<uint32_t>(i));
  }

  bool full() const { return free_.empty(); }
  int in_flight() const { return static_cast<int>(slots_.size() - free_.size()); }

  uint32_t Take(uint64_t bytes, TimeNs now) {
    const uint32_t tag = free_.back();
    free_.pop_back();
    slots_[tag] = {.busy = true, .bytes = bytes, .issued_ns = now};
    return tag;
  }
  void Release(uint32_t tag) {
    slots_[tag].busy = false;
    free_.push_back(tag);
  }

  void Done(uint32_t tag, bool ok) override {
    if (tag >= slots_.size() || !slots_[tag].busy) return;
    const Slot& s = slots_[tag];
    if (ok) {
      result_.samples.push_back({.request_bytes = s.bytes,
                                 .response_bytes = s.bytes,
                                 .rtt_ns = clock_.NowNs() - s.issued_ns});
      ++result_.counters.completed;
    } else {
      ++result_.counters.failed;
    }
    Release(tag);
  }

 private:
  struct Slot {
    bool busy = false;
    uint64_t bytes = 0;
    TimeNs issued_ns = 0;
  };
  const Clock& clock_;
  LoadResult& result_;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_;
};

}  // namespace

LoadResult RunOpenLoop(ArrivalGenerator& generator, LoadTransport& transport, const Clock& clock,
                       const OpenLoopOptions& o) {
  LoadResult result;
  Slots slots(std::max(1, o.max_outstanding), clock, result);
  // Room for the expected RPCs plus a margin, so that vectors rarely grow
  // while measuring.
  const double expected =
      static_cast<double>(o.duration_ns) / std::max(1.0, generator.rates().mean_gap_ns);
  const auto reserve = static_cast<size_t>(std::min(expected * 1.2 + 64, 5e7));
  result.samples.reserve(reserve);
  result.lateness_ns.reserve(reserve);

  const TimeNs end_ns = o.start_ns + o.duration_ns;
  Arrival next = generator.Next();
  while (true) {
    const TimeNs send_at = o.start_ns + next.send_offset_ns;
    if (send_at >= end_ns) break;
    const TimeNs now = clock.NowNs();
    if (now < send_at) {
      transport.Wait(send_at, slots);
      continue;
    }
    if (slots.full()) {
      ++result.counters.dropped;
    } else {
      const uint32_t tag = slots.Take(next.request_bytes, now);
      ++result.counters.issued;
      result.counters.issued_bytes += 2 * next.request_bytes;
      result.lateness_ns.push_back(now - send_at);
      if (!transport.Issue(tag, next.server, next.request_bytes).ok()) {
        ++result.counters.failed;
        slots.Release(tag);
      }
    }
    next = generator.Next();
  }
  const TimeNs drain_end = end_ns + o.drain_ns;
  while (slots.in_flight() > 0 && clock.NowNs() < drain_end) transport.Wait(drain_end, slots);
  result.counters.unfinished = static_cast<uint64_t>(slots.in_flight());
  return result;
}

LoadResult RunUnloaded(LoadTransport& transport, const Clock& clock, const UnloadedOptions& o) {
  LoadResult result;
  Slots slots(1, clock, result);
  for (uint64_t size : o.sizes) {
    for (int i = 0; i < o.per_size; ++i) {
      const TimeNs now = clock.NowNs();
      const uint32_t tag = slots.Take(size, now);
      ++result.counters.issued;
      result.counters.issued_bytes += 2 * size;
      if (!transport.Issue(tag, o.server, size).ok()) {
        ++result.counters.failed;
        slots.Release(tag);
        continue;
      }
      const TimeNs deadline = now + o.rpc_timeout_ns;
      while (slots.in_flight() > 0 && clock.NowNs() < deadline) transport.Wait(deadline, slots);
      if (slots.in_flight() > 0) {
        // Abandoned and counted. Its answer, should it still come, would be
        // taken for the next RPC's (same tag): only after a 5 s stall.
        ++result.counters.unfinished;
        slots.Release(tag);
      }
    }
  }
  return result;
}

Lateness SummarizeLateness(std::vector<DurationNs>& lateness) {
  Lateness out;
  if (lateness.empty()) return out;
  std::sort(lateness.begin(), lateness.end());
  const size_t rank = (lateness.size() * 99 + 99) / 100;  // nearest rank, 1-based
  out.p99_ns = lateness[std::min(lateness.size(), std::max<size_t>(1, rank)) - 1];
  out.max_ns = lateness.back();
  return out;
}

}  // namespace wharf::tools::bench
