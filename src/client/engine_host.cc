// EngineHost: the shared runtime of the endpoints on one socket, and the
// process-wide registry that finds it by address.
#include "client/engine_host.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "client/endpoint_core.h"

namespace wharf::internal {

thread_local const EngineHost* EngineHost::polling_ = nullptr;

namespace {

// Hosts by "scheme://bound address", while any endpoint holds them. The only
// process-wide state of the library: endpoints opened on the same address
// share a socket instead of failing to bind it.
Mutex g_registry_mu;
// A function's static, so not annotated (GUARDED_BY names fields and
// globals): Registry() says what guards it.
std::map<std::string, std::weak_ptr<EngineHost>>& Registry()
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(g_registry_mu) {
  static auto* registry = new std::map<std::string, std::weak_ptr<EngineHost>>();
  return *registry;
}

std::string KeyOf(std::string_view scheme, const transport::NetAddress& address) {
  return std::string(scheme) + "://" + address.ToString();
}

}  // namespace

Result<std::shared_ptr<EngineHost>> EngineHost::OpenOrJoin(
    const engine::Uri& uri, const engine::EngineConfig& config,
    std::unique_ptr<transport::MessageTransport>* endpoint) {
  // Declared before the registry lock: a host that ends up unused is
  // destroyed after the lock is released (its destructor takes it).
  std::shared_ptr<EngineHost> host;
  MutexLock registry_lock(g_registry_mu);
  // Port 0 asks for a new socket; any other address may be ours already.
  if (uri.address.port() != 0) {
    auto it = Registry().find(KeyOf(uri.scheme, uri.address));
    if (it != Registry().end() && (host = it->second.lock()) != nullptr) {
      HostLock lock(host->mu_);
      WHARF_ASSIGN_OR_RETURN(*endpoint, host->transports_->OpenEndpoint(
                                            uri.scheme, uri.address, uri.endpoint_id));
      return host;
    }
  }
  host.reset(new EngineHost(config));
  // Nobody else sees the new host yet; its lock is taken all the same (once
  // per host, uncontended) so that the analysis checks this path too.
  HostLock new_host_lock(host->mu_);
  WHARF_ASSIGN_OR_RETURN(host->waiter_, engine::Waiter::Open(host->clock_));
  host->waiter_->set_yield_while_spinning(config.YieldsWhileSpinning(/*managed=*/false));
  host->transports_ = std::make_unique<engine::TransportSet>(host->config_, host->clock_);
  WHARF_ASSIGN_OR_RETURN(*endpoint,
                         host->transports_->OpenEndpoint(uri.scheme, uri.address, uri.endpoint_id));
  host->secondary_bind_ = uri.address.WithPort(0);
  host->registry_key_ = KeyOf(uri.scheme, (*endpoint)->LocalAddress());
  Registry()[host->registry_key_] = host;
  return host;
}

Result<std::shared_ptr<EngineHost>> EngineHost::Private(const engine::EngineConfig& config) {
  std::shared_ptr<EngineHost> host(new EngineHost(config));
  WHARF_ASSIGN_OR_RETURN(host->waiter_, engine::Waiter::Open(host->clock_));
  host->waiter_->set_yield_while_spinning(config.YieldsWhileSpinning(/*managed=*/true));
  host->reports_idle_ = true;
  return host;
}

EngineHost::~EngineHost() {
  if (registry_key_.empty()) return;  // never registered (its open failed)
  MutexLock registry_lock(g_registry_mu);
  auto it = Registry().find(registry_key_);
  // A new host may have taken the address since this one's last endpoint
  // let go: remove only our own (expired) entry.
  if (it != Registry().end() && it->second.expired()) Registry().erase(it);
}

Result<std::unique_ptr<transport::MessageTransport>> EngineHost::OpenSecondary(
    std::string_view scheme) {
  if (transports_ == nullptr) return FailedPreconditionError("this host has no sockets");
  return transports_->OpenEndpoint(scheme, secondary_bind_, /*endpoint_id=*/0);
}

void EngineHost::Attach(EndpointCore* core) {
  core->AssertLocked();  // ours: the cores on a host share its mutex
  if (said_idle_.load(std::memory_order_relaxed)) core->SetIdle(true);
  cores_.push_back(core);
  core_count_ = cores_.size();
  WatchNewFds();
}

void EngineHost::Detach(EndpointCore* core) {
  cores_.erase(std::remove(cores_.begin(), cores_.end(), core), cores_.end());
  core_count_ = cores_.size();
}

transport::PollResult EngineHost::PollLocked() {
  polling_ = this;
  transport::PollResult all;
  all.next_deadline = kNever;
  // By index: a handler may run with the lock released inside a core's
  // poll, and another endpoint may attach meanwhile.
  for (size_t i = 0; i < cores_.size(); ++i) {
    EndpointCore* core = cores_[i];
    core->AssertLocked();  // ours: the cores on a host share its mutex
    transport::PollResult r = core->PollEngineLocked();
    all.work += r.work;
    all.next_deadline = std::min(all.next_deadline, r.next_deadline);
    all.now = std::max(all.now, r.now);
  }
  polling_ = nullptr;
  waiter_->ArmTimer(all.next_deadline);  // a syscall only when the deadline moved earlier
  if (waiter_->watching()) WatchNewFds();
  return all;
}

void EngineHost::AfterEngineCall(TimeNs next_deadline_ns) {
  // The waiter keeps one deadline for all endpoints: the earliest.
  if (cores_.size() > 1) {
    for (EndpointCore* core : cores_) {
      core->AssertLocked();  // ours: the cores on a host share its mutex
      next_deadline_ns = std::min(next_deadline_ns, core->NextDeadline());
    }
  }
  waiter_->ArmTimer(next_deadline_ns);
  if (waiter_->watching()) WatchNewFds();
}

void EngineHost::WatchNewFds() {
  // A virtual call per transport: cheap next to the poll it follows, and it
  // finds a hot-peer socket a send just opened. Endpoints on one socket
  // report its fds each: the list is sorted and unique before counting.
  fds_scratch_.clear();
  for (EndpointCore* core : cores_) {
    core->AssertLocked();  // ours: the cores on a host share its mutex
    core->AppendReadableFds(&fds_scratch_);
  }
  if (cores_.size() > 1) {
    std::sort(fds_scratch_.begin(), fds_scratch_.end());
    fds_scratch_.erase(std::unique(fds_scratch_.begin(), fds_scratch_.end()), fds_scratch_.end());
  }
  if (fds_scratch_ == watched_fds_) return;
  if (waiter_->Watch(fds_scratch_).ok()) watched_fds_ = fds_scratch_;
}

int EngineHost::DispatchCalls(EndpointCore* caller) {
  if (!calls_pending_.load(std::memory_order_acquire)) return 0;
  calls_pending_.store(false, std::memory_order_relaxed);
  // One endpoint: it is the caller's, alive while the caller runs.
  if (core_count_.load(std::memory_order_relaxed) == 1) return caller->DispatchCalls();
  // Handlers of every endpoint that has some queued: the thread driving the
  // host serves all its endpoints. Each core is kept alive while it runs.
  // Per thread, reused: a server runs this for every request.
  thread_local std::vector<std::shared_ptr<EndpointCore>> ready;
  {
    HostLock lock(mu_);
    for (EndpointCore* core : cores_) {
      if (!core->has_calls_pending()) continue;
      // Null for one whose destructor waits for this lock to detach it.
      if (auto alive = core->weak_from_this().lock()) ready.push_back(std::move(alive));
    }
  }
  int ran = 0;
  for (auto& core : ready) ran += core->DispatchCalls();
  ready.clear();
  return ran;
}


bool EngineHost::HandlerRunningLocked() const {
  for (const EndpointCore* core : cores_) {
    if (core->handler_running()) return true;
  }
  return false;
}

void EngineHost::SetIdleLocked(bool idle) {
  if (said_idle_.load(std::memory_order_relaxed) == idle) return;
  said_idle_.store(idle, std::memory_order_relaxed);
  for (EndpointCore* core : cores_) {
    core->AssertLocked();  // ours: the cores on a host share its mutex
    core->SetIdle(idle);
  }
}

bool EngineHost::AwaitUntil(const std::function<bool()>& done, TimeNs deadline_ns,
                            EndpointCore* caller, bool dispatch, const std::atomic<bool>& closed) {
  while (true) {
    const DriverSeat::Look look = seat_.Observe();
    if (done()) return true;
    // The keeper (no dispatch) drives beside a driver stuck in a handler.
    if (!dispatch ? (seat_.Join(), true) : seat_.TryTake(dispatch)) {
      const bool finished = Drive(done, deadline_ns, caller, dispatch, closed);
      seat_.Leave();
      return finished;
    }
    // Another thread drives: run what handlers wait, else wait for it.
    if (dispatch && DispatchCalls(caller) > 0) continue;
    const TimeNs now = clock_.NowNs();
    if (now >= deadline_ns || closed.load()) return done();
    seat_.Wait(look, done, std::min(deadline_ns, now + 100 * kNsPerMs), dispatch, clock_);
  }
}

bool EngineHost::Drive(const std::function<bool()>& done, TimeNs deadline_ns, EndpointCore* caller,
                       bool dispatch, const std::atomic<bool>& closed) {
  auto turn = [&] {
    transport::PollResult r;
    r.next_deadline = kNever;
    if (!mu_.try_lock()) {
      // Taken: another thread is making progress for everybody.
      turns_lock_busy_.fetch_add(1, std::memory_order_relaxed);
    } else {
      HostLock lock(mu_, kAdoptLock);
      if (!closed) {
        if (!reports_idle_) {
          r = PollLocked();
        } else {
          // Busy while the poll runs (handlers run inside it): a thread
          // preempted in a long handler is not idle. After it the waiter
          // yields (or sleeps) until wharfd hands us more, unless handlers
          // wait to run below or run on another thread.
          SetIdleLocked(false);
          r = PollLocked();
          SetIdleLocked(!calls_pending_.load(std::memory_order_acquire) &&
                        !HandlerRunningLocked());
        }
      }
    }
    if (dispatch && DispatchCalls(caller) > 0) {
      r.work += 1;
      r.now = 0;  // handlers took their time: read the clock again
    }
    return r;
  };
  auto before_sleep = [&] {
    // The fds are kept current only while someone sleeps (see PollLocked);
    // from BeginSleep on every engine call keeps them so.
    if (!mu_.try_lock()) return;
    HostLock lock(mu_, kAdoptLock);
    WatchNewFds();
    // A managed engine raises its "wake me" flag now; one that finds work
    // arrived meanwhile must not sleep.
    bool sleep = true;
    for (EndpointCore* core : cores_) {
      core->AssertLocked();  // ours: the cores on a host share its mutex
      sleep = core->PrepareToSleep() && sleep;
    }
    if (!sleep) waiter_->WakeAlways();
  };
  const bool finished = waiter_->SpinThenBlock(done, turn, before_sleep,
                                               [&] { return closed.load(); }, deadline_ns,
                                               config_.spin_ns);
  // Back to the application's own work: no longer idle, whatever the last
  // turn found.
  if (said_idle_.load(std::memory_order_relaxed)) {
    HostLock lock(mu_);
    SetIdleLocked(false);
  }
  return finished;
}

}  // namespace wharf::internal
