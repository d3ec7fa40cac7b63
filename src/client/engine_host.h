// client/engine_host.h: EngineHost, what the endpoints of one engine share in
// embedded mode: one lock, the transports and their sockets (TransportSet),
// the Waiter threads sleep in, and the endpoints themselves, which every poll
// pass serves together. Endpoints a process opens on the same
// scheme://host:port share one EngineHost, and so one socket, one pacer and
// one SRPT scheduler; on the wire they are told apart by name
// (homa://host:4000/kv; a plain homa://host:4000 is the default endpoint).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "client/driver_seat.h"
#include "engine/engine_config.h"
#include "engine/transport_set.h"
#include "engine/uri.h"
#include "engine/waiter.h"
#include "transport/message_transport.h"

namespace wharf::internal {

class EndpointCore;

// The lock of an engine host: recursive (completion callbacks run under it
// and may call the endpoint again) and counting how deep its owner holds it,
// so that a handler may run with it released when the owner holds it once.
// The depth is written only by the owner while it holds the lock; only the
// owner reads it. A capability for clang's thread-safety analysis (held with
// MutexLockOf<HostMutex>, base/mutex.h), and a Lockable. The analysis does
// not know it is recursive: code that takes it again while holding it does
// so through calls it cannot follow (callbacks, handlers), never in one
// function.
class ABSL_LOCKABLE HostMutex {
 public:
  void lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    mu_.lock();
    ++depth_;
  }
  bool try_lock() ABSL_EXCLUSIVE_TRYLOCK_FUNCTION(true) {
    if (!mu_.try_lock()) return false;
    ++depth_;
    return true;
  }
  void unlock() ABSL_UNLOCK_FUNCTION() {
    --depth_;
    mu_.unlock();
  }
  // How many times the calling thread holds the lock.
  int depth() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(this) { return depth_; }
  // Tells the analysis that the calling thread holds the lock, where it
  // cannot follow: code the engine calls back under it (the sink, the
  // transport opener), the functions WithEngine runs. Not checked at run
  // time.
  void AssertHeld() const ABSL_ASSERT_EXCLUSIVE_LOCK() {}

 private:
  std::recursive_mutex mu_;
  // Unguarded for the analysis: written inside lock()/unlock() themselves
  // (by the owner); read through depth(), which requires the lock.
  int depth_ = 0;
};
using HostLock = MutexLockOf<HostMutex>;

// Shared (hence shared_ptr) by the EndpointCores on it; a process-wide
// registry finds it by its bound address while any of them lives. Thread-
// safe through mu().
class EngineHost final : public std::enable_shared_from_this<EngineHost> {
 public:
  // Opens the endpoint `uri` names (its scheme, address and endpoint id) on
  // the host this process has at that address, or on a new host opened there
  // with `config` (a host's socket-level settings are those of the endpoint
  // that opened it). The caller owns `*endpoint` and destroys it, under
  // mu(), before it lets go of the host.
  static Result<std::shared_ptr<EngineHost>> OpenOrJoin(
      const engine::Uri& uri, const engine::EngineConfig& config,
      std::unique_ptr<transport::MessageTransport>* endpoint);
  // A host of its own for one managed endpoint: the lock and the waiter,
  // no sockets (wharfd has them) and not in the registry. Its wait loops tell
  // the engine when they spin idle (EngineApi::SetIdle).
  static Result<std::shared_ptr<EngineHost>> Private(const engine::EngineConfig& config);
  ~EngineHost();
  EngineHost(const EngineHost&) = delete;
  EngineHost& operator=(const EngineHost&) = delete;

  HostMutex& mu() const ABSL_LOCK_RETURNED(mu_) { return mu_; }
  // How many endpoints the host serves (read without the lock).
  size_t core_count() const { return core_count_.load(std::memory_order_relaxed); }
  engine::Waiter& waiter() { return *waiter_; }
  // A transport for `scheme` on the host's address, any port (under mu()):
  // an endpoint's own, for peers of another scheme. The caller owns it, as
  // its endpoint transport.
  Result<std::unique_ptr<transport::MessageTransport>> OpenSecondary(std::string_view scheme)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Endpoints served by each pass (under mu()).
  void Attach(EndpointCore* core) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Detach(EndpointCore* core) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // One pass over every endpoint's engine (mu() held): their polls and
  // completion callbacks; the timer and fds follow. Merged result.
  transport::PollResult PollLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // After any other engine call (mu() held): the timer for the earliest
  // deadline, and fds a transport opened meanwhile.
  void AfterEngineCall(TimeNs next_deadline_ns) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs the handlers every endpoint has queued (mu() not held), on behalf
  // of `caller`, an endpoint of this host its thread keeps alive. Returns
  // how many ran.
  int DispatchCalls(EndpointCore* caller) ABSL_LOCKS_EXCLUDED(mu_);
  // Waits until `done()` holds or `deadline_ns` passes; false on timeout.
  // The first waiting thread drives every endpoint (spins for endpoint.spin
  // after the last progress, then sleeps in the waiter); the others wait off
  // the CPU until it completed something, handlers wait, or it leaves
  // (DriverSeat). `dispatch`: run handlers too. A keeper thread (dispatch
  // false) drives whoever has the seat: the driver runs a long handler.
  bool AwaitUntil(const std::function<bool()>& done, TimeNs deadline_ns, EndpointCore* caller,
                  bool dispatch, const std::atomic<bool>& closed) ABSL_LOCKS_EXCLUDED(mu_);
  // An operation of an endpoint here completed: threads waiting on the
  // driver look again.
  void NoteCompletion() { seat_.NoteCompletion(); }
  // Wakes every waiting thread (shutdown, close).
  void WakeWaiters() {
    seat_.WakeAll();
    waiter_->WakeAlways();
  }
  const DriverSeat& seat() const { return seat_; }
  // Turns of a driving thread that found the engine's lock taken by another
  // thread and did nothing (a thread calling into the engine; before the
  // DriverSeat, mostly another thread spinning beside it).
  uint64_t turns_lock_busy() const { return turns_lock_busy_.load(std::memory_order_relaxed); }
  // The waiter's epoll fd for an application's own loop (mu() held).
  int ExposeFd() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const int fd = waiter_->Expose();
    WatchNewFds();
    return fd;
  }
  // True on the thread inside this host's poll pass (running callbacks).
  bool InPoll() const { return polling_ == this; }
  // An endpoint queued a request for its handlers (its sink, under mu()).
  void NoteCallsPending() {
    calls_pending_.store(true, std::memory_order_release);
    seat_.NoteCallsPending();
  }

 private:
  EngineHost(const engine::EngineConfig& config) : config_(config) {}
  // AwaitUntil for the thread in the driver's seat.
  bool Drive(const std::function<bool()>& done, TimeNs deadline_ns, EndpointCore* caller,
             bool dispatch, const std::atomic<bool>& closed) ABSL_LOCKS_EXCLUDED(mu_);
  void WatchNewFds() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Tells every endpoint's engine whether its driver spins idle (mu() held),
  // when that changed. Only hosts with reports_idle_ call it.
  void SetIdleLocked(bool idle) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Some endpoint's handler runs now, on any thread (mu() held): the
  // application is busy even if the thread driving the engine waits (a
  // keeper drives it while a long handler runs).
  bool HandlerRunningLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Clock& clock_ = SystemClock::Get();
  const engine::EngineConfig config_;
  // Mutable: mu() is const, so that a const EndpointCore can name it in its
  // annotations.
  mutable HostMutex mu_;
  // Unguarded: set when the host is made, before it is shared; the Waiter
  // is thread-safe.
  std::unique_ptr<engine::Waiter> waiter_;
  // The pointer is set when the host is made; the set itself is used under mu_.
  std::unique_ptr<engine::TransportSet> transports_ ABSL_PT_GUARDED_BY(mu_);
  transport::NetAddress secondary_bind_ ABSL_GUARDED_BY(mu_);
  // Unguarded: set before the host is shared, read by its destructor.
  std::string registry_key_;  // "homa://0.0.0.0:4000"
  // The endpoints, in the order they attached. Raw: each detaches in its
  // destructor, under mu_.
  std::vector<EndpointCore*> cores_ ABSL_GUARDED_BY(mu_);
  std::atomic<size_t> core_count_{0};  // cores_.size(), read without mu_
  // The endpoints' fds as of this pass (scratch) and as the waiter watches
  // them: a transport opens new ones (a hot-peer socket), an endpoint that
  // closes takes its own away.
  std::vector<int> fds_scratch_ ABSL_GUARDED_BY(mu_);
  std::vector<int> watched_fds_ ABSL_GUARDED_BY(mu_);
  // Set when some endpoint has handlers to run: the lock-free check every
  // waiting turn makes before looking.
  std::atomic<bool> calls_pending_{false};
  // Whether the engines were last told their driver spins idle (SetIdle;
  // written under mu_, read without it by a wait on its way out).
  std::atomic<bool> said_idle_{false};
  // A private host's (managed) engine has someone to tell (wharfd); an
  // embedded host's turns skip the bookkeeping. Unguarded: set once, at
  // creation, before the host is shared.
  bool reports_idle_ = false;
  static thread_local const EngineHost* polling_;
  // Which thread drives (AwaitUntil).
  DriverSeat seat_;
  std::atomic<uint64_t> turns_lock_busy_{0};
};

}  // namespace wharf::internal
