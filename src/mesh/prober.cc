// Prober: sending due probes and matching their completions.
#include "mesh/prober.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "wire/mesh_probe.h"

namespace wharf::mesh {
namespace {

bool SameTarget(const ProbeTargetSpec& a, const ProbeTargetSpec& b) {
  return a.host == b.host && a.transport == b.transport && a.uri.scheme == b.uri.scheme &&
         a.uri.address == b.uri.address && a.uri.endpoint_id == b.uri.endpoint_id;
}

}  // namespace

Prober::Prober(uint64_t epoch, ProbeSender* sender, ProberOptions options)
    : epoch_(epoch), sender_(sender), options_(options), schedule_(epoch) {}

void Prober::SetTargets(std::vector<ProbeTargetSpec> targets, TimeNs now) {
  std::vector<std::unique_ptr<Target>> next;
  next.reserve(targets.size());
  for (ProbeTargetSpec& spec : targets) {
    auto kept = std::find_if(targets_.begin(), targets_.end(), [&](const auto& t) {
      return t != nullptr && SameTarget(t->spec, spec);
    });
    if (kept != targets_.end()) {
      // Same target: its series stays; its class may have changed.
      (*kept)->spec = std::move(spec);
      next.push_back(std::move(*kept));
    } else {
      next.push_back(std::make_unique<Target>(std::move(spec), now));
    }
  }
  // What is left in targets_ goes: forget its probes in flight (one pass
  // over them, however many targets stay).
  absl::flat_hash_set<const Target*> staying;
  staying.reserve(next.size());
  for (const auto& t : next) staying.insert(t.get());
  for (auto it = in_flight_.begin(); it != in_flight_.end();) {
    if (!staying.contains(it->second.target)) {
      in_flight_.erase(it++);
    } else {
      ++it;
    }
  }
  targets_ = std::move(next);
  std::vector<DurationNs> intervals;
  intervals.reserve(targets_.size());
  for (const auto& t : targets_) intervals.push_back(t->spec.probe.interval);
  schedule_.Reset(intervals, options_.max_probes_per_second, now);
  ++counters_.target_changes;
}

transport::PollResult Prober::Poll(TimeNs now) {
  transport::PollResult result;
  result.now = now;
  const TimeNs horizon = now + options_.send_ahead_ns;
  for (size_t sent = 0; sent < options_.max_probes_per_poll; ++sent) {
    std::optional<size_t> due = schedule_.TakeDue(now, horizon);
    if (!due.has_value()) break;
    SendOne(*targets_[*due], now);
    ++result.work;
  }
  // Called back when the next probe is due, that one goes with those due
  // in the millisecond after it.
  result.next_deadline = schedule_.NextDue();
  return result;
}

void Prober::SendOne(Target& target, TimeNs now) {
  std::optional<uint64_t> sequence = target.series.Start(now);
  if (!sequence.has_value()) return;  // kMaxInFlight out: counted as skipped
  const size_t size = std::clamp<size_t>(target.spec.probe.size_bytes, wire::kMeshProbeHeaderBytes,
                                         wire::kMaxProbeBytes);
  Buffer request = Buffer::Allocate(size);
  const wire::MeshProbe probe{.epoch = epoch_,
                              .sequence = *sequence,
                              .sent_ns = static_cast<uint64_t>(now),
                              .answer_priority = static_cast<int8_t>(std::min<uint8_t>(
                                  target.spec.probe.priority, wire::kMaxAnswerPriority))};
  // Cannot fail: the size and priority are clamped to what the encoder takes.
  (void)wire::EncodeMeshProbe(probe, request.span());
  const uint64_t op_id = next_op_id_++;
  in_flight_.emplace(op_id, InFlight{&target, *sequence, now});
  ++counters_.probes_sent;
  sender_->SendProbe(op_id, target.spec, std::move(request), now + target.spec.probe.timeout);
}

void Prober::OnComplete(uint64_t op_id, const Status& status, std::span<const std::byte> answer,
                        TimeNs now, TimeNs received_ns, TimeNs sent_ns) {
  auto it = in_flight_.find(op_id);
  if (it == in_flight_.end()) {
    ++counters_.stray_completions;
    return;
  }
  const InFlight probe = it->second;
  in_flight_.erase(it);
  ProbeSeries& series = probe.target->series;
  if (!status.ok()) {
    series.OnFailure(probe.sequence, now, status.code());
    return;
  }
  Result<wire::MeshAnswer> decoded = wire::DecodeMeshAnswer(answer);
  if (!decoded.ok() || decoded->epoch != epoch_ || decoded->sequence != probe.sequence ||
      decoded->sent_ns != static_cast<uint64_t>(probe.sent_ns)) {
    // Something answered that is not our responder: the probe failed.
    ++counters_.bad_answers;
    series.OnFailure(probe.sequence, now, StatusCode::kDataLoss);
    return;
  }
  ++counters_.answers;
  const bool kernel_stamped = received_ns >= probe.sent_ns && received_ns <= now && received_ns != 0;
  const TimeNs arrived = kernel_stamped ? received_ns : now;
  // The kernel sends after the prober read its clock, and before the
  // answer can arrive; a stamp outside that (a clock step under the
  // conversion) is not trusted.
  const bool send_stamped = sent_ns >= probe.sent_ns && sent_ns <= arrived && sent_ns != 0;
  series.OnAnswer(probe.sequence, arrived, decoded->dwell_ns, kernel_stamped,
                  send_stamped ? sent_ns : 0);
}

}  // namespace wharf::mesh
