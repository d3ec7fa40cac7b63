// ProbeSeries: outcomes, in-flight probes, and the latency records.
#include "mesh/probe_series.h"

#include <algorithm>

namespace wharf::mesh {

void LatencyBuckets::Record(uint64_t ns) {
  const auto* bound = std::lower_bound(kLatencyBucketsNs.begin(), kLatencyBucketsNs.end(), ns);
  if (bound != kLatencyBucketsNs.end()) ++counts[bound - kLatencyBucketsNs.begin()];
  ++count;
  sum_ns += ns;
}

void LatencyBuckets::RecordAll(const CompactHistogram& h) {
  if (h.Count() == 0) return;
  const auto* bound = kLatencyBucketsNs.begin();
  for (size_t i = 0; i < CompactHistogram::kBuckets; ++i) {
    const uint64_t n = h.BucketCount(i);
    if (n == 0) continue;
    const uint64_t ns = std::clamp(CompactHistogram::BucketMidpoint(i), h.Min(), h.Max());
    // Buckets ascend: the Prometheus bound only moves forward.
    while (bound != kLatencyBucketsNs.end() && *bound < ns) ++bound;
    if (bound != kLatencyBucketsNs.end()) counts[bound - kLatencyBucketsNs.begin()] += n;
    sum_ns += ns * n;
  }
  if (const uint64_t over = h.OverflowCount(); over > 0) {
    const auto* b = std::lower_bound(kLatencyBucketsNs.begin(), kLatencyBucketsNs.end(), h.Max());
    if (b != kLatencyBucketsNs.end()) counts[b - kLatencyBucketsNs.begin()] += over;
    sum_ns += h.Max() * over;
  }
  count += h.Count();
}

std::string_view SeriesStateName(SeriesState s) {
  switch (s) {
    case SeriesState::kNoData:
      return "no_data";
    case SeriesState::kOk:
      return "ok";
    case SeriesState::kAllFailed:
      return "all_failed";
  }
  return "?";
}

std::optional<uint64_t> ProbeSeries::Start(TimeNs now) {
  Slot& slot = slots_[next_sequence_ % kMaxInFlight];
  if (slot.sequence != 0) {
    // The probe kMaxInFlight before is still out: everything between is too.
    ++counters_.skipped;
    return std::nullopt;
  }
  slot = {next_sequence_, now};
  ++in_flight_;
  ++counters_.sent;
  last_sent_ns_ = now;
  return next_sequence_++;
}

ProbeSeries::Slot* ProbeSeries::Find(uint64_t sequence) {
  if (sequence == 0) return nullptr;
  Slot& slot = slots_[sequence % kMaxInFlight];
  return slot.sequence == sequence ? &slot : nullptr;
}

void ProbeSeries::OnAnswer(uint64_t sequence, TimeNs now, uint64_t dwell_ns, bool kernel_stamped,
                           TimeNs kernel_sent_ns) {
  Slot* slot = Find(sequence);
  if (slot == nullptr) {
    ++counters_.stray;
    return;
  }
  const TimeNs started = kernel_sent_ns != 0 ? kernel_sent_ns : slot->sent_ns;
  const uint64_t rtt_ns = static_cast<uint64_t>(std::max<TimeNs>(0, now - started));
  *slot = Slot{};
  --in_flight_;
  ++counters_.answered;
  if (kernel_stamped) ++counters_.kernel_stamped;
  if (kernel_sent_ns != 0) ++counters_.kernel_send_stamped;
  if (sequence < newest_answered_) ++counters_.reordered;
  newest_answered_ = std::max(newest_answered_, sequence);
  last_answer_ns_ = now;
  rtt_.RecordLatency(now, rtt_ns);
  rtt_buckets_.Record(rtt_ns);
  if (dwell_ns > rtt_ns) {
    ++counters_.weird;
    return;
  }
  network_.RecordLatency(now, rtt_ns - dwell_ns);
  network_buckets_.Record(rtt_ns - dwell_ns);
}

void ProbeSeries::OnFailure(uint64_t sequence, TimeNs now, StatusCode code) {
  Slot* slot = Find(sequence);
  if (slot == nullptr) {
    ++counters_.stray;
    return;
  }
  *slot = Slot{};
  --in_flight_;
  last_failure_ = code;
  ++(code == StatusCode::kDeadlineExceeded ? counters_.lost : counters_.failed);
  rtt_.RecordLoss(now);
}

SeriesState StateOf(const WindowSummary& rtt) {
  if (rtt.answered > 0) return SeriesState::kOk;
  return rtt.lost > 0 ? SeriesState::kAllFailed : SeriesState::kNoData;
}

SeriesState ProbeSeries::State(Window w, TimeNs now) const {
  return StateOf(rtt_.Summary(w, now));
}

}  // namespace wharf::mesh
