// client/endpoint_core.h: EndpointCore, one embedded endpoint: its engine,
// on the transports of the EngineHost it shares with the process's other
// endpoints on the same address (the lock, the sockets, the waiter: see
// engine_host.h). It serialises calls into its engine with the host's
// mutex, and implements waiting through the host (spin for endpoint.spin,
// then sleep in epoll). It is the engine's sink: operation ids map to the CompletionStates behind public Completions,
// and requests for served methods run their handlers outside the lock (one
// at a time), while a keeper thread drives the engine if a handler takes
// long, so peers never take a busy server for a dead one. The public
// Endpoint, Connection, Completion, Responder and Group call it.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "client/completion_state.h"
#include "client/engine_host.h"
#include "client/responder_state.h"
#include "engine/engine.h"
#include "engine/engine_config.h"
#include "engine/engine_sink.h"
#include "engine/uri.h"
#include "transport/message_transport.h"
#include "wharf/endpoint.h"

namespace wharf::internal {

class StreamAcceptor;

// Shared by the Endpoint and everything that may outlive it (Connections,
// Completions hold it weakly). Thread-safe.
class EndpointCore final : public ProgressDriver,
                           public engine::EngineSink,
                           public std::enable_shared_from_this<EndpointCore> {
 public:
  using StatePtr = std::shared_ptr<CompletionState>;

  static Result<std::shared_ptr<EndpointCore>> Open(const EndpointOptions& options);
  ~EndpointCore() override;

  // Runs `fn(engine)` under the lock, then any completion callbacks it
  // caused. The engine outlives Close(); its operations then fail fast.
  // The analysis does not follow into `fn`: one that touches what the lock
  // guards starts with AssertLocked(). (No ABSL_LOCKS_EXCLUDED: the lock is
  // recursive, and callbacks under it call the endpoint again.)
  template <typename Fn>
  auto WithEngine(Fn&& fn) -> decltype(fn(std::declval<engine::EngineApi&>())) {
    HostLock lock(host_->mu());
    struct RunAfter {
      EndpointCore& core;
      // Runs before `lock` is released (declared after it). A destructor,
      // which the analysis does not check.
      ~RunAfter() { core.AfterEngineCall(); }
    } run_after{*this};
    return fn(*engine_);
  }
  // Starts an operation: `fn(engine, op_id)` under the lock; the returned
  // state completes when the engine reports on op_id.
  template <typename Fn>
  StatePtr Start(Fn&& fn) {
    return WithEngine([&](engine::EngineApi& e) {
      AssertLocked();  // WithEngine's
      auto [op_id, state] = NewOp();
      fn(e, op_id);
      return state;
    });
  }
  // A state that is already complete with `status`.
  StatePtr Failed(Status status);

  // Handlers (Endpoint::Serve / ServeAsync).
  Status SetHandler(uint32_t method, RpcHandler sync, AsyncRpcHandler async);
  // Returns once what was asked of the engine so far has taken effect
  // (managed: wharfd executed it), so Listen and Serve are in force when
  // they return, as in process.
  Status SyncEngine();
  // Hands the streams peers open to their handlers (Endpoint::ServeStreams);
  // made on first use.
  std::shared_ptr<StreamAcceptor> stream_acceptor();
  // Answers a call an AsyncRpcHandler holds (Responder::Respond).
  void Respond(ResponderState& responder, Status status, Buffer payload);
  bool closed() const { return closed_.load(); }
  void Close();

  std::string address() const { return address_; }
  // The epoll fd applications watch. From the first call on, the transports'
  // fds stay in it (otherwise they are in it only while a thread sleeps).
  int fd() const;
  // The engine's counters, then its transports' (each with its socket's).
  // Call under WithEngine.
  std::vector<std::pair<std::string, uint64_t>> Counters() const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(host_->mu());
  // Tells clang's analysis that the calling thread holds the host's mutex
  // where it cannot follow: inside a function WithEngine or Start runs, and
  // in the host's passes over its endpoints (the host's mutex is theirs).
  // Not checked at run time.
  void AssertLocked() const ABSL_ASSERT_EXCLUSIVE_LOCK(host_->mu()) {}

  // Blocks until `state` completes or `timeout` passes; the state's status, or
  // kDeadlineExceeded for the wait itself.
  Status Await(CompletionState& state, TimeNs deadline_ns);
  // Drives until Shutdown() or the deadline.
  Status RunUntil(TimeNs deadline_ns);
  // Drives until an operation completed since the previous return, the
  // deadline or Shutdown(); returns how many completed.
  int WaitForAny(TimeNs deadline_ns);
  void Shutdown();

  // For the host's passes (its mutex held): this engine's poll and the
  // callbacks it completed; its next deadline; whether handlers wait.
  transport::PollResult PollEngineLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(host_->mu());
  TimeNs NextDeadline() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(host_->mu()) {
    return engine_->NextDeadline();
  }
  bool PrepareToSleep() ABSL_EXCLUSIVE_LOCKS_REQUIRED(host_->mu()) {
    return engine_->PrepareToSleep();
  }
  void SetIdle(bool idle) ABSL_EXCLUSIVE_LOCKS_REQUIRED(host_->mu()) { engine_->SetIdle(idle); }
  // A Buffer to send from: in the shared heap when managed. Any thread
  // (under the lock: a re-attach replaces the heap).
  Buffer AllocateBuffer(size_t size) {
    HostLock lock(host_->mu());
    return engine_->AllocateBuffer(size);
  }
  bool managed() const { return managed_; }
  void AppendReadableFds(std::vector<int>* fds) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(host_->mu());
  bool has_calls_pending() const { return calls_pending_.load(std::memory_order_acquire); }
  // A handler of ours runs now (on any thread).
  bool handler_running() const { return (handler_seq_.load(std::memory_order_acquire) & 1) != 0; }
  // Runs the handlers of requests queued so far, outside the host's mutex,
  // one at a time across threads. Returns how many ran. Not on the keeper
  // thread, nor inside a handler or a poll pass.
  int DispatchCalls() ABSL_LOCKS_EXCLUDED(dispatch_mu_);

  // engine::EngineSink (called under the host's mutex, from engine calls)
  void OnComplete(uint64_t op_id, Status status, Buffer message, uint64_t value) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(host_->mu());
  void OnRequest(engine::IncomingCall call) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(host_->mu());
  void OnCallCancelled(const engine::ServerCallRef& ref) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(host_->mu());

  // ProgressDriver
  int PollOnce() override;
  bool AwaitUntil(const std::function<bool()>& done, TimeNs deadline_ns) override;
  TimeNs NowNs() const override { return clock_.NowNs(); }
  bool InCallback() const override;
  void CancelOp(uint64_t op_id) override;

  // Parses (and for names, resolves) a wharf address, remembering recent
  // answers: calls name their peer by string, and parsing it on every call
  // would sit on the latency-critical path.
  Result<engine::Uri> Resolve(std::string_view address);
  // The same without the copy, for callers inside WithEngine (the host's mutex held):
  // valid until the next resolve.
  Result<const engine::Uri*> ResolveLocked(std::string_view address)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(host_->mu());

  // rpc.max_request_bytes and rpc.max_response_bytes (client/rpc_limits.h).
  const engine::EngineConfig::RpcLimits& rpc_limits() const { return config_.rpc; }

  // Deadline `timeout` from now, kNever for "forever".
  TimeNs DeadlineAfter(std::chrono::nanoseconds timeout) const;

 private:
  // A served method's handler: exactly one of the two is set.
  struct Handler {
    RpcHandler sync;
    AsyncRpcHandler async;
  };
  // A request waiting for its handler to run.
  struct PendingCall {
    engine::ServerCallRef ref;
    uint32_t method = 0;
    TimeNs deadline_ns = kNever;
    Buffer request;
    std::string peer;  // reused: assigning keeps its capacity
    Metadata metadata;  // CallOptions::metadata, unwrapped
    Handler* handler = nullptr;
  };

  EndpointCore() = default;
  // A fresh operation id and the state it completes.
  std::pair<uint64_t, StatePtr> NewOp() ABSL_EXCLUSIVE_LOCKS_REQUIRED(host_->mu());
  // After any call into the engine, under the host's mutex: completion
  // callbacks, the timer for the next deadline, new fds to watch.
  void AfterEngineCall() ABSL_EXCLUSIVE_LOCKS_REQUIRED(host_->mu());
  void RunCallbacks() ABSL_EXCLUSIVE_LOCKS_REQUIRED(host_->mu());
  // One handler, outside the host's mutex; one at a time (dispatch_mu_).
  void RunCall(PendingCall& call) ABSL_EXCLUSIVE_LOCKS_REQUIRED(dispatch_mu_);
  // Runs a synchronous handler from inside OnRequest with the host's lock
  // released (the thread holds it exactly once), then answers.
  void RunSyncInline(Handler& handler, engine::IncomingCall& call, const Metadata* metadata)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(host_->mu(), dispatch_mu_);
  // The keeper thread: while a handler has run for endpoint.keeper_after,
  // it drives the engine (without running handlers) until the handler ends.
  void KeeperLoop() ABSL_LOCKS_EXCLUDED(keeper_mu_);
  void StartKeeper() ABSL_EXCLUSIVE_LOCKS_REQUIRED(host_->mu());
  void WakeKeeper() ABSL_LOCKS_EXCLUDED(keeper_mu_);
  void StopKeeper() ABSL_LOCKS_EXCLUDED(keeper_mu_);

  // A call with metadata (engine::kCallWithMetadataMethod) becomes the
  // call it wraps: its method, its request; the metadata to `metadata`.
  static Status UnwrapMetadata(engine::IncomingCall& call, Metadata* metadata);
  // A response over rpc.max_response_bytes becomes kResourceExhausted.
  void LimitResponse(Status& status, Buffer& response) const;

  // Opens the engine in wharfd (managed mode) instead of in this process,
  // at `uri` (options.address, its name already resolved).
  Status OpenManaged(const EndpointOptions& options, const engine::Uri& uri);

  const Clock& clock_ = SystemClock::Get();
  // Unguarded, like host_ and own_transport_: set while Open runs, before
  // the core is shared, and only read after.
  engine::EngineConfig config_;
  bool managed_ = false;
  std::string address_;
  // Declared in this order so that each outlives what borrows it: the host
  // (lock, sockets, waiter) and this endpoint's own transport on a shared
  // socket outlive the engine.
  std::shared_ptr<EngineHost> host_;
  // This endpoint on its address's socket (the engine's transport 0, which
  // uses it under the host's mutex).
  std::unique_ptr<transport::MessageTransport> own_transport_;
  // Transports the engine opened on first use for peers of other schemes;
  // this endpoint's alone, so they go with it.
  std::vector<std::unique_ptr<transport::MessageTransport>> secondary_transports_
      ABSL_GUARDED_BY(host_->mu());
  // The pointer is set by Open and reset by the destructor; the engine is
  // used under the host's mutex.
  std::unique_ptr<engine::EngineApi> engine_ ABSL_PT_GUARDED_BY(host_->mu());
  // Resolve()'s memory, bounded. Looked up by string_view
  // (no allocation per call).
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>()(s);
    }
  };
  std::unordered_map<std::string, engine::Uri, StringHash, std::equal_to<>> resolved_
      ABSL_GUARDED_BY(host_->mu());
  std::atomic<bool> shutdown_{false};
  // Operations completed (OnComplete), and the count WaitForAny last
  // returned at.
  std::atomic<uint64_t> completed_ops_{0};
  // Unguarded: WaitForAny's own, which one thread at a time may call (its
  // contract in wharf/endpoint.h).
  uint64_t waited_ops_ = 0;
  std::atomic<bool> closed_{false};
  // Operation states by slot (op id = generation << 32 | slot).
  std::vector<StatePtr> op_slots_ ABSL_GUARDED_BY(host_->mu());
  std::vector<uint32_t> op_generations_ ABSL_GUARDED_BY(host_->mu());
  std::vector<uint32_t> free_slots_ ABSL_GUARDED_BY(host_->mu());
  // Completed operations whose callbacks have not run yet: they run after
  // the engine call that completed them returns (they may call it again).
  std::vector<std::pair<std::function<void(const Status&)>, StatePtr>> callbacks_
      ABSL_GUARDED_BY(host_->mu());

  std::shared_ptr<StreamAcceptor> stream_acceptor_ ABSL_GUARDED_BY(host_->mu());
  // Served methods. Replaced handlers are kept until the core dies: a
  // thread may be running one outside the lock (through the Handler*, which
  // the lock does not guard).
  std::unordered_map<uint32_t, Handler*> handlers_ ABSL_GUARDED_BY(host_->mu());
  std::vector<std::unique_ptr<Handler>> handler_storage_ ABSL_GUARDED_BY(host_->mu());
  // Requests for handlers: queued under the host's mutex (pending_calls_[0, pending_n_)),
  // run by whichever thread holds dispatch_mu_.
  std::vector<PendingCall> pending_calls_ ABSL_GUARDED_BY(host_->mu());
  size_t pending_n_ ABSL_GUARDED_BY(host_->mu()) = 0;
  std::atomic<bool> calls_pending_{false};
  Mutex dispatch_mu_;
  std::string inline_peer_ ABSL_GUARDED_BY(dispatch_mu_);  // RunSyncInline's copy of the peer
  std::vector<PendingCall> running_calls_ ABSL_GUARDED_BY(dispatch_mu_);
  // Async calls in service, for cancellation notices.
  std::unordered_map<engine::ServerCallRef, std::weak_ptr<ResponderState>,
                     engine::ServerCallRefHash>
      responders_ ABSL_GUARDED_BY(host_->mu());
  // Odd while a handler runs: +1 as each starts and as it returns. The
  // keeper samples it every keeper_after; the same odd value twice in a row
  // is a handler that has run that long. (No clock read per call.)
  std::atomic<uint64_t> handler_seq_{0};
  // Unguarded: started under the host's mutex by SetHandler while the core
  // is open, joined by Close after it marked the core closed under that
  // mutex, so never both at once; the destructor's Close is the last.
  std::thread keeper_;
  Mutex keeper_mu_;
  CondVar keeper_cv_;
  // The keeper parks (no periodic wake-ups) after a while with no handler;
  // the next handler to start wakes it. keeper_parked_ is written under
  // keeper_mu_ and read without it (an atomic: RunCall's look before it
  // takes the lock).
  std::atomic<bool> keeper_parked_{false};
  bool keeper_stop_ ABSL_GUARDED_BY(keeper_mu_) = false;

  // Set on the thread running a handler (and, through the host, inside a
  // poll pass), so a callback or handler that tries to block on this
  // endpoint fails instead of deadlocking.
  static thread_local const EndpointCore* keeping_;    // on the keeper thread
  static thread_local const EndpointCore* in_handler_;  // running a handler
};

}  // namespace wharf::internal
