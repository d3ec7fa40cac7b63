// The open-loop driver, the unloaded pass and the closed loop of a cluster
// node.
#include "bench/cluster_load.h"

#include <algorithm>
#include <optional>

namespace wharf::bench {
namespace {

// The RPCs in flight: a fixed table of slots (tag = index), so the hot path
// allocates nothing but the samples' growth.
class Slots final : public CompletionSink {
 public:
  // `response_bytes`: every answer's size, 0 for an echo of the request.
  Slots(int capacity, uint64_t response_bytes, const Clock& clock, LoadResult& result)
      : response_bytes_(response_bytes),
        clock_(clock),
        result_(result),
        slots_(static_cast<size_t>(capacity)) {
    free_.reserve(slots_.size());
    for (int i = capacity - 1; i >= 0; --i) free_.push_back(static_cast<uint32_t>(i));
  }

  bool full() const { return free_.empty(); }
  // Request plus response payload of an RPC of `request_bytes`.
  uint64_t RoundTripBytes(uint64_t request_bytes) const {
    return request_bytes + ResponseBytes(request_bytes);
  }
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
                                 .response_bytes = ResponseBytes(s.bytes),
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
  uint64_t ResponseBytes(uint64_t request_bytes) const {
    return response_bytes_ > 0 ? response_bytes_ : request_bytes;
  }

  const uint64_t response_bytes_;
  const Clock& clock_;
  LoadResult& result_;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_;
};

// How often the closed loop looks for timed-out RPCs, and how long issuing
// pauses after a failed Issue or an error answer.
constexpr DurationNs kExpiryScanNs = 10 * kNsPerMs;
constexpr DurationNs kIssueRetryNs = 1 * kNsPerMs;

// The closed loop's slots (tag = index) and its window accounting. Done
// only frees a slot; Refill, called between Waits, re-issues.
class ClosedLoop final : public CompletionSink {
 public:
  ClosedLoop(const ClosedLoopOptions& o, const Clock& clock, TimeNs window_start,
             ClosedLoopResult& result)
      : o_(o),
        clock_(clock),
        window_start_(window_start),
        window_end_(window_start + o.duration_ns),
        result_(result),
        issued_ns_(static_cast<size_t>(o.in_flight), kIdle) {
    free_.reserve(issued_ns_.size());
    for (int i = o.in_flight - 1; i >= 0; --i) free_.push_back(static_cast<uint32_t>(i));
  }

  int in_flight() const { return static_cast<int>(issued_ns_.size() - free_.size()); }

  // Before each Wait: the completions one Wait reports were all there when
  // it found the first, so they share one clock read (taken at the first);
  // a read per completion was ~2% of the client's CPU at 32 in flight.
  void BeginWait() { wait_now_ = 0; }

  void Done(uint32_t tag, bool ok) override {
    if (tag >= issued_ns_.size() || issued_ns_[tag] == kIdle) return;
    if (wait_now_ == 0) wait_now_ = clock_.NowNs();
    const TimeNs now = wait_now_;
    if (InWindow(now)) {
      if (ok) {
        ++result_.rpcs;
        result_.rtt_ns.push_back(now - issued_ns_[tag]);
      } else {
        ++result_.failed;
      }
    }
    if (!ok) hold_until_ = now + kIssueRetryNs;
    Free(tag);
  }

  // Issues an RPC on every free slot, unless a failure put issuing on hold
  // (then the slots stay free until the hold ends).
  void Refill(LoadTransport& transport) {
    if (free_.empty()) return;
    // The slots freed by one wait are refilled as one burst.
    struct Burst {
      LoadTransport& t;
      explicit Burst(LoadTransport& transport) : t(transport) { t.BeginBurst(); }
      ~Burst() { t.EndBurst(); }
    } burst(transport);
    while (!free_.empty()) {
      const uint32_t tag = free_.back();
      const TimeNs now = clock_.NowNs();
      if (now < hold_until_) return;
      ++result_.issued;
      if (!transport.Issue(tag, o_.server, o_.bytes).ok()) {
        if (InWindow(now)) ++result_.failed;
        hold_until_ = now + kIssueRetryNs;
        return;
      }
      free_.pop_back();
      issued_ns_[tag] = now;
      result_.max_in_flight = std::max(result_.max_in_flight, in_flight());
    }
  }

  // When free slots wait for a hold to end: the hold's end, else none.
  std::optional<TimeNs> held_until() const {
    if (free_.empty() || clock_.NowNs() >= hold_until_) return std::nullopt;
    return hold_until_;
  }

  // Abandons every RPC issued before `now - rpc_timeout_ns`.
  void Expire(TimeNs now) {
    for (uint32_t tag = 0; tag < issued_ns_.size(); ++tag) {
      if (issued_ns_[tag] == kIdle || now - issued_ns_[tag] < o_.rpc_timeout_ns) continue;
      if (InWindow(now)) {
        ++result_.failed;
        ++result_.timed_out;
      }
      Free(tag);
    }
  }

 private:
  static constexpr TimeNs kIdle = -1;  // issued_ns_ of a free slot

  bool InWindow(TimeNs t) const { return t >= window_start_ && t < window_end_; }
  void Free(uint32_t tag) {
    issued_ns_[tag] = kIdle;
    free_.push_back(tag);
  }

  const ClosedLoopOptions& o_;
  const Clock& clock_;
  const TimeNs window_start_;
  const TimeNs window_end_;
  ClosedLoopResult& result_;
  std::vector<TimeNs> issued_ns_;  // by tag: when its RPC was issued, kIdle if free
  std::vector<uint32_t> free_;
  // After an Issue error or an error answer nothing is issued before this:
  // a peer that refuses at once must not turn the loop into a busy spin.
  TimeNs hold_until_ = 0;
  TimeNs wait_now_ = 0;  // see BeginWait
};

// Reserves `room` in `v` and writes the pages of its first `written`
// elements (resize writes them, clear keeps them as capacity), so that
// filling them later touches no page for the first time. The whole room
// first: a later reserve would move to fresh pages.
template <typename T>
void ReserveWritten(std::vector<T>& v, size_t room, size_t written) {
  v.reserve(room);
  v.resize(std::min(room, written));
  v.clear();
}

// The expected RPCs plus a margin, so that the vectors rarely grow while
// measuring.
size_t OpenLoopRoom(const ArrivalGenerator& generator, const OpenLoopOptions& o) {
  const double expected = static_cast<double>(std::max<DurationNs>(0, o.duration_ns)) /
                          std::max(1.0, generator.rates().mean_gap_ns);
  return static_cast<size_t>(std::min(expected * 1.2 + 64, 5e7));
}

}  // namespace

LoadResult PrepareOpenLoop(const ArrivalGenerator& generator, const OpenLoopOptions& o) {
  LoadResult result;
  const size_t room = OpenLoopRoom(generator, o);
  ReserveWritten(result.samples, room, kOpenLoopTouchedSamples);
  ReserveWritten(result.lateness_ns, room, kOpenLoopTouchedSamples);
  return result;
}

LoadResult RunOpenLoop(ArrivalGenerator& generator, LoadTransport& transport, const Clock& clock,
                       const OpenLoopOptions& o, LoadResult prepared) {
  LoadResult result = std::move(prepared);
  result.samples.clear();
  result.lateness_ns.clear();
  result.counters = {};
  Slots slots(std::max(1, o.max_outstanding), o.response_bytes, clock, result);
  // No-ops on a prepared room.
  const size_t room = OpenLoopRoom(generator, o);
  result.samples.reserve(room);
  result.lateness_ns.reserve(room);

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
      result.counters.issued_bytes += slots.RoundTripBytes(next.request_bytes);
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
  Slots slots(1, o.response_bytes, clock, result);
  int unanswered_in_a_row = 0;
  for (uint64_t size : o.sizes) {
    for (int i = 0; i < o.per_size; ++i) {
      if (unanswered_in_a_row >= std::max(1, o.give_up_after)) return result;
      const TimeNs now = clock.NowNs();
      const uint32_t tag = slots.Take(size, now);
      ++result.counters.issued;
      result.counters.issued_bytes += slots.RoundTripBytes(size);
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
        ++unanswered_in_a_row;
      } else {
        unanswered_in_a_row = 0;
      }
    }
  }
  return result;
}

size_t ClosedLoopSampleRoom(const ClosedLoopOptions& o) {
  if (o.reserve_samples > 0) return o.reserve_samples;
  constexpr size_t kMin = size_t{1} << 16;
  constexpr size_t kMax = size_t{1} << 24;
  const double want = static_cast<double>(std::max<DurationNs>(0, o.duration_ns)) / kNsPerSec *
                      static_cast<double>(kClosedLoopRoomPerSec);
  return want >= static_cast<double>(kMax) ? kMax
                                           : std::max(kMin, static_cast<size_t>(want));
}

ClosedLoopResult PrepareClosedLoop(const ClosedLoopOptions& options) {
  ClosedLoopResult result;
  ReserveWritten(result.rtt_ns, ClosedLoopSampleRoom(options), kClosedLoopTouchedSamples);
  return result;
}

ClosedLoopResult RunClosedLoop(LoadTransport& transport, const Clock& clock,
                               const ClosedLoopOptions& options, ClosedLoopResult prepared) {
  ClosedLoopOptions o = options;
  o.in_flight = std::max(1, o.in_flight);
  o.rpc_timeout_ns = std::max<DurationNs>(1, o.rpc_timeout_ns);
  ClosedLoopResult result;
  result.rtt_ns = std::move(prepared.rtt_ns);
  result.rtt_ns.clear();
  result.rtt_ns.reserve(ClosedLoopSampleRoom(o));  // a no-op on a prepared room
  const TimeNs window_start = clock.NowNs() + std::max<DurationNs>(0, o.warmup_ns);
  const TimeNs window_end = window_start + o.duration_ns;
  ClosedLoop loop(o, clock, window_start, result);
  bool opened = false;
  TimeNs next_scan = clock.NowNs() + std::min(kExpiryScanNs, o.rpc_timeout_ns);
  while (true) {
    TimeNs now = clock.NowNs();
    if (!opened && now >= window_start) {
      opened = true;
      if (o.window_opened) o.window_opened();
    }
    if (now >= window_end) break;
    loop.Refill(transport);
    TimeNs until = std::min(window_end, next_scan);
    if (!opened) until = std::min(until, window_start);
    if (const std::optional<TimeNs> held = loop.held_until()) until = std::min(until, *held);
    loop.BeginWait();
    transport.Wait(until, loop);
    now = clock.NowNs();
    if (now >= next_scan) {
      loop.Expire(now);
      next_scan = now + std::min(kExpiryScanNs, o.rpc_timeout_ns);
    }
  }
  if (o.window_closed) o.window_closed();
  result.unfinished = static_cast<uint64_t>(loop.in_flight());
  result.elapsed_ns = o.duration_ns;
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

}  // namespace wharf::bench
