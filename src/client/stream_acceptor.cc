// StreamAcceptor: one AcceptStream in flight, each stream to its method's
// handler.
#include "client/stream_acceptor.h"

#include <string>
#include <utility>

#include "base/log.h"
#include "client/endpoint_core.h"
#include "client/public_access.h"

namespace wharf::internal {

Status StreamAcceptor::Serve(uint32_t method, StreamHandler handler) {
  if (method == 0) return InvalidArgumentError("stream method 0 means a plain connection");
  if (method >= kFirstReservedMethod) {
    return InvalidArgumentError("method " + std::to_string(method) + " is reserved for wharf");
  }
  if (!handler) return InvalidArgumentError("no stream handler");
  std::shared_ptr<EndpointCore> core = core_.lock();
  if (core == nullptr || core->closed()) return CancelledError("endpoint closed");
  bool arm = false;
  {
    MutexLock lock(mu_);
    handlers_[method] = std::make_shared<StreamHandler>(std::move(handler));
    arm = !armed_;
    armed_ = true;
  }
  core->WithEngine([&](engine::EngineApi& e) { e.ServeStreams(method, true); });
  if (arm) Arm(*core);
  return core->SyncEngine();
}

void StreamAcceptor::Arm(EndpointCore& core) {
  EndpointCore::StatePtr state =
      core.Start([](engine::EngineApi& e, uint64_t op) { e.AcceptStream(op, kNever); });
  Completion accept = PublicAccess::MakeCompletion(state);
  // The callback keeps this acceptor alive while the accept is in flight;
  // the core fails it when it closes, which ends the chain.
  accept.OnComplete([self = shared_from_this(), state](const Status& status) {
    self->OnAccepted(status, state->value);
  });
}

void StreamAcceptor::OnAccepted(const Status& status, uint64_t conn) {
  std::shared_ptr<EndpointCore> core = core_.lock();
  if (!status.ok() || core == nullptr || core->closed()) {
    if (core != nullptr && !core->closed() && status.code() != StatusCode::kCancelled) {
      WHARF_LOG(kWarn, "wharf: endpoint {} stopped accepting streams: {}", core->address(),
                status.ToString());
    }
    MutexLock lock(mu_);
    armed_ = false;
    return;
  }
  const uint32_t method =
      core->WithEngine([&](engine::EngineApi& e) { return e.StreamMethodOf(conn).value_or(0); });
  std::unique_ptr<Connection> stream = PublicAccess::MakeConnection(core, conn);
  std::shared_ptr<StreamHandler> handler;
  {
    MutexLock lock(mu_);
    auto it = handlers_.find(method);
    if (it != handlers_.end()) {
      handler = it->second;
      ++handed_;
    } else {
      ++unserved_;
    }
  }
  // Next one first: a handler may take its time.
  Arm(*core);
  if (handler != nullptr) {
    (*handler)(std::move(stream));
  } else {
    // Opened while the method was served, and no handler now: close it,
    // which the peer sees as kUnavailable.
    stream->Disconnect().IgnoreError();
  }
}

uint64_t StreamAcceptor::handed() const {
  MutexLock lock(mu_);
  return handed_;
}

uint64_t StreamAcceptor::unserved() const {
  MutexLock lock(mu_);
  return unserved_;
}

}  // namespace wharf::internal
