// mesh/probe_series.h: ProbeSeries, what the prober knows about one target
// over one transport: the probes in flight (by sequence number), the
// outcome counters, the round trips and network times over sliding windows
// (window_histogram.h), and the cumulative buckets /metrics exports.
//
// Round trip = the answer's arrival - the probe's departure, both on the
// prober's clock. Network time = round trip - the responder's dwell (carried
// in the answer): the part spent between the two daemons' engines, in
// sockets, kernels and wires. A dwell longer than the round trip (clocks
// that cannot be right) is counted as `weird` and gives no network time.
//
// Outcomes of a probe, exactly one each:
//   answered  an answer for it came back before its timeout;
//   lost      it timed out (the engine's deadline: kDeadlineExceeded);
//   failed    the engine failed it otherwise (peer unreachable, refused,
//             over a limit); counted apart, by status, since it is not the
//             network losing a packet but a peer that is not there.
// Besides: reordered (an answer older than one already received), stray
// (a completion for no probe in flight: a duplicate, or one of before a
// reload), skipped (not sent: kMaxInFlight were in flight).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "base/clock.h"
#include "mesh/prometheus_text.h"
#include "mesh/window_histogram.h"
#include "wharf/status.h"

namespace wharf::mesh {

// Latency buckets for Prometheus, at kLatencyBucketsNs (prometheus_text.h).
struct LatencyBuckets {
  // counts[i]: values <= kLatencyBucketsSeconds[i] and above the bound
  // before (not cumulative; the exporter sums).
  std::array<uint64_t, kLatencyBucketCount> counts{};
  uint64_t count = 0;  // every value, including those above the last bound
  uint64_t sum_ns = 0;
  void Record(uint64_t ns);
  // Every value of `h`, each taken as its bucket's midpoint (within 1/16 of
  // the value it stands for: a value near a bound may land in the bucket
  // next to its own), and overflowed ones as h.Max().
  void RecordAll(const CompactHistogram& h);
};

struct SeriesCounters {
  uint64_t sent = 0;
  uint64_t answered = 0;
  uint64_t lost = 0;
  uint64_t failed = 0;
  uint64_t reordered = 0;
  uint64_t stray = 0;
  uint64_t skipped = 0;
  uint64_t weird = 0;
  // Answers timed by the kernel's receive stamp (SO_TIMESTAMPING) rather
  // than the prober's clock when it got them.
  uint64_t kernel_stamped = 0;
  // Answers whose probe's departure was timed by the kernel's transmit
  // stamp rather than the prober's clock before it sent.
  uint64_t kernel_send_stamped = 0;
};

// What a window shows for a series. The states are distinct so that a
// dashboard never shows "no data" and "every probe failed" alike as 0.
enum class SeriesState : uint8_t {
  kNoData,     // nothing answered, lost or failed in the window
  kOk,         // some answers (the loss ratio says how many were lost)
  kAllFailed,  // probes lost or failed, none answered
};
std::string_view SeriesStateName(SeriesState s);  // "no_data", "ok", "all_failed"
// The state a window's round-trip summary shows (answered, and unanswered
// in its `lost`).
SeriesState StateOf(const WindowSummary& rtt);

// Owned by the Prober, one per target and transport; single-threaded.
class ProbeSeries {
 public:
  // Probes in flight at once; the next is skipped while this many wait.
  static constexpr size_t kMaxInFlight = 64;

  explicit ProbeSeries(TimeNs now) : rtt_(now), network_(now) {}

  // A probe leaves at `now`: its sequence number (from 1), or none when
  // kMaxInFlight are in flight (counted as skipped).
  std::optional<uint64_t> Start(TimeNs now);
  // The answer to `sequence` arrived at `now`; `dwell_ns` as the responder
  // measured it. A sequence not in flight is a stray.
  // `now`: when the answer arrived, by the kernel's stamp when
  // `kernel_stamped`, else by the prober's clock. `kernel_sent_ns`: when
  // the probe left by the kernel's transmit stamp, which then starts the
  // round trip instead of the time Start was given; 0 when there is none.
  void OnAnswer(uint64_t sequence, TimeNs now, uint64_t dwell_ns, bool kernel_stamped = false,
                TimeNs kernel_sent_ns = 0);
  // The engine ended probe `sequence` without an answer: lost when the
  // status is kDeadlineExceeded, failed otherwise.
  void OnFailure(uint64_t sequence, TimeNs now, StatusCode code);

  const SeriesCounters& counters() const { return counters_; }
  // Round trips and network times. Probes lost or failed are recorded in
  // rtt() as losses (RecordLoss), so that a window's summary says how many
  // of its probes were answered and how many were not; the counters tell
  // lost from failed.
  const SlidingWindows& rtt() const { return rtt_; }
  const SlidingWindows& network() const { return network_; }
  SeriesState State(Window w, TimeNs now) const;
  const LatencyBuckets& rtt_buckets() const { return rtt_buckets_; }
  const LatencyBuckets& network_buckets() const { return network_buckets_; }
  TimeNs last_answer_ns() const { return last_answer_ns_; }
  TimeNs last_sent_ns() const { return last_sent_ns_; }
  // The last failure's code (kOk if none yet).
  StatusCode last_failure() const { return last_failure_; }
  size_t in_flight() const { return in_flight_; }

 private:
  struct Slot {
    uint64_t sequence = 0;  // 0: free
    TimeNs sent_ns = 0;
  };
  // The probe in flight with `sequence` (its slot), or null.
  Slot* Find(uint64_t sequence);

  std::array<Slot, kMaxInFlight> slots_{};
  size_t in_flight_ = 0;
  uint64_t next_sequence_ = 1;
  uint64_t newest_answered_ = 0;
  SeriesCounters counters_;
  SlidingWindows rtt_;
  SlidingWindows network_;
  LatencyBuckets rtt_buckets_;
  LatencyBuckets network_buckets_;
  TimeNs last_answer_ns_ = 0;
  TimeNs last_sent_ns_ = 0;
  StatusCode last_failure_ = StatusCode::kOk;
};

}  // namespace wharf::mesh
