// RenderMetrics: the snapshot as Prometheus families.
#include "mesh/metrics_exporter.h"

#include <string_view>

#include "mesh/prometheus_text.h"

namespace wharf::mesh {
namespace {

// An application names itself (its program name comes from its own
// process): anything but printable ASCII becomes '?', so that no name can
// make the exposition invalid.
std::string Printable(std::string_view text) {
  std::string out(text.substr(0, 64));
  for (char& c : out) {
    if (c < 0x20 || c > 0x7E) c = '?';
  }
  return out;
}

// Prometheus buckets are cumulative; LatencyBuckets' are not.
std::array<uint64_t, kLatencyBucketCount> Cumulative(const LatencyBuckets& b) {
  std::array<uint64_t, kLatencyBucketCount> cumulative{};
  uint64_t running = 0;
  for (size_t i = 0; i < kLatencyBucketCount; ++i) {
    running += b.counts[i];
    cumulative[i] = running;
  }
  return cumulative;
}

double SumSeconds(const LatencyBuckets& b) {
  return static_cast<double>(b.sum_ns) / static_cast<double>(kNsPerSec);
}

void Histogram(PrometheusText& out, std::string_view source, const TargetSnapshot& t,
               const LatencyBuckets& b) {
  out.HistogramSample({{"source", source}, {"target", t.host}, {"transport", t.transport}},
                      kLatencyBucketsSeconds, Cumulative(b), b.count, SumSeconds(b));
}

// The applications' own traffic, per peer address. A peer in the pinglist
// also carries its host name as `target` (else ""), so that a query can
// join it with the probes' series.
void WritePeers(PrometheusText& out, const MeshSnapshot& s) {
  const std::string_view self = s.pinglist.self;
  out.Family("wharf_mesh_app_rtt_seconds", MetricType::kHistogram,
             "Round trips of the attached applications' own calls and messages, server time "
             "included (passive: no probes).");
  for (const PassiveSnapshot& p : s.peers) {
    out.HistogramSample(
        {{"source", self}, {"peer", p.peer}, {"target", p.host}, {"transport", p.transport}},
        kLatencyBucketsSeconds, Cumulative(p.rtt_buckets), p.rtt_buckets.count,
        SumSeconds(p.rtt_buckets));
  }
  out.Family("wharf_mesh_app_failures_total", MetricType::kCounter,
             "The applications' calls and messages that got no answer (failed or timed out).");
  for (const PassiveSnapshot& p : s.peers) {
    out.Sample({{"source", self}, {"peer", p.peer}, {"target", p.host}, {"transport", p.transport}},
               p.failures);
  }
  out.Family("wharf_mesh_app_peers_untracked_total", MetricType::kCounter,
             "Batches of a new peer dropped because 1024 peers were tracked already.");
  out.Sample({}, s.passive_untracked);
  out.Family("wharf_mesh_app_peers_evicted_total", MetricType::kCounter,
             "Peers forgotten after 11 minutes without traffic.");
  out.Sample({}, s.passive_evicted);
}

// One counter family with a series per target.
template <typename Field>
void TargetCounter(PrometheusText& out, const MeshSnapshot& s, std::string_view name,
                   std::string_view help, Field field) {
  out.Family(name, MetricType::kCounter, help);
  for (const TargetSnapshot& t : s.targets) {
    out.Sample({{"source", s.pinglist.self}, {"target", t.host}, {"transport", t.transport}},
               uint64_t{field(t.counters)});
  }
}

void Counter(PrometheusText& out, std::string_view name, std::string_view help, uint64_t v) {
  out.Family(name, MetricType::kCounter, help);
  out.Sample({}, v);
}

void Gauge(PrometheusText& out, std::string_view name, std::string_view help, double v) {
  out.Family(name, MetricType::kGauge, help);
  out.Sample({}, v);
}

void WriteTargets(PrometheusText& out, const MeshSnapshot& s) {
  const std::string_view self = s.pinglist.self;
  out.Family("wharf_mesh_probe_rtt_seconds", MetricType::kHistogram,
             "Round trips of answered probes, on the prober's clock.");
  for (const TargetSnapshot& t : s.targets) Histogram(out, self, t, t.rtt_buckets);
  out.Family("wharf_mesh_probe_network_seconds", MetricType::kHistogram,
             "Round trips of answered probes less the responder's own dwell.");
  for (const TargetSnapshot& t : s.targets) Histogram(out, self, t, t.network_buckets);
  TargetCounter(out, s, "wharf_mesh_probes_sent_total", "Probes sent.",
                [](const SeriesCounters& c) { return c.sent; });
  TargetCounter(out, s, "wharf_mesh_probes_answered_total", "Probes answered in time.",
                [](const SeriesCounters& c) { return c.answered; });
  TargetCounter(out, s, "wharf_mesh_probes_lost_total",
                "Probes not answered before their timeout.",
                [](const SeriesCounters& c) { return c.lost; });
  TargetCounter(out, s, "wharf_mesh_probes_failed_total",
                "Probes the transport failed otherwise (peer unreachable, refused).",
                [](const SeriesCounters& c) { return c.failed; });
  TargetCounter(out, s, "wharf_mesh_probes_reordered_total",
                "Answers that came after the answer to a later probe.",
                [](const SeriesCounters& c) { return c.reordered; });
  TargetCounter(out, s, "wharf_mesh_probes_duplicated_total",
                "Completions for no probe in flight.",
                [](const SeriesCounters& c) { return c.stray; });
  TargetCounter(out, s, "wharf_mesh_probes_skipped_total",
                "Probes not sent because 64 were still in flight.",
                [](const SeriesCounters& c) { return c.skipped; });
  out.Family("wharf_mesh_probes_in_flight", MetricType::kGauge, "Probes awaiting an answer.");
  for (const TargetSnapshot& t : s.targets) {
    out.Sample({{"source", self}, {"target", t.host}, {"transport", t.transport}},
               uint64_t{t.in_flight});
  }
  out.Family("wharf_mesh_target_up", MetricType::kGauge,
             "1 when probes were answered in the last 10 s, 0 when every one failed; absent "
             "with no data.");
  for (const TargetSnapshot& t : s.targets) {
    const SeriesState state = t.state[static_cast<size_t>(Window::k10s)];
    if (state == SeriesState::kNoData) continue;
    out.Sample({{"source", self}, {"target", t.host}, {"transport", t.transport}},
               state == SeriesState::kOk ? 1.0 : 0.0);
  }
  out.Family("wharf_mesh_last_answer_age_seconds", MetricType::kGauge,
             "Time since the last answer; absent before the first.");
  for (const TargetSnapshot& t : s.targets) {
    if (t.last_answer_ns == 0) continue;
    out.Sample({{"source", self}, {"target", t.host}, {"transport", t.transport}},
               static_cast<double>(s.taken_ns - t.last_answer_ns) / kNsPerSec);
  }
}

void WriteProber(PrometheusText& out, const MeshSnapshot& s) {
  Gauge(out, "wharf_mesh_probe_rate", "Probes per second all targets ask for together.",
        s.probes_per_second);
  Gauge(out, "wharf_mesh_interval_stretch",
        "Factor every interval is multiplied by to stay under mesh.max_probes_per_second.",
        s.stretch);
  Counter(out, "wharf_mesh_probes_skipped_late_total",
          "Probes not sent because the loop came back more than an interval late.",
          s.probes_skipped);
  Counter(out, "wharf_mesh_bad_answers_total",
          "Answers that were not a probe answer of this prober.", s.prober.bad_answers);
  Counter(out, "wharf_mesh_responder_answered_total", "Other daemons' probes answered.",
          s.probes_answered);
  Counter(out, "wharf_mesh_responder_malformed_total", "Requests to the probe method that were no probe.",
          s.probes_malformed);
  Counter(out, "wharf_mesh_pinglist_loads_total", "Pinglist loads tried.", s.pinglist.loads);
  Counter(out, "wharf_mesh_pinglist_load_failures_total",
          "Pinglist loads that failed (the list before stayed).", s.pinglist.load_failures);
  out.Family("wharf_mesh_pinglist_info", MetricType::kGauge,
             "1, labelled with the pinglist version in use and this host's name in it.");
  out.Sample({{"version", s.pinglist.version}, {"self", s.pinglist.self}}, 1.0);
}

void WriteDaemon(PrometheusText& out, const MeshSnapshot& s) {
  const daemon::DaemonReport& d = s.daemon;
  Gauge(out, "wharf_daemon_uptime_seconds", "Seconds since wharfd started.",
        static_cast<double>(d.uptime_seconds));
  Gauge(out, "wharf_daemon_applications", "Applications attached now.",
        static_cast<double>(d.applications.size()));
  Counter(out, "wharf_daemon_applications_attached_total", "Applications that attached.",
          d.counters.applications_attached);
  Counter(out, "wharf_daemon_applications_detached_total", "Applications that left.",
          d.counters.applications_detached);
  Counter(out, "wharf_daemon_applications_faulted_total",
          "Applications wharfd closed for what they did.", d.counters.applications_faulted);
  Counter(out, "wharf_daemon_attaches_refused_total", "Attaches refused.",
          d.counters.attaches_refused);
  Counter(out, "wharf_daemon_connections_refused_total", "Control connections closed at accept.",
          d.counters.connections_refused);
  Counter(out, "wharf_daemon_hello_timeouts_total", "Control connections that never said hello.",
          d.counters.hello_timeouts);
  Counter(out, "wharf_daemon_status_requests_limited_total",
          "Status requests refused over the rate limit.", d.counters.status_requests_limited);
  Counter(out, "wharf_daemon_loop_stalls_total", "Loop turns longer than daemon.stall_threshold.",
          d.loop.stalls);
  Gauge(out, "wharf_daemon_loop_turn_p99_seconds", "99th percentile of the loop's turns.",
        static_cast<double>(d.loop.p99_turn_ns) / kNsPerSec);
  out.Family("wharf_transport_events_total", MetricType::kCounter,
             "The listen sockets' counters, by name (docs/transports.md, docs/protocol.md).");
  for (const auto& [listener, counters] : d.transports) {
    for (const auto& [name, value] : counters) {
      out.Sample({{"listener", listener}, {"name", name}}, value);
    }
  }
  out.Family("wharf_application_events_total", MetricType::kCounter,
             "Each attached application's session counters, limits hit included (docs/daemon.md).");
  for (const daemon::ApplicationReport& a : d.applications) {
    const std::string id = std::to_string(a.id);
    const std::string program = Printable(a.program);
    for (const auto& [name, value] : a.counters) {
      out.Sample({{"app", id}, {"program", program}, {"name", name}}, value);
    }
  }
  out.Family("wharf_application_heap_bytes", MetricType::kGauge,
             "Each attached application's shared heap.");
  for (const daemon::ApplicationReport& a : d.applications) {
    out.Sample({{"app", std::to_string(a.id)}, {"program", Printable(a.program)}}, a.heap_bytes);
  }
  out.Family("wharf_application_inflight", MetricType::kGauge,
             "Each attached application's operations in flight.");
  for (const daemon::ApplicationReport& a : d.applications) {
    out.Sample({{"app", std::to_string(a.id)}, {"program", Printable(a.program)}}, a.inflight);
  }
  out.Family("wharf_application_connections", MetricType::kGauge,
             "Each attached application's open connections.");
  for (const daemon::ApplicationReport& a : d.applications) {
    out.Sample({{"app", std::to_string(a.id)}, {"program", Printable(a.program)}}, a.connections);
  }
}

}  // namespace

Result<std::string> RenderMetrics(const MeshSnapshot& s) {
  PrometheusText out;
  WriteTargets(out, s);
  WritePeers(out, s);
  WriteProber(out, s);
  WriteDaemon(out, s);
  return out.Finish();
}

}  // namespace wharf::mesh
