// MeshService: the responder, the prober over the own engines, pinglist
// reloads and snapshots.
#include "mesh/mesh_service.h"

#include <algorithm>
#include <utility>

#include "base/log.h"
#include "wire/endpoint_id.h"
#include "wire/mesh_probe.h"

namespace wharf::mesh {
namespace {

// The own endpoint's name on a homa:// socket (wharfd.cc opens it so).
constexpr std::string_view kOwnEndpointName = "wharfd";

engine::Uri UriOf(const PinglistHost& host, ProbeTransport transport) {
  engine::Uri uri;
  uri.scheme = std::string(TransportName(transport));
  if (transport == ProbeTransport::kHoma) {
    uri.address = host.homa;
    uri.endpoint_id = wire::EndpointIdForName(kOwnEndpointName);
    uri.endpoint_name = std::string(kOwnEndpointName);
  } else {
    uri.address = host.tcp;
  }
  return uri;
}

}  // namespace

Result<std::unique_ptr<MeshService>> MeshService::Create(const daemon::MeshSettings& settings,
                                                         const Clock& clock, uint64_t epoch) {
  std::unique_ptr<MeshService> service(new MeshService(settings, clock, epoch));
  if (!settings.pinglist.empty()) {
    Result<Pinglist> list = LoadPinglist(settings.pinglist);
    if (!list.ok()) return list.status().WithContext("mesh.pinglist");
    service->first_list_ = std::make_unique<Pinglist>(std::move(*list));
    // The file as read now is the baseline for changes.
    (void)service->watch_.Changed();
  }
  return service;
}

MeshService::MeshService(const daemon::MeshSettings& settings, const Clock& clock, uint64_t epoch)
    : settings_(settings),
      clock_(clock),
      prober_(epoch, this,
              ProberOptions{.max_probes_per_second = static_cast<double>(settings.max_probes_per_second)}),
      watch_(settings.pinglist) {
  pinglist_state_.path = settings.pinglist;
}

MeshService::~MeshService() {
  if (board_ != nullptr) board_->Close();
}

Result<std::vector<uint32_t>> MeshService::Attach(daemon::ServiceHost* host) {
  host_ = host;
  board_ = std::make_unique<SnapshotBoard>([host] { host->WakeLoop(); });
  const TimeNs now = clock_.NowNs();
  if (first_list_ != nullptr) {
    ++pinglist_state_.loads;
    WHARF_RETURN_IF_ERROR(Apply(std::move(*first_list_), now).WithContext("mesh.pinglist"));
    first_list_.reset();
  }
  next_check_ns_ = now + settings_.reload_check_ns;
  return std::vector<uint32_t>{wire::kMeshProbeMethod};
}

Status MeshService::Apply(Pinglist list, TimeNs now) {
  const transport::NetAddress homa = host_->OwnAddress("homa");
  const transport::NetAddress tcp = host_->OwnAddress("tcp");
  WHARF_ASSIGN_OR_RETURN(size_t self, FindSelf(list, settings_.name, host_->HostAddresses(),
                                               homa.port(), tcp.port()));
  WHARF_ASSIGN_OR_RETURN(std::vector<ProbeTarget> targets, TargetsOf(list, self));
  std::vector<ProbeTargetSpec> specs;
  specs.reserve(targets.size());
  for (const ProbeTarget& t : targets) {
    const PinglistHost& target = list.hosts[t.host];
    specs.push_back({.host = target.name,
                     .transport = t.transport,
                     .uri = UriOf(target, t.transport),
                     .probe = t.probe,
                     .origin = t.origin});
  }
  prober_.SetTargets(std::move(specs), now);
  // A snapshot half built holds targets of the list before: start over.
  building_.reset();
  pinglist_state_.version = list.version;
  pinglist_state_.self = list.hosts[self].name;
  pinglist_state_.hosts.clear();
  for (const PinglistHost& h : list.hosts) pinglist_state_.hosts.push_back(h.name);
  pinglist_state_.loaded_ns = now;
  pinglist_state_.error.clear();
  pinglist_ = std::make_unique<Pinglist>(std::move(list));
  WHARF_LOG(kInfo, "mesh: pinglist {} version {}: this host is {}, probing {} target(s)",
            settings_.pinglist, pinglist_state_.version, pinglist_state_.self, prober_.size());
  return OkStatus();
}

void MeshService::RequestReload() { reload_requested_.store(true); }

void MeshService::CheckPinglist(TimeNs now, bool forced) {
  if (settings_.pinglist.empty()) return;
  if (!watch_.Changed() && !forced) return;
  ++pinglist_state_.loads;
  Result<Pinglist> list = LoadPinglist(settings_.pinglist);
  Status applied = list.ok() ? Apply(std::move(*list), now) : list.status();
  if (applied.ok()) return;
  ++pinglist_state_.load_failures;
  pinglist_state_.error = applied.ToString();
  WHARF_LOG(kWarn, "mesh: pinglist {} not reloaded, the list in use (version {}) stays: {}",
            settings_.pinglist,
            pinglist_state_.version.empty() ? "none" : pinglist_state_.version,
            pinglist_state_.error);
}

void MeshService::OnRequest(std::string_view, engine::EngineApi& engine, engine::IncomingCall call,
                            TimeNs now) {
  if (call.method != wire::kMeshProbeMethod) {
    engine.Respond(call.ref, UnimplementedError("wharfd serves mesh probes only"));
    return;
  }
  // The dwell starts when the kernel received the probe, where it says: the
  // probe's wait in this daemon's socket is then the daemon's time, not the
  // network's.
  const TimeNs arrived = call.received_ns != 0 && call.received_ns <= now ? call.received_ns : now;
  Result<ProbeAnswer> answer = responder_.Answer(call.request.span(), arrived, clock_.NowNs());
  if (!answer.ok()) {
    engine.Respond(call.ref, answer.status());
    return;
  }
  engine.Respond(call.ref, OkStatus(), std::move(answer->message), answer->priority);
}

void MeshService::OnComplete(std::string_view, uint64_t op_id, Status status, Buffer message,
                             TimeNs now, engine::KernelStamps stamps) {
  prober_.OnComplete(op_id, status, message.span(), now, stamps.received_ns, stamps.sent_ns);
}

void MeshService::SendProbe(uint64_t op_id, const ProbeTargetSpec& target, Buffer request,
                            TimeNs deadline_ns) {
  engine::EngineApi* engine = host_->OwnEngine(TransportName(target.transport));
  if (engine == nullptr) {
    prober_.OnComplete(op_id,
                       FailedPreconditionError("this wharfd has no " +
                                               std::string(TransportName(target.transport)) +
                                               ":// listener (listen." +
                                               std::string(TransportName(target.transport)) + ")"),
                       {}, clock_.NowNs());
    return;
  }
  // The departure is stamped where the socket can (udp.tx_timestamps).
  engine->Call(op_id, target.uri, wire::kMeshProbeMethod, std::move(request), deadline_ns,
               {.priority = static_cast<transport::MessagePriority>(target.probe.priority),
                .stamp_departure = true});
}

transport::PollResult MeshService::Poll(TimeNs now) {
  transport::PollResult result;
  result.now = now;
  const bool forced = reload_requested_.exchange(false);
  if (forced || now >= next_check_ns_) {
    next_check_ns_ = now + settings_.reload_check_ns;
    CheckPinglist(now, forced);
  }
  if (passive_round_open_ || now >= next_passive_take_ns_) {
    if (!passive_round_open_) next_passive_take_ns_ = now + kPassiveTakeInterval;
    passive_round_open_ = !TakePassive(now);
    ++result.work;
  }
  // Probes are sent one system call each, not batched into one sendmmsg:
  // a burst of ten back to back doubled the p99 of the applications' RPCs
  // through the same daemons (scripts/mesh-bench, 2026-11-29), for 3 us of
  // CPU per probe.
  transport::PollResult probes = prober_.Poll(now);
  result.work += probes.work;
  result.next_deadline = std::min({probes.next_deadline, next_check_ns_,
                                   passive_round_open_ ? now : next_passive_take_ns_});
  if (building_ != nullptr || board_->wanted()) {
    BuildSnapshot(now);
    ++result.work;
    // The rest of it next pass, at once.
    if (building_ != nullptr) result.next_deadline = now;
  }
  return result;
}

bool MeshService::TakePassive(TimeNs now) {
  const bool round_over = host_->TakeApplicationRtts(
      now, kPassiveSessionsPerPass, [&](std::string_view scheme, const engine::PeerRttDelta& d) {
        passive_.Add(now, scheme, d.peer.address, d.round_trips, d.failures);
      });
  if (round_over && building_ == nullptr) passive_.ForgetIdle(now);
  return round_over;
}

void MeshService::BuildSnapshot(TimeNs now) {
  if (building_ == nullptr) {
    building_ = std::make_shared<MeshSnapshot>();
    building_->targets.reserve(prober_.size());
    built_targets_ = 0;
    built_peers_ = 0;
    peer_hosts_.clear();
  }
  // Targets first, then peers, kSnapshotTargetsPerPass of either per pass.
  size_t budget = kSnapshotTargetsPerPass;
  for (; budget > 0 && built_targets_ < prober_.size(); --budget) CopyTarget(built_targets_++, now);
  for (; budget > 0 && built_peers_ < passive_.size(); --budget) CopyPeer(built_peers_++, now);
  if (built_targets_ < prober_.size() || built_peers_ < passive_.size()) return;
  MeshSnapshot& s = *building_;
  s.taken_ns = now;
  s.pinglist = pinglist_state_;
  s.prober = prober_.counters();
  s.prober_epoch = prober_.epoch();
  s.probes_per_second = prober_.schedule().rate_per_second();
  s.stretch = prober_.schedule().stretch();
  s.probes_skipped = prober_.schedule().skipped();
  s.probes_answered = responder_.counters().answered;
  s.probes_malformed = responder_.counters().malformed;
  s.passive_untracked = passive_.counters().untracked;
  s.passive_evicted = passive_.counters().evicted;
  s.daemon = host_->Report();
  board_->Publish(std::move(building_));
  building_.reset();
}

void MeshService::CopyTarget(size_t index, TimeNs now) {
  const ProbeTargetSpec& spec = prober_.target(index);
  const ProbeSeries& series = prober_.series(index);
  TargetSnapshot t;
  t.host = spec.host;
  t.transport = std::string(TransportName(spec.transport));
  t.uri = engine::FormatUri(spec.uri);
  t.origin = spec.origin;
  t.interval_ns = static_cast<DurationNs>(static_cast<double>(spec.probe.interval) *
                                          prober_.schedule().stretch());
  t.timeout_ns = spec.probe.timeout;
  t.size_bytes = spec.probe.size_bytes;
  t.priority = spec.probe.priority;
  t.dscp = ProbeDscp(spec.transport, spec.probe.priority);
  t.counters = series.counters();
  t.in_flight = series.in_flight();
  for (Window w : kWindows) {
    const auto i = static_cast<size_t>(w);
    // The state from the same summary: merging a window's histograms is
    // most of a snapshot's cost on the loop.
    t.rtt[i] = series.rtt().Summary(w, now);
    t.state[i] = StateOf(t.rtt[i]);
    t.network[i] = series.network().Summary(w, now);
  }
  t.rtt_buckets = series.rtt_buckets();
  t.network_buckets = series.network_buckets();
  t.last_answer_ns = series.last_answer_ns();
  t.last_sent_ns = series.last_sent_ns();
  t.last_failure = series.last_failure();
  t.history = series.rtt().History(now);
  // The applications' traffic to the same address: the peers are copied
  // after the targets, in passive_'s order, which nothing changes until
  // the snapshot is out (ForgetIdle waits; Add only appends).
  if (const std::optional<size_t> i = passive_.IndexOf(t.transport, spec.uri.address)) {
    t.passive = static_cast<int>(*i);
    peer_hosts_[*i] = spec.host;
  }
  building_->targets.push_back(std::move(t));
}

void MeshService::CopyPeer(size_t index, TimeNs now) {
  const PassiveSeries& series = passive_.series(index);
  PassiveSnapshot p;
  p.transport = series.transport();
  p.peer = series.peer().ToString();
  if (auto it = peer_hosts_.find(index); it != peer_hosts_.end()) p.host = it->second;
  p.round_trips = series.round_trips();
  p.failures = series.failures();
  p.last_ns = series.last_ns();
  for (Window w : kWindows) {
    const auto i = static_cast<size_t>(w);
    p.rtt[i] = series.rtt().Summary(w, now);
    p.state[i] = StateOf(p.rtt[i]);
  }
  p.rtt_buckets = series.rtt_buckets();
  p.history = series.rtt().History(now);
  building_->peers.push_back(std::move(p));
}

}  // namespace wharf::mesh
