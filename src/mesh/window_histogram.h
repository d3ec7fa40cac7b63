// mesh/window_histogram.h: the latency and loss statistics the mesh prober
// keeps per target and transport. SlidingWindows keeps rings of
// CompactHistograms (base/compact_histogram.h) to summarize the last 10 s, 1 min and 10 min, and the 10-second points of
// the last 10 minutes a dashboard draws. Bounded memory, no sample vectors,
// time injected as `now`. It does not hold counters that never expire or
// the Prometheus buckets (probe_series.h), nor formats (prometheus_text.h).
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/compact_histogram.h"

namespace wharf::mesh {

// The sliding windows a summary covers.
enum class Window : uint8_t { k10s, k1m, k10m };
inline constexpr std::array<Window, 3> kWindows = {Window::k10s, Window::k1m, Window::k10m};
// "10s", "1m", "10m": labels in the JSON API and on /metrics.
std::string_view WindowName(Window w);
// The nominal span: 10 s, 60 s, 600 s.
DurationNs WindowSpan(Window w);
// The granularity a window moves by: 1 s, 10 s, 60 s. A window covers a
// little more than its span; see SlidingWindows.
DurationNs WindowSlotSpan(Window w);

// What a window held at `now`.
struct WindowSummary {
  uint64_t answered = 0;  // latencies recorded in the window
  uint64_t lost = 0;      // losses recorded in the window
  // Exact min and max, percentiles within 1/16 (CompactHistogram). All 0 when
  // answered == 0: callers must show "no data", never 0.
  uint64_t min_ns = 0, p50_ns = 0, p90_ns = 0, p99_ns = 0, p999_ns = 0, max_ns = 0;
};

// One closed 10-second interval [start_ns, start_ns + 10 s), for a graph. An
// interval with nothing recorded has every field but start_ns 0.
struct HistoryPoint {
  TimeNs start_ns;
  uint64_t answered;
  uint64_t lost;
  uint64_t p50_ns, p99_ns, max_ns;  // 0 when answered == 0
};

// The latencies and losses of one series over the three windows, and its
// recent history. Owned by a ProbeSeries; single-threaded, like the prober.
//
// What a window covers: slots are aligned to multiples of the window's slot
// span (WindowSlotSpan: 1 s, 10 s, 1 min) on the TimeNs timeline, and a
// window is every slot that overlaps [now - span, now]: the current, partial
// slot and the `span / slot` whole slots before it, i.e. [floor(now) - span,
// now] with floor to the slot. So a window always holds everything of its
// last span and at most one slot more: 10 s to 11 s, 60 s to 70 s, 10 min to
// 11 min. A value recorded at t is in the window at `now` exactly while
// floor(now) - floor(t) <= span, both floored to the slot.
//
// How it is kept: three rings of slots, each a CompactHistogram and a loss
// count. Recording goes only into the ring of 1-second slots (11: the 10 s
// window); when a 10-second interval closes its seconds are merged into the
// ring of closed 10-second slots (6: with the current interval, read from
// the seconds, the 1 min window), and when a minute closes its 10-second
// slots into the ring of closed minutes (10, for the 10 min window). Closing
// and clearing happen when a Record call sees that time has moved on: never
// more than one ring's worth of slots, however far it jumped. A `now`
// earlier than the latest one seen is taken as the latest one.
//
// Size: 27 slots of 1,120 bytes and 60 history points of 32 bytes, 32,176
// bytes (31.4 KiB) in all; a ProbeSeries holds two.
class SlidingWindows {
 public:
  // Nothing recorded; History lists nothing before `now`.
  explicit SlidingWindows(TimeNs now);

  // One answered probe with latency `ns`, or one lost probe, at `now`. O(1)
  // and no allocation: usually a bucket increment; the first call in a new
  // 10-second interval also merges the closed interval's 1-second slots (up
  // to ten CompactHistogram merges, six more at a new minute) and clears the
  // slots time skipped (at most a ring's worth each).
  void RecordLatency(TimeNs now, uint64_t ns);
  void RecordLoss(TimeNs now);
  // Every value of `latencies` and `lost` losses, as if each had been
  // recorded at `now`: a batch measured elsewhere (an engine's per-peer
  // round trips, taken once a second). Costs one histogram merge.
  void RecordMany(TimeNs now, const CompactHistogram& latencies, uint64_t lost);

  // Window `w` at `now` (see above for what it covers). Merges at most 25
  // slots; no allocation.
  WindowSummary Summary(Window w, TimeNs now) const;

  // Closed 10-second points of the last 10 minutes, oldest first (at most
  // 60): the 60 intervals before the one `now` is in, less those before the
  // one the constructor's `now` was in. Intervals with nothing recorded are
  // listed, empty, so a graph shows the gap.
  std::vector<HistoryPoint> History(TimeNs now) const;

 private:
  // A slot's values: latencies, and losses (32-bit, like the latency counts).
  struct Slot {
    CompactHistogram latencies;
    uint32_t lost = 0;
    void Reset() {
      latencies.Reset();
      lost = 0;
    }
  };
  // Slots merged for a summary; losses in 64 bits.
  struct Tally {
    CompactHistogram latencies;
    uint64_t lost = 0;
    void Add(const Slot& slot) {
      latencies.Merge(slot.latencies);
      lost += slot.lost;
    }
  };
  // A closed 10-second interval as History reports it; its start is implied
  // by its place in the ring.
  struct StoredPoint {
    uint64_t p50_ns = 0, p99_ns = 0, max_ns = 0;
    uint32_t answered = 0;
    uint32_t lost = 0;
  };

  static constexpr DurationNs kSecondNs = kNsPerSec;
  static constexpr DurationNs kTenNs = 10 * kNsPerSec;
  static constexpr DurationNs kMinuteNs = 60 * kNsPerSec;
  static constexpr int64_t kSecondSlots = 11;  // 10 s window: current + 10
  static constexpr int64_t kTenSlots = 6;      // closed ones of the 1 min window
  static constexpr int64_t kMinuteSlots = 10;  // closed ones of the 10 min window
  static constexpr int64_t kHistoryPoints = 60;

  // Moves last_ns_ to `now` (> last_ns_): closes the 10-second interval and
  // minute last_ns_ was in if `now` is past them, and clears the slots that
  // come into use.
  void Advance(TimeNs now);
  // The 1-second slot last_ns_ is in.
  Slot& Current() { return seconds_[RingIndex(SlotNumber(last_ns_, kSecondNs), kSecondSlots)]; }

  // Add to `tally` what was recorded in second `s`, 10-second interval `i`,
  // minute `m` (slot numbers: floor(t / slot span)), from the state as of
  // last_ns_: from the ring that holds it, or from the finer slots of a
  // period not closed yet; nothing if it is out of the rings.
  void AddSecond(int64_t s, Tally& tally) const;
  void AddTen(int64_t i, Tally& tally) const;
  void AddMinute(int64_t m, Tally& tally) const;

  // floor(t / span): the number of the slot of length `span` that t is in.
  static int64_t SlotNumber(TimeNs t, DurationNs span) { return t / span - (t % span < 0 ? 1 : 0); }
  // The place of slot number n (which may be negative) in a ring of `size`.
  static size_t RingIndex(int64_t n, int64_t size) {
    return static_cast<size_t>(((n % size) + size) % size);
  }

  // seconds_: 1-second slots last_second-10 .. last_second (the one last_ns_
  // is in); tens_: closed 10-second slots last_ten-6 .. last_ten-1; minutes_:
  // closed minutes last_minute-10 .. last_minute-1; history_: closed 10-second
  // intervals last_ten-60 .. last_ten-1 (those not before created_ns_). A
  // slot in range that saw nothing is empty.
  std::array<Slot, kSecondSlots> seconds_;
  std::array<Slot, kTenSlots> tens_;
  std::array<Slot, kMinuteSlots> minutes_;
  std::array<StoredPoint, kHistoryPoints> history_;
  TimeNs created_ns_;  // the constructor's `now`: History starts at its interval
  TimeNs last_ns_;     // the latest `now` recorded at; never decreases
};

static_assert(sizeof(SlidingWindows) == 32176);
static_assert(sizeof(SlidingWindows) < size_t{32} * 1024);

}  // namespace wharf::mesh
