// EndpointCore: opening an endpoint on its EngineHost, completions, handler
// dispatch and the keeper thread.
#include "client/endpoint_core.h"

#include <algorithm>
#include <string>

#include "client/daemon_link.h"
#include "client/managed_engine.h"
#include "client/metadata_codec.h"
#include "client/public_access.h"
#include "client/rpc_limits.h"
#include "client/stream_acceptor.h"
#include "engine/frame.h"
#include "engine/uri.h"
#include "wire/byte_order.h"

namespace wharf::internal {

thread_local const EndpointCore* EndpointCore::keeping_ = nullptr;
thread_local const EndpointCore* EndpointCore::in_handler_ = nullptr;

Result<std::shared_ptr<EndpointCore>> EndpointCore::Open(const EndpointOptions& options) {
  std::shared_ptr<EndpointCore> core(new EndpointCore());
  WHARF_ASSIGN_OR_RETURN(core->config_,
                         engine::LoadEngineConfig(options.config_file, options.settings));
  WHARF_ASSIGN_OR_RETURN(engine::Uri uri,
                         engine::ParseUri(options.address, core->config_.default_scheme));
  if (options.hosting != Hosting::kEmbedded) {
    const std::string socket = DaemonSocketPath(options.daemon_socket);
    if (options.hosting == Hosting::kManaged || DaemonSocketExists(socket)) {
      WHARF_RETURN_IF_ERROR(core->OpenManaged(options, uri));
      return core;
    }
  }
  // homa.max_message_bytes is the application's payload limit on every
  // transport; the transports also carry the engine's frame header.
  core->config_.limits.max_message_bytes = core->config_.homa.max_message_bytes;
  core->config_.homa.max_message_bytes = static_cast<uint32_t>(std::min<uint64_t>(
      uint64_t{core->config_.homa.max_message_bytes} + engine::kFrameBytes, UINT32_MAX));

  // On the socket another endpoint of this process has at that address, or
  // on a new one.
  WHARF_ASSIGN_OR_RETURN(core->host_,
                         EngineHost::OpenOrJoin(uri, core->config_, &core->own_transport_));
  HostLock lock(core->host_->mu());
  transport::MessageTransport* primary = core->own_transport_.get();
  // Transports for other schemes open on first use, under the engine's lock
  // (the engine asks from inside a call the host serialises).
  EndpointCore* raw = core.get();
  engine::TransportOpener opener =
      [raw](std::string_view scheme) -> Result<transport::MessageTransport*> {
    raw->AssertLocked();  // the engine calls it from inside a call, under the lock
    WHARF_ASSIGN_OR_RETURN(std::unique_ptr<transport::MessageTransport> opened,
                           raw->host_->OpenSecondary(scheme));
    raw->secondary_transports_.push_back(std::move(opened));
    return raw->secondary_transports_.back().get();
  };
  core->engine_ = std::make_unique<engine::Engine>(primary, std::move(opener), core->clock_,
                                                   core->config_.limits, raw);
  core->address_ = uri.scheme + "://" + primary->LocalAddress().ToString() +
                   (uri.endpoint_name.empty() ? "" : "/" + uri.endpoint_name);
  core->host_->Attach(raw);
  core->host_->AfterEngineCall(core->engine_->NextDeadline());
  return core;
}

Status EndpointCore::OpenManaged(const EndpointOptions& options, const engine::Uri& uri) {
  // The name, if any, was resolved here, on the application's thread:
  // wharfd takes numeric addresses only, as a lookup would block its loop.
  ManagedOptions managed{.socket_path = DaemonSocketPath(options.daemon_socket),
                         .address = engine::FormatUri(uri)};
  WHARF_ASSIGN_OR_RETURN(host_, EngineHost::Private(config_));
  HostLock lock(host_->mu());
  WHARF_ASSIGN_OR_RETURN(std::unique_ptr<ManagedEngine> engine,
                         ManagedEngine::Attach(managed, clock_, this));
  address_ = engine->address();
  engine_ = std::move(engine);
  managed_ = true;
  host_->Attach(this);
  host_->AfterEngineCall(engine_->NextDeadline());
  return OkStatus();
}

std::vector<std::pair<std::string, uint64_t>> EndpointCore::Counters() const {
  std::vector<std::pair<std::string, uint64_t>> all = engine_->Counters();
  // The host's waits (shared by the endpoints on its socket).
  all.emplace_back("endpoint.driver_turns_lock_busy", host_->turns_lock_busy());
  all.emplace_back("endpoint.waits_off_cpu", host_->seat().wakeups());
  return all;
}

EndpointCore::~EndpointCore() {
  Close();
  if (host_ == nullptr) return;  // Open failed before the host
  HostLock lock(host_->mu());
  host_->Detach(this);
  // The engine's last completions (Shutdown) reach this sink: gone first,
  // then the transport it borrowed, while the host's sockets still exist.
  engine_.reset();
  secondary_transports_.clear();
  own_transport_.reset();
}

void EndpointCore::Close() {
  if (host_ == nullptr) return;  // Open failed before the host
  {
    HostLock lock(host_->mu());
    if (closed_.exchange(true)) return;
    if (engine_ == nullptr) return;  // Open failed part-way
    engine_->Shutdown(CancelledError("endpoint " + address_ + " closed"));
    RunCallbacks();
    shutdown_ = true;
    host_->waiter().WakeSleepers();
    host_->NoteCompletion();  // threads waiting on another's drive look again
  }
  StopKeeper();
}

int EndpointCore::fd() const {
  HostLock lock(host_->mu());
  // The application sleeps in its own epoll from now on, without telling
  // the engine first: a managed engine must have wharfd ring every time.
  engine_->KeepAwake();
  return host_->ExposeFd();
}

Result<engine::Uri> EndpointCore::Resolve(std::string_view address) {
  HostLock lock(host_->mu());
  WHARF_ASSIGN_OR_RETURN(const engine::Uri* uri, ResolveLocked(address));
  return *uri;
}

Result<const engine::Uri*> EndpointCore::ResolveLocked(std::string_view address) {
  constexpr size_t kMaxRemembered = 1024;
  auto it = resolved_.find(address);
  if (it != resolved_.end()) return &it->second;
  WHARF_ASSIGN_OR_RETURN(engine::Uri uri, engine::ParseUri(address, config_.default_scheme));
  if (resolved_.size() >= kMaxRemembered) resolved_.clear();
  return &resolved_.emplace(std::string(address), std::move(uri)).first->second;
}

TimeNs EndpointCore::DeadlineAfter(std::chrono::nanoseconds timeout) const {
  if (timeout == std::chrono::nanoseconds::max()) return kNever;
  TimeNs now = clock_.NowNs();
  if (timeout.count() > kNever - now) return kNever;
  return now + timeout.count();
}

int EndpointCore::PollOnce() {
  if (InCallback()) return 0;  // a callback inside a poll pass, or a handler
  HostLock lock(host_->mu());
  if (closed_) return 0;
  host_->waiter().ClearReadable();  // fd() is level-triggered
  int work = host_->PollLocked().work;
  lock.unlock();
  return work + host_->DispatchCalls(this);
}

void EndpointCore::AppendReadableFds(std::vector<int>* fds) const {
  engine_->AppendReadableFds(fds);
}

transport::PollResult EndpointCore::PollEngineLocked() {
  transport::PollResult r = engine_->Poll();
  RunCallbacks();
  return r;
}

void EndpointCore::AfterEngineCall() {
  RunCallbacks();
  host_->AfterEngineCall(engine_->NextDeadline());
}

void EndpointCore::RunCallbacks() {
  if (callbacks_.empty()) return;
  // Callbacks that each issue the next operation send them together.
  struct Batch {
    engine::EngineApi& engine;
    explicit Batch(engine::EngineApi& e) : engine(e) { engine.BeginBatch(); }
    ~Batch() { engine.EndBatch(); }
  } batch_sends(*engine_);
  while (!callbacks_.empty()) {
    auto batch = std::move(callbacks_);
    callbacks_.clear();
    for (auto& [callback, state] : batch) callback(state->status);
  }
}

void EndpointCore::CancelOp(uint64_t op_id) {
  WithEngine([op_id](engine::EngineApi& e) { e.Cancel(op_id); });
}

bool EndpointCore::AwaitUntil(const std::function<bool()>& done, TimeNs deadline_ns) {
  // Inside a handler or callback only that same thread could make the
  // progress we would wait for.
  if (InCallback()) return done();
  return host_->AwaitUntil(done, deadline_ns, this, /*dispatch=*/keeping_ != this, closed_);
}

Status EndpointCore::Await(CompletionState& state, TimeNs deadline_ns) {
  if (InCallback() && !state.done.load(std::memory_order_acquire)) {
    return FailedPreconditionError(
        "blocking wait inside a handler or callback of the same endpoint would deadlock");
  }
  bool finished =
      AwaitUntil([&state] { return state.done.load(std::memory_order_acquire); }, deadline_ns);
  if (!finished) return DeadlineExceededError("wait timed out");
  MutexLock lock(state.mu);
  return state.status;
}

Status EndpointCore::RunUntil(TimeNs deadline_ns) {
  AwaitUntil([this] { return shutdown_.load(); }, deadline_ns);
  // A Shutdown ends this Run only; a later Run drives the endpoint again.
  if (!closed_) shutdown_ = false;
  return closed_ ? CancelledError("endpoint " + address_ + " closed") : OkStatus();
}

int EndpointCore::WaitForAny(TimeNs deadline_ns) {
  AwaitUntil([this] { return completed_ops_.load() != waited_ops_ || shutdown_.load(); },
             deadline_ns);
  if (!closed_) shutdown_ = false;
  const uint64_t now_completed = completed_ops_.load();
  const auto completed = static_cast<int>(std::min<uint64_t>(now_completed - waited_ops_, 1 << 30));
  waited_ops_ = now_completed;
  return completed;
}

void EndpointCore::Shutdown() {
  shutdown_ = true;
  // The runner may be asleep in epoll, or waiting on another thread's
  // drive: wake it regardless of the counter.
  host_->WakeWaiters();
}

// ------------------------------------------------------ operations (sink)

std::pair<uint64_t, EndpointCore::StatePtr> EndpointCore::NewOp() {
  uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<uint32_t>(op_slots_.size());
    op_slots_.emplace_back();
    op_generations_.push_back(1);  // ids are never 0 (the engine's "none")
  }
  auto state = std::make_shared<CompletionState>();
  const uint64_t op_id = (uint64_t{op_generations_[slot]} << 32) | slot;
  state->op_id = op_id;
  state->driver = weak_from_this();
  op_slots_[slot] = state;
  return {op_id, std::move(state)};
}

EndpointCore::StatePtr EndpointCore::Failed(Status status) {
  auto state = std::make_shared<CompletionState>();
  state->driver = weak_from_this();
  (void)state->Complete(std::move(status));  // new: no callback attached yet
  completed_ops_.fetch_add(1, std::memory_order_release);  // WaitForAny returns at once
  host_->NoteCompletion();
  return state;
}

void EndpointCore::OnComplete(uint64_t op_id, Status status, Buffer message, uint64_t value) {
  const uint32_t slot = static_cast<uint32_t>(op_id);
  const uint32_t generation = static_cast<uint32_t>(op_id >> 32);
  if (slot >= op_slots_.size() || op_generations_[slot] != generation || !op_slots_[slot]) return;
  StatePtr state = std::move(op_slots_[slot]);
  // The generation keeps ids unique (and below 2^63, which the engine keeps
  // for its own operations) so a late Cancel never hits the slot's next op.
  op_generations_[slot] = std::max<uint32_t>((generation + 1) & 0x7FFFFFFFu, 1);
  free_slots_.push_back(slot);
  auto callback = state->Complete(std::move(status), std::move(message), value);
  if (callback) callbacks_.emplace_back(std::move(callback), std::move(state));
  completed_ops_.fetch_add(1, std::memory_order_release);
  host_->waiter().WakeSleepers();
  host_->NoteCompletion();
}

// ----------------------------------------------------------------- serving

Status EndpointCore::SetHandler(uint32_t method, RpcHandler sync, AsyncRpcHandler async) {
  HostLock lock(host_->mu());
  if (closed_) return CancelledError("endpoint " + address_ + " closed");
  auto handler = std::make_unique<Handler>();
  handler->sync = std::move(sync);
  handler->async = std::move(async);
  handlers_[method] = handler.get();
  handler_storage_.push_back(std::move(handler));
  engine_->SetServed(method, true);
  engine_->SetServed(engine::kCallWithMetadataMethod, true);  // OnRequest unwraps those
  StartKeeper();
  return OkStatus();
}

std::shared_ptr<StreamAcceptor> EndpointCore::stream_acceptor() {
  HostLock lock(host_->mu());
  if (stream_acceptor_ == nullptr) {
    stream_acceptor_ = std::make_shared<StreamAcceptor>(weak_from_this());
  }
  return stream_acceptor_;
}

Status EndpointCore::SyncEngine() {
  if (!managed_) return OkStatus();  // in process, it took effect already
  StatePtr state = Start([](engine::EngineApi& e, uint64_t op) { e.Sync(op); });
  return Await(*state, DeadlineAfter(std::chrono::seconds(5)));
}

Status EndpointCore::UnwrapMetadata(engine::IncomingCall& call, Metadata* metadata) {
  const Buffer& r = call.request;
  if (r.size() < 4) return InvalidArgumentError("a call with metadata names no method");
  const uint32_t method = wire::LoadU32(r.data());
  if (method >= kFirstReservedMethod) {
    return InvalidArgumentError("a call with metadata names reserved method " +
                                std::to_string(method));
  }
  Result<size_t> used =
      DecodeMetadata(std::span<const std::byte>(r.data() + 4, r.size() - 4), metadata);
  if (!used.ok()) return used.status().WithContext("method " + std::to_string(method));
  call.request.RemovePrefix(4 + *used);
  call.method = method;
  return OkStatus();
}

void EndpointCore::OnRequest(engine::IncomingCall call) {
  // Empty, and allocation-free, unless the call carries some.
  Metadata metadata;
  if (call.method == engine::kCallWithMetadataMethod) {
    if (Status unwrapped = UnwrapMetadata(call, &metadata); !unwrapped.ok()) {
      engine_->Respond(call.ref, std::move(unwrapped));
      return;
    }
    if (!handlers_.contains(call.method)) {
      // What the engine answers for a method nobody serves.
      engine_->Respond(call.ref, UnimplementedError("method " + std::to_string(call.method) +
                                                    " is not served here"));
      return;
    }
  }
  if (Status within = RequestWithinLimit(config_.rpc, call.request.size()); !within.ok()) {
    engine_->Respond(call.ref, std::move(within));  // the handler never sees it
    return;
  }
  auto it = handlers_.find(call.method);
  Handler* handler = it == handlers_.end() ? nullptr : it->second;
  // The common case runs the handler right here, inside the poll that
  // received the request, as fast as a handler called by the engine itself:
  // a synchronous handler, nothing queued before it (order), the thread
  // holding the lock once (it can release it) and no other endpoint on the
  // host (whose poll pass could be under way on this stack), and no other
  // thread running handlers.
  if (handler != nullptr && handler->sync && pending_n_ == 0 && keeping_ != this &&
      in_handler_ != this && host_->core_count() == 1 && host_->mu().depth() == 1 &&
      dispatch_mu_.try_lock()) {
    RunSyncInline(*handler, call, metadata.empty() ? nullptr : &metadata);
    dispatch_mu_.unlock();
    // Another thread may have queued requests meanwhile and, finding the
    // dispatch lock taken, left them to us: flag them for the next turn.
    if (calls_pending_.load(std::memory_order_acquire)) host_->NoteCallsPending();
    return;
  }
  if (pending_n_ == pending_calls_.size()) pending_calls_.emplace_back();
  PendingCall& pending = pending_calls_[pending_n_++];
  pending.ref = call.ref;
  pending.method = call.method;
  pending.deadline_ns = call.deadline_ns;
  pending.request = std::move(call.request);
  pending.peer.assign(call.peer);
  pending.metadata = std::move(metadata);
  pending.handler = handler;
  calls_pending_.store(true, std::memory_order_release);
  host_->NoteCallsPending();
}

void EndpointCore::OnCallCancelled(const engine::ServerCallRef& ref) {
  auto it = responders_.find(ref);
  if (it == responders_.end()) return;
  if (auto state = it->second.lock()) state->cancelled.store(true);
}

int EndpointCore::DispatchCalls() {
  // The keeper only keeps the protocol going; a handler that polls runs no
  // other handler inside itself (handlers run one at a time).
  if (keeping_ == this || in_handler_ == this || host_->InPoll()) return 0;
  int ran = 0;
  while (calls_pending_.load(std::memory_order_acquire)) {
    // Another thread is running handlers; it looks again after its batch.
    if (!dispatch_mu_.try_lock()) return ran;
    MutexLock dispatching(dispatch_mu_, kAdoptLock);
    size_t n;
    {
      HostLock lock(host_->mu());
      std::swap(pending_calls_, running_calls_);
      n = pending_n_;
      pending_n_ = 0;
      calls_pending_.store(false, std::memory_order_relaxed);
    }
    for (size_t i = 0; i < n; ++i) RunCall(running_calls_[i]);
    ran += static_cast<int>(n);
  }
  return ran;
}

void EndpointCore::RunCall(PendingCall& call) {
  // Odd while the handler runs; a parked keeper must start watching again.
  handler_seq_.fetch_add(1);
  if (keeper_parked_.load()) WakeKeeper();
  RpcContext context;
  context.peer = call.peer;
  context.method = call.method;
  if (!call.metadata.empty()) context.metadata = &call.metadata;
  if (call.deadline_ns != kNever) {
    // The engine's clock here is CLOCK_MONOTONIC, which steady_clock reads.
    context.deadline =
        std::chrono::steady_clock::time_point(std::chrono::nanoseconds(call.deadline_ns));
  }
  in_handler_ = this;
  Status status;
  Buffer response;
  bool answered_here = true;
  try {
    if (call.handler == nullptr) {
      status = UnimplementedError("no handler for method " + std::to_string(call.method));
    } else if (call.handler->sync) {
      Result<Buffer> result = call.handler->sync(context, std::move(call.request));
      if (result.ok()) {
        response = std::move(result).value();
      } else {
        status = result.status();
      }
    } else {
      auto state = std::make_shared<ResponderState>();
      state->core = weak_from_this();
      state->ref = call.ref;
      state->deadline_ns = call.deadline_ns;
      {
        HostLock lock(host_->mu());
        responders_[call.ref] = state;
      }
      answered_here = false;
      call.handler->async(context, std::move(call.request),
                          PublicAccess::MakeResponder(std::move(state)));
    }
  } catch (const std::exception& e) {
    status = InternalError(std::string("handler threw: ") + e.what());
  } catch (...) {
    status = InternalError("handler threw a non-standard exception");
  }
  in_handler_ = nullptr;
  // Only the thread holding dispatch_mu_ writes it; the start's increment
  // is the one the keeper's parking pairs with.
  handler_seq_.store(handler_seq_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  // An async handler that threw dropped its Responder, which answered.
  if (!answered_here) return;
  LimitResponse(status, response);
  WithEngine([&](engine::EngineApi& e) { e.Respond(call.ref, std::move(status), std::move(response)); });
}

void EndpointCore::RunSyncInline(Handler& handler, engine::IncomingCall& call,
                                 const Metadata* metadata) {
  // The peer string is the engine's, and another thread may poll while the
  // lock is released: keep a copy (its capacity is reused).
  inline_peer_.assign(call.peer);
  RpcContext context;
  context.peer = inline_peer_;
  context.method = call.method;
  context.metadata = metadata;
  if (call.deadline_ns != kNever) {
    context.deadline =
        std::chrono::steady_clock::time_point(std::chrono::nanoseconds(call.deadline_ns));
  }
  handler_seq_.fetch_add(1);  // odd: a handler runs (see KeeperLoop)
  if (keeper_parked_.load()) WakeKeeper();
  in_handler_ = this;
  Status status;
  Buffer response;
  // Released while the handler runs, so that the keeper (or any thread) can
  // drive the engine if it takes long; the engine holds nothing across this
  // sink call.
  host_->mu().unlock();
  try {
    Result<Buffer> result = handler.sync(context, std::move(call.request));
    if (result.ok()) {
      response = std::move(result).value();
    } else {
      status = result.status();
    }
  } catch (const std::exception& e) {
    status = InternalError(std::string("handler threw: ") + e.what());
  } catch (...) {
    status = InternalError("handler threw a non-standard exception");
  }
  host_->mu().lock();
  in_handler_ = nullptr;
  handler_seq_.store(handler_seq_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  LimitResponse(status, response);
  engine_->Respond(call.ref, std::move(status), std::move(response));
}

void EndpointCore::LimitResponse(Status& status, Buffer& response) const {
  if (!status.ok()) return;
  if (Status within = ResponseWithinLimit(config_.rpc, response.size()); !within.ok()) {
    status = std::move(within);
    response = Buffer();
  }
}

void EndpointCore::Respond(ResponderState& responder, Status status, Buffer payload) {
  LimitResponse(status, payload);
  WithEngine([&](engine::EngineApi& e) {
    AssertLocked();  // WithEngine's
    responders_.erase(responder.ref);
    e.Respond(responder.ref, std::move(status), std::move(payload));
  });
}

// ------------------------------------------------------------------ keeper

void EndpointCore::StartKeeper() {
  if (keeper_.joinable()) return;
  keeper_ = std::thread([this] { KeeperLoop(); });
}

void EndpointCore::WakeKeeper() {
  MutexLock lock(keeper_mu_);
  keeper_parked_.store(false);
  keeper_cv_.NotifyOne();
}

void EndpointCore::StopKeeper() {
  {
    MutexLock lock(keeper_mu_);
    keeper_stop_ = true;
    keeper_parked_.store(false);
  }
  keeper_cv_.NotifyOne();
  if (keeper_.joinable()) keeper_.join();
}

void EndpointCore::KeeperLoop() {
  keeping_ = this;
  // Checks with no handler running before the keeper parks.
  constexpr int kIdleChecksBeforeParking = 5;
  const auto period = std::chrono::nanoseconds(config_.keeper_after_ns);
  uint64_t last_seen = handler_seq_.load();
  int idle_checks = 0;
  MutexLock lock(keeper_mu_);
  while (!keeper_stop_) {
    if (idle_checks >= kIdleChecksBeforeParking) {
      keeper_parked_.store(true);
      // Dekker with RunCall: it bumps the sequence, then reads the flag.
      if (handler_seq_.load() == last_seen) {
        while (!keeper_stop_ && keeper_parked_.load()) keeper_cv_.Wait(keeper_mu_);
      }
      keeper_parked_.store(false);
      idle_checks = 0;
      last_seen = handler_seq_.load();
      continue;
    }
    const auto look_at = CondVar::Clock::now() + period;
    while (!keeper_stop_ && keeper_cv_.WaitUntil(keeper_mu_, look_at)) {
    }
    if (keeper_stop_) break;
    const uint64_t seq = handler_seq_.load();
    if (seq != last_seen || (seq & 1) == 0) {
      idle_checks = (seq == last_seen) ? idle_checks + 1 : 0;
      last_seen = seq;
      continue;
    }
    // The same handler has been running for at least a period: drive the
    // engine until it returns (or the endpoint closes).
    lock.unlock();
    AwaitUntil([&] { return handler_seq_.load() != seq || closed_.load(); }, kNever);
    // Requests that came in meanwhile wait for a thread that runs handlers;
    // make sure one looks (a sleeping Run(), an application's epoll on fd()).
    if (calls_pending_.load()) host_->waiter().WakeAlways();
    lock.lock();
    last_seen = handler_seq_.load();
    idle_checks = 0;
  }
}

bool EndpointCore::InCallback() const { return host_->InPoll() || in_handler_ == this; }

}  // namespace wharf::internal
