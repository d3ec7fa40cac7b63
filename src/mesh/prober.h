// mesh/prober.h: Prober, the mesh prober's logic: which targets, when each
// is probed (ProbeSchedule), what went out and what came back (one
// ProbeSeries per target and transport). It sends through a ProbeSender,
// which in wharfd is the daemon's own engine over each transport, so probes
// take the sockets, pacer and scheduler the applications' RPCs take; in
// tests it is a fake. The other side is MeshResponder (probe_responder.h).
//
// It does not read the pinglist (pinglist.h makes its targets), and shows
// nothing itself: exporters read its series.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "base/clock.h"
#include "engine/engine_sink.h"
#include "engine/uri.h"
#include "mesh/pinglist.h"
#include "mesh/probe_schedule.h"
#include "mesh/probe_series.h"
#include "transport/message_transport.h"
#include "wharf/buffer.h"
#include "wharf/status.h"

namespace wharf::mesh {

// One target over one transport, as the prober probes it.
struct ProbeTargetSpec {
  std::string host;  // the target's name in the pinglist
  ProbeTransport transport = ProbeTransport::kHoma;
  engine::Uri uri;  // the target daemon's own endpoint over that transport
  ProbeClass probe;
  std::string origin;  // the pinglist rules that ask for it
};

// How probes leave. Implemented by wharfd over its own engines.
class ProbeSender {
 public:
  virtual ~ProbeSender() = default;
  // Sends `request` as an RPC with method wire::kMeshProbeMethod to
  // target.uri over target.transport, to fail at `deadline_ns`. Its answer
  // or failure must come back as Prober::OnComplete(op_id, ...), possibly
  // from inside this call.
  virtual void SendProbe(uint64_t op_id, const ProbeTargetSpec& target, Buffer request,
                         TimeNs deadline_ns) = 0;
};

struct ProberOptions {
  // All targets together (mesh.max_probes_per_second); intervals stretch
  // alike to stay under it.
  double max_probes_per_second = 10000;
  // Probes sent by one Poll at most, so a loop turn stays short.
  size_t max_probes_per_poll = 32;
  // Probes due up to this long after a Poll go out in it, early: at 10,000
  // probes a second, a daemon then wakes about once a millisecond for ten
  // of them instead of ten times for one each (a wake-up costs tens of
  // microseconds of CPU here). Each probe's round trip still counts from
  // when it left; a target's probes stay about an interval apart.
  DurationNs send_ahead_ns = kNsPerMs;
};

struct ProberCounters {
  uint64_t probes_sent = 0;
  uint64_t answers = 0;
  // Completions for no probe in flight (the target left the list, or a
  // duplicate).
  uint64_t stray_completions = 0;
  // Answers that did not decode, or carried another prober's epoch or the
  // wrong sequence number.
  uint64_t bad_answers = 0;
  uint64_t target_changes = 0;
};

// Owned by wharfd's mesh service; runs on the daemon's loop thread.
class Prober {
 public:
  // `epoch` tells this run's probes from an earlier run's (random, from the
  // caller); it also seeds the schedule's jitter. Borrows `sender`.
  Prober(uint64_t epoch, ProbeSender* sender, ProberOptions options);

  // Replaces the targets. One that stays (same host, transport and uri)
  // keeps its series and its probes in flight; the others' probes in flight
  // become strays when they complete.
  void SetTargets(std::vector<ProbeTargetSpec> targets, TimeNs now);
  // Sends the probes due at `now`, at most max_probes_per_poll; the work
  // done and when the next is due.
  transport::PollResult Poll(TimeNs now);
  // The sender's completion of probe `op_id`: `answer` is the response's
  // bytes when status is ok.
  // `received_ns`: when the kernel received the answer (0: not known); the
  // round trip ends there instead of at `now` when it lies between the
  // probe's departure and `now` (a clock step otherwise: `now` is used).
  // `sent_ns`: when the kernel sent the probe (0: not known); the round
  // trip starts there instead of at the prober's send time when it lies
  // between that time and the answer's arrival.
  void OnComplete(uint64_t op_id, const Status& status, std::span<const std::byte> answer,
                  TimeNs now, TimeNs received_ns = 0, TimeNs sent_ns = 0);

  size_t size() const { return targets_.size(); }
  const ProbeTargetSpec& target(size_t i) const { return targets_[i]->spec; }
  const ProbeSeries& series(size_t i) const { return targets_[i]->series; }
  const ProbeSchedule& schedule() const { return schedule_; }
  const ProberCounters& counters() const { return counters_; }
  uint64_t epoch() const { return epoch_; }
  size_t in_flight() const { return in_flight_.size(); }

 private:
  struct Target {
    Target(ProbeTargetSpec s, TimeNs now) : spec(std::move(s)), series(now) {}
    ProbeTargetSpec spec;
    ProbeSeries series;
  };
  struct InFlight {
    Target* target;
    uint64_t sequence;
    TimeNs sent_ns;
  };
  void SendOne(Target& target, TimeNs now);

  const uint64_t epoch_;
  ProbeSender* const sender_;
  const ProberOptions options_;
  ProbeSchedule schedule_;
  // unique_ptr: InFlight points at them across SetTargets' reshuffles.
  std::vector<std::unique_ptr<Target>> targets_;
  // By op id; at most ProbeSeries::kMaxInFlight per target.
  absl::flat_hash_map<uint64_t, InFlight> in_flight_;
  uint64_t next_op_id_ = 1;
  ProberCounters counters_;
};

}  // namespace wharf::mesh
