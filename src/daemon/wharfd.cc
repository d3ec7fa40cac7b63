// Daemon: startup, admission, endpoints on the shared sockets, the loop.
#include "daemon/wharfd.h"

#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <unistd.h>

#include <algorithm>

#include "base/log.h"
#include "daemon/switched_transport.h"
#include "daemon/unattached_limits.h"
#include "engine/uri.h"
#include "wire/endpoint_id.h"

namespace wharf::daemon {

// The sink of one own endpoint's engine: requests for the service's methods
// and the completions of its operations go to the service; without one,
// nothing is served (the engine answers kUnimplemented) and no operation is
// ever started.
class Daemon::OwnSink final : public engine::EngineSink {
 public:
  OwnSink(std::string scheme, const Clock& clock, std::unique_ptr<DaemonService>* service)
      : scheme_(std::move(scheme)), clock_(clock), service_(*service) {}
  void set_engine(engine::EngineApi* engine) { engine_ = engine; }
  void OnComplete(uint64_t op_id, Status status, Buffer message, uint64_t) override {
    if (service_ != nullptr) {
      const engine::KernelStamps stamps =
          engine_ != nullptr ? engine_->completing_stamps() : engine::KernelStamps{};
      service_->OnComplete(scheme_, op_id, std::move(status), std::move(message), clock_.NowNs(),
                           stamps);
    }
  }
  void OnRequest(engine::IncomingCall call) override {
    if (service_ != nullptr && engine_ != nullptr) {
      service_->OnRequest(scheme_, *engine_, std::move(call), clock_.NowNs());
    }
  }
  // The service's handlers answer from inside OnRequest, and quickly.
  bool MayRunHandlersInline() const override { return false; }
  void OnCallCancelled(const engine::ServerCallRef&) override {}

 private:
  const std::string scheme_;
  const Clock& clock_;
  // The daemon's slot: the service may be added after the endpoint opened.
  const std::unique_ptr<DaemonService>& service_;
  engine::EngineApi* engine_ = nullptr;
};

Daemon::Daemon(DaemonConfig config, const Clock& clock)
    : config_(std::move(config)),
      clock_(clock),
      started_ns_(clock.NowNs()),
      watchdog_(config_.stall_threshold_ns),
      status_tokens_(config_.status_requests_per_second),
      status_tokens_at_ns_(started_ns_) {}

Daemon::~Daemon() {
  // Sessions first (their endpoints are on our sockets and the switch),
  // then our own.
  sessions_.clear();
  own_.clear();
  switch_.reset();
}

Result<std::unique_ptr<Daemon>> Daemon::Start(DaemonConfig config, const Clock& clock) {
  std::unique_ptr<Daemon> d(new Daemon(std::move(config), clock));
  SetLogLevel(d->config_.log_level);
  WHARF_ASSIGN_OR_RETURN(d->waiter_, engine::Waiter::Open(clock));
  // Our fds stay in the epoll set: the daemon sleeps and wakes all the
  // time, and moving them in and out costs epoll_ctl calls each time.
  d->waiter_->KeepFdsWatched();
  d->waiter_->set_yield_while_spinning(true);
  d->waiter_->set_yield_only_after_handoff(true);
  d->transports_ = std::make_unique<engine::TransportSet>(d->config_.engine, clock);
  // One read of the shared socket per pass, not one per application.
  d->transports_->SetOwnerPollsSockets();
  d->switch_ = std::make_unique<LocalSwitch>(clock);
  // This host's addresses: a peer named by any of them is local.
  ifaddrs* ifs = nullptr;
  if (::getifaddrs(&ifs) == 0) {
    for (ifaddrs* i = ifs; i != nullptr; i = i->ifa_next) {
      if (i->ifa_addr == nullptr) continue;
      const size_t len = i->ifa_addr->sa_family == AF_INET6 ? sizeof(sockaddr_in6)
                                                            : sizeof(sockaddr_in);
      if (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6) continue;
      Result<transport::NetAddress> a = transport::NetAddress::FromSockaddr(i->ifa_addr, len);
      if (!a.ok()) continue;
      d->switch_->AddLocalAddress(*a);
      d->host_addresses_.push_back(*a);
    }
    ::freeifaddrs(ifs);
  }
  // The control socket first: a second wharfd started with the same
  // configuration then says a daemon is already listening there, rather
  // than that listen.homa's port is taken. Applications that connect before
  // Run wait in the socket's backlog; if a listen socket fails below, the
  // listener removes the file it created.
  shm::ListenerOptions options;
  options.group = d->config_.socket_group;
  // What applications send is small: hellos, requests, wake-ups.
  options.limits.max_fds = 0;
  options.limits.max_message_bytes = 4096;
  // What wharfd sends may be larger: the status JSON grows with every
  // attached application (a few hundred bytes each). A SOCK_SEQPACKET
  // message must also fit the socket's send buffer (net.core.wmem_default,
  // ~208 KiB), so this is the ceiling, some 300 applications' worth.
  options.limits.max_send_bytes = 192 * 1024;
  // Applications pass no files: where the kernel can, it refuses them, so
  // that no close() of a peer's file (which may block: a lingering socket)
  // ever runs on our loop. Elsewhere they are closed on a thread of their
  // own, with every connection that could hold some.
  options.refuse_fds = d->config_.refuse_passed_fds;
  WHARF_ASSIGN_OR_RETURN(d->listener_,
                         shm::ControlListener::Open(d->config_.socket_path, clock, options));
  d->waiter_->NoteReadinessOf(d->listener_->fd());  // see Pass
  if (!d->listener_->refuses_fds()) {
    d->closer_ = std::make_unique<shm::BackgroundCloser>();
    d->listener_->set_closer(d->closer_.get());
    WHARF_LOG(kInfo, "wharfd: the kernel does not refuse passed fds (SO_PASSRIGHTS); closing "
                     "them off the loop");
  }
  if (!d->config_.listen_homa.empty()) {
    WHARF_RETURN_IF_ERROR(d->OpenOwnEndpoint("homa", d->config_.listen_homa));
  }
  if (!d->config_.listen_tcp.empty()) {
    WHARF_RETURN_IF_ERROR(d->OpenOwnEndpoint("tcp", d->config_.listen_tcp));
  }
  WHARF_LOG(kInfo, "wharfd: listening on {} (control), {}{}{}", d->config_.socket_path,
            d->homa_address().empty() ? "" : d->homa_address(),
            d->config_.listen_tcp.empty() ? "" : ", tcp://",
            d->config_.listen_tcp);
  return d;
}

Status Daemon::OpenOwnEndpoint(std::string_view scheme, const std::string& address) {
  WHARF_ASSIGN_OR_RETURN(transport::NetAddress bind, transport::NetAddress::Parse(address));
  auto own = std::make_unique<OwnEndpoint>();
  const uint16_t id = scheme == "homa" ? wire::EndpointIdForName("wharfd") : 0;
  Result<std::unique_ptr<transport::MessageTransport>> t =
      transports_->OpenEndpoint(scheme, bind, id);
  if (!t.ok()) {
    return t.status().WithContext("listen." + std::string(scheme) + " (" + address + ")");
  }
  own->transport = std::move(*t);
  if (scheme == "homa") homa_bind_ = own->transport->LocalAddress();
  own->sink = std::make_unique<OwnSink>(std::string(scheme), clock_, &service_);
  own->engine = std::make_unique<engine::Engine>(own->transport.get(), nullptr, clock_,
                                                 config_.engine.limits, own->sink.get());
  own->sink->set_engine(own->engine.get());
  own_.push_back(std::move(own));
  return OkStatus();
}

Status Daemon::AddService(std::unique_ptr<DaemonService> service) {
  if (service_ != nullptr) return FailedPreconditionError("wharfd: a service is already running");
  Result<std::vector<uint32_t>> methods = service->Attach(this);
  if (!methods.ok()) return methods.status();
  service_ = std::move(service);
  for (auto& own : own_) {
    for (uint32_t method : *methods) own->engine->SetServed(method, true);
  }
  return OkStatus();
}

void Daemon::RequestReload() {
  if (service_ != nullptr) service_->RequestReload();
  if (waiter_ != nullptr) waiter_->WakeAlways();
}

engine::EngineApi* Daemon::OwnEngine(std::string_view scheme) {
  for (auto& own : own_) {
    if (own->transport->scheme() == scheme) return own->engine.get();
  }
  return nullptr;
}

transport::NetAddress Daemon::OwnAddress(std::string_view scheme) const {
  for (const auto& own : own_) {
    if (own->transport->scheme() == scheme) return own->transport->LocalAddress();
  }
  return {};
}

std::string Daemon::homa_address() const {
  return homa_bind_.port() == 0 ? std::string() : "homa://" + homa_bind_.ToString();
}

Status Daemon::Admit(const shm::PeerCredentials& peer) {
  if (!config_.allowed_uids.empty() &&
      std::find(config_.allowed_uids.begin(), config_.allowed_uids.end(), peer.uid) ==
          config_.allowed_uids.end()) {
    return PermissionDeniedError("uid " + std::to_string(peer.uid) +
                                 " is not in wharfd's daemon.allowed_uids");
  }
  size_t attached = 0;
  // Sessions closing (lingering so their answers leave) no longer count.
  for (const auto& [id, s] : sessions_) attached += !s->address().empty() && !s->closing();
  if (attached >= config_.max_applications) {
    return ResourceExhaustedError("wharfd limits.max_applications (" +
                                  std::to_string(config_.max_applications) + ") reached");
  }
  return OkStatus();
}

Result<AppEndpoint> Daemon::Switched(std::unique_ptr<transport::MessageTransport> inner,
                                     uint16_t endpoint_id) {
  AppEndpoint e;
  WHARF_ASSIGN_OR_RETURN(std::unique_ptr<SwitchedTransport> outer,
                         SwitchedTransport::Create(switch_.get(), inner.get(), endpoint_id));
  e.inner = std::move(inner);
  e.outer = std::move(outer);
  return e;
}

Result<AppEndpoint> Daemon::OpenAppEndpoint(std::string_view address,
                                            std::string* public_address) {
  // Numeric only: a name lookup may block for seconds, and this is the loop
  // every application waits on. libwharf resolves names before its hello.
  WHARF_ASSIGN_OR_RETURN(engine::Uri uri,
                         engine::ParseUri(address, config_.engine.default_scheme, nullptr));
  std::unique_ptr<transport::MessageTransport> t;
  uint16_t endpoint_id = uri.endpoint_id;
  std::string suffix = uri.endpoint_name.empty() ? "" : "/" + uri.endpoint_name;
  if (uri.scheme == "homa") {
    if (homa_bind_.port() == 0) {
      return FailedPreconditionError("wharfd has no homa:// socket (listen.homa is empty)");
    }
    if (uri.address.port() != 0 && uri.address.port() != homa_bind_.port()) {
      return InvalidArgumentError(
          "managed homa:// endpoints live on wharfd's socket " + homa_address() +
          ": ask for port 0 or " + std::to_string(homa_bind_.port()) + ", not " +
          std::to_string(uri.address.port()));
    }
    if (uri.address.port() == 0 && uri.endpoint_name.empty()) {
      // A fresh endpoint of its own, known by id, as a new socket would be.
      for (int tries = 0; tries < 0x8000 && t == nullptr; ++tries) {
        const uint16_t id = next_auto_endpoint_;
        next_auto_endpoint_ = next_auto_endpoint_ == 0xFFFF ? 0x8000 : next_auto_endpoint_ + 1;
        Result<std::unique_ptr<transport::MessageTransport>> r =
            transports_->OpenEndpoint("homa", homa_bind_, id);
        if (r.ok()) {
          t = std::move(*r);
          endpoint_id = id;
          suffix = engine::EndpointSuffix(id);
        } else if (r.status().code() != StatusCode::kAlreadyExists) {
          return r.status();
        }
      }
      if (t == nullptr) return ResourceExhaustedError("every endpoint id of wharfd's socket is taken");
    } else {
      WHARF_ASSIGN_OR_RETURN(t, transports_->OpenEndpoint("homa", homa_bind_, uri.endpoint_id));
    }
  } else {
    // tcp:// and ucx:// have one endpoint per port: the application's own port.
    WHARF_ASSIGN_OR_RETURN(t, transports_->OpenEndpoint(uri.scheme, uri.address, uri.endpoint_id));
  }
  *public_address = uri.scheme + "://" + t->LocalAddress().ToString() + suffix;
  return Switched(std::move(t), endpoint_id);
}

Result<AppEndpoint> Daemon::OpenSecondary(std::string_view scheme) {
  transport::NetAddress any = homa_bind_.port() != 0 && homa_bind_.is_v6()
                                  ? *transport::NetAddress::Parse("[::]:0")
                                  : *transport::NetAddress::Parse("0.0.0.0:0");
  WHARF_ASSIGN_OR_RETURN(std::unique_ptr<transport::MessageTransport> t,
                         transports_->OpenEndpoint(scheme, any, 0));
  return Switched(std::move(t), 0);
}

Status Daemon::Run() {
  while (!stop_.load()) {
    // A pass that leaves answers awaited spins longer: on a shared CPU the
    // peer (or the application) is often just busy for longer than
    // endpoint.spin, and a sleep then costs a wake-up per round trip. The
    // spin yields, so whoever else needs the CPU gets it.
    // With no application attached nobody's latency hangs on the spin: the
    // only traffic is the mesh's, whose answers the kernel stamps on arrival
    // (udp.rx_timestamps), so a read a wake-up later times them the same.
    // Sleeping at once saves the empty reads of a spin after every batch
    // of probes.
    auto spin = [&]() -> DurationNs {
      if (sessions_.empty() && config_.engine.rx_timestamps) return 0;
      return awaiting_answers_ ? std::max(config_.busy_spin_ns, config_.engine.spin_ns)
                               : config_.engine.spin_ns;
    };
    waiter_->SpinThenBlock([&] { return stop_.load(); }, [&] { return Pass(); },
                           [&] { BeforeSleep(); }, [&] { return stop_.load(); }, kNever, spin);
  }
  WHARF_LOG(kInfo, "wharfd: stopping; {} application(s) attached", sessions_.size());
  return OkStatus();
}

void Daemon::Stop() {
  stop_.store(true);
  if (waiter_ != nullptr) waiter_->WakeAlways();
}

transport::PollResult Daemon::Pass() {
  ++counters_.passes;
  waiter_->ClearReadable();
  transport::PollResult all;
  all.next_deadline = kNever;
  const TimeNs now = clock_.NowNs();
  struct TurnTimer {
    LoopWatchdog& dog;
    const Clock& clock;
    TimeNs start;
    ~TurnTimer() { dog.Record(start, clock.NowNs()); }
  } timer{watchdog_, clock_, now};
  // The listener and the control sockets carry attaches, wake-ups and EOF:
  // after a sleep they are what woke us; while spinning, a look every
  // kControlCheckInterval finds a new or departed application soon enough,
  // without a system call per socket per pass (an accept that finds nobody
  // costs microseconds here).
  if (slept_) watchdog_.Awake();  // once per sleep: a getrusage
  const bool check_control = slept_ || now >= next_control_check_ns_;
  if (check_control) next_control_check_ns_ = now + kControlCheckInterval;
  // After a sleep, the listener only when epoll said someone knocks; while
  // spinning, the look every kControlCheckInterval. Most wake-ups of a
  // daemon with mesh traffic are packets, and an accept finding nobody was
  // a system call on each (docs/mesh.md, "Cost").
  // (Only after a sleep: the flag is set in sleeps, and spinning turns
  // should not pay an atomic exchange each.)
  if (slept_ ? waiter_->TakeNotedReadiness() : check_control) AcceptConnections(now);
  slept_ = false;
  // The shared sockets first: what arrived goes to the endpoints' queues,
  // which the sessions' engines then read.
  {
    transport::PollResult r = transports_->PollSockets();
    all.work += r.work;
    all.next_deadline = std::min(all.next_deadline, r.next_deadline);
  }
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    AppSession& s = *it->second;
    transport::PollResult r = s.Poll(now, check_control);
    all.work += r.work;
    all.handed_off = all.handed_off || r.handed_off;
    if (s.finished(now)) {
      if (!s.address().empty()) ++counters_.applications_detached;
      // Refused attaches are counted as such; a status query that timed
      // out or left is nobody's fault.
      const StatusCode why = s.close_reason().code();
      if (!s.attached() && why == StatusCode::kDeadlineExceeded) ++counters_.hello_timeouts;
      if ((s.attached() || s.counters().control_refused > 0) && why != StatusCode::kUnavailable &&
          why != StatusCode::kDeadlineExceeded) {
        ++counters_.applications_faulted;
        last_fault_ = "application " + std::to_string(s.id()) + " (pid " +
                      std::to_string(s.peer().pid) + "): " + s.close_reason().ToString();
      }
      KeepDepartedRtts(s, now);
      it = sessions_.erase(it);  // frees its region, fds and endpoint
      ++all.work;
      continue;
    }
    ++it;
  }
  // A session's pass may hand an earlier one work (a same-host answer is
  // queued at the caller's endpoint): run those again now rather than a
  // pass later, which on a shared CPU is a whole yield away. Then the
  // deadlines, after every session ran.
  const TimeNs after = clock_.NowNs();
  awaiting_answers_ = false;
  all.served_idle = true;
  for (auto& [id, session] : sessions_) {
    TimeNs next = session->NextDeadline();
    if (next <= after) {
      const transport::PollResult again = session->Poll(after, false);
      all.work += again.work;
      all.handed_off = all.handed_off || again.handed_off;
      next = session->NextDeadline();
    }
    all.next_deadline = std::min(all.next_deadline, next);
    awaiting_answers_ = awaiting_answers_ || session->awaiting_answers();
    all.served_idle = all.served_idle && session->application_idle();
  }
  for (auto& own : own_) {
    // The own endpoints' traffic is not on anyone's fast path (a tcp://
    // endpoint's poll is a system call of its own).
    if (!check_control && own->transport->scheme() != "homa") continue;
    transport::PollResult r = own->engine->Poll();
    all.work += r.work;
    all.next_deadline = std::min(all.next_deadline, r.next_deadline);
  }
  if (service_ != nullptr) {
    transport::PollResult r = service_->Poll(after);
    all.work += r.work;
    all.next_deadline = std::min(all.next_deadline, r.next_deadline);
  }
  // The time read after the sessions ran: the own endpoints' polls since
  // take microseconds, and the waiter only measures spin windows with it.
  all.now = after;
  waiter_->ArmTimer(all.next_deadline);
  return all;
}

void Daemon::AcceptConnections(TimeNs now) {
  // Bounded per pass, like everything else.
  for (int i = 0; i < 16; ++i) {
    Result<std::unique_ptr<shm::ControlConnection>> c = listener_->Accept();
    if (!c.ok()) {
      WHARF_LOG(kWarn, "wharfd: accept: {}", c.status().ToString());
      return;
    }
    if (*c == nullptr) return;
    // Sessions closing (lingering at most kLinger so their answers leave)
    // have an allowance of their own, so that applications coming and
    // going quickly are not refused; past it, the newcomer is.
    size_t attached = 0;
    for (const auto& [id, s] : sessions_) attached += s->attached() && !s->closing();
    if (sessions_.size() >= attached + 2 * config_.max_unattached + config_.max_applications) {
      ++counters_.connections_refused;
      continue;  // closed by the unique_ptr (or the closer)
    }
    EvictForNewcomer((*c)->peer().uid);
    const uint64_t id = next_session_id_++;
    auto session = std::make_unique<AppSession>(*this, id, std::move(*c));
    // No message extends this: a connection that has not said hello by
    // then goes, whatever else it sent.
    session->set_hello_deadline(now + config_.hello_timeout_ns);
    session->set_status_provider([this] { return AnswerStatusRequest(); });
    AppSession& placed = *sessions_.emplace(id, std::move(session)).first->second;
    // An application sends its hello right after connect: attach it now,
    // before a later connection could evict it.
    (void)placed.Poll(now, true);
  }
}

void Daemon::EvictForNewcomer(uid_t uid) {
  std::vector<UnattachedConnection> waiting;
  for (const auto& [id, s] : sessions_) {
    if (!s->attached() && !s->closing()) waiting.push_back({id, s->peer().uid});
  }
  const std::optional<uint64_t> victim =
      ChooseEviction(waiting, uid, config_.max_unattached, config_.max_unattached_per_uid);
  if (!victim.has_value()) return;
  ++counters_.connections_evicted;
  sessions_.erase(*victim);  // no engine: nothing to linger for
}

void Daemon::KeepDepartedRtts(AppSession& session, TimeNs now) {
  if (service_ == nullptr) return;  // nobody takes them
  session.TakePeerRtts(now, [&](std::string_view scheme, const engine::PeerRttDelta& d) {
    auto it = std::find(departed_schemes_.begin(), departed_schemes_.end(), scheme);
    if (it == departed_schemes_.end()) {
      if (departed_schemes_.size() >= kMaxDepartedSchemes) return;
      it = departed_schemes_.insert(departed_schemes_.end(), std::string(scheme));
    }
    const auto index = static_cast<uint8_t>(it - departed_schemes_.begin());
    departed_rtts_.Add({index, d.peer.address}, now, d.round_trips, d.failures);
  });
}

bool Daemon::TakeApplicationRtts(
    TimeNs now, size_t max_sessions,
    const std::function<void(std::string_view scheme, const engine::PeerRttDelta&)>& visit) {
  if (rtt_take_cursor_ == 0) {
    departed_rtts_.Take(now, [&](const engine::PeerRttDelta& d) {
      visit(departed_schemes_[d.peer.transport], d);
    });
  }
  // By id: sessions that come or go between calls neither stop the round
  // nor are visited twice in it.
  auto it = sessions_.lower_bound(rtt_take_cursor_);
  for (size_t n = 0; it != sessions_.end() && n < max_sessions; ++it, ++n) {
    it->second->TakePeerRtts(now, visit);
  }
  if (it == sessions_.end()) {
    rtt_take_cursor_ = 0;
    return true;
  }
  rtt_take_cursor_ = it->first;
  return false;
}

Result<std::string> Daemon::AnswerStatusRequest() {
  const TimeNs now = clock_.NowNs();
  const double rate = config_.status_requests_per_second;
  status_tokens_ = std::min(rate, status_tokens_ + rate * static_cast<double>(now - status_tokens_at_ns_) /
                                                     static_cast<double>(kNsPerSec));
  status_tokens_at_ns_ = now;
  if (status_tokens_ < 1) {
    ++counters_.status_requests_limited;
    return ResourceExhaustedError("wharfd answers at most " + std::to_string(config_.status_requests_per_second) +
                                  " status requests per second (daemon.status_requests_per_second); "
                                  "try again shortly");
  }
  status_tokens_ -= 1;
  return StatusJson();
}

DaemonReport Daemon::Report() const {
  DaemonReport r;
  r.pid = ::getpid();
  r.socket = config_.socket_path;
  r.uptime_seconds = (clock_.NowNs() - started_ns_) / kNsPerSec;
  r.counters = counters_;
  r.last_fault = last_fault_;
  r.loop = watchdog_.Stats();
  r.kernel_refuses_fds = listener_->refuses_fds();
  r.fds_closed_off_loop = closer_ != nullptr ? closer_->counters().closed : 0;
  for (const auto& [id, s] : sessions_) {
    if (!s->attached()) {
      r.unattached_connections += !s->closing();
      continue;  // a status query or a hello in flight, not an application
    }
    const SessionCounters& c = s->counters();
    r.applications.push_back(ApplicationReport{
        .id = id,
        .pid = s->peer().pid,
        .uid = s->peer().uid,
        .gid = s->peer().gid,
        .program = s->program(),
        .endpoint = s->address(),
        .closing = s->closing(),
        .close_reason = s->closing() ? s->close_reason().ToString() : "",
        .heap_bytes = s->heap_bytes(),
        .receive_bytes_in_use = s->receive_bytes_in_use(),
        .inflight = s->inflight(),
        .requests_in_service = s->requests_in_service(),
        .connections = s->connections(),
        .idle = s->application_idle(),
        .paths = s->Paths(),
        .counters = {{"commands", c.commands},
                     {"completions", c.completions},
                     {"bad_commands", c.bad_commands},
                     {"bytes_sent", c.bytes_sent},
                     {"bytes_received", c.bytes_received},
                     {"received_in_place", c.received_in_place},
                     {"requests_refused", c.requests_refused},
                     {"late_answers", c.late_answers},
                     {"backpressure_passes", c.backpressure_passes},
                     {"control_refused", c.control_refused}},
    });
  }
  // Per transport: the counters of the daemon's own endpoint on each
  // listen socket, which include the socket's (shared by every application).
  for (const auto& own : own_) {
    r.transports.emplace_back(std::string(own->transport->scheme()) + "://" +
                                  own->transport->LocalAddress().ToString(),
                              own->engine->Counters());
  }
  return r;
}

void Daemon::BeforeSleep() {
  ++counters_.sleeps;
  const TimeNs start = clock_.NowNs();
  fds_scratch_.clear();
  fds_scratch_.push_back(listener_->fd());
  for (auto& own : own_) own->engine->AppendReadableFds(&fds_scratch_);
  for (auto& [id, s] : sessions_) s->AppendFds(&fds_scratch_);
  std::sort(fds_scratch_.begin(), fds_scratch_.end());
  fds_scratch_.erase(std::unique(fds_scratch_.begin(), fds_scratch_.end()), fds_scratch_.end());
  if (fds_scratch_ != watched_fds_ && waiter_->Watch(fds_scratch_).ok()) {
    watched_fds_ = fds_scratch_;
  }
  slept_ = true;
  bool sleep = true;
  for (auto& [id, s] : sessions_) sleep = s->PrepareToSleep() && sleep;
  if (!sleep) waiter_->WakeAlways();  // commands came in after the last pass
  watchdog_.Record(start, clock_.NowNs());
}

}  // namespace wharf::daemon
