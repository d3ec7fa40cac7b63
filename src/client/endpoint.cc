// Endpoint and Connection: the public API over an embedded EndpointCore.
#include "wharf/endpoint.h"

#include <cstring>

#include "client/endpoint_core.h"
#include "client/metadata_codec.h"
#include "client/public_access.h"
#include "client/rpc_limits.h"
#include "client/stream_acceptor.h"
#include "engine/frame.h"
#include "engine/uri.h"
#include "wire/byte_order.h"

namespace wharf {
namespace {

using internal::EndpointCore;
using internal::PublicAccess;
using StatePtr = EndpointCore::StatePtr;

Status Closed(const EndpointCore& core) {
  return CancelledError("endpoint " + core.address() + " closed");
}

// A request as it leaves: within rpc.max_request_bytes, and wrapped with
// its metadata if it has some (to engine::kCallWithMetadataMethod, copied
// once behind the method id and the metadata).
Status PrepareRequest(EndpointCore& core, const CallOptions& options, uint32_t* method,
                      Buffer* request) {
  WHARF_RETURN_IF_ERROR(internal::RequestWithinLimit(core.rpc_limits(), request->size()));
  if (options.metadata.empty()) return OkStatus();
  WHARF_RETURN_IF_ERROR(internal::CheckMetadata(options.metadata));
  const size_t header = 4 + internal::MetadataBytes(options.metadata);
  Buffer wrapped = core.AllocateBuffer(header + request->size());
  if (wrapped.size() != header + request->size()) {
    return ResourceExhaustedError("no room for a request with its metadata");
  }
  wire::StoreU32(wrapped.data(), *method);
  internal::EncodeMetadata(options.metadata, wrapped.data() + 4);
  if (!request->empty()) std::memcpy(wrapped.data() + header, request->data(), request->size());
  *method = engine::kCallWithMetadataMethod;
  *request = std::move(wrapped);
  return OkStatus();
}

// Blocks on `state` until done or `deadline`, then returns its status.
Status AwaitState(EndpointCore& core, const StatePtr& state, TimeNs deadline) {
  return core.Await(*state, deadline);
}

}  // namespace

Result<std::unique_ptr<Endpoint>> Endpoint::Open(const EndpointOptions& options) {
  WHARF_ASSIGN_OR_RETURN(std::shared_ptr<EndpointCore> core, EndpointCore::Open(options));
  return std::unique_ptr<Endpoint>(new Endpoint(std::move(core)));
}

Endpoint::~Endpoint() { core_->Close(); }

std::string Endpoint::address() const { return core_->address(); }

bool Endpoint::managed() const { return core_->managed(); }

Buffer Endpoint::AllocateBuffer(size_t size) { return core_->AllocateBuffer(size); }

Result<std::unique_ptr<Connection>> Endpoint::Connect(std::string_view address,
                                                      const ConnectOptions& options) {
  if (core_->closed()) return Closed(*core_);
  WHARF_ASSIGN_OR_RETURN(engine::Uri uri, core_->Resolve(address));
  TimeNs deadline = core_->DeadlineAfter(options.timeout);
  StatePtr state = core_->Start(
      [&](engine::EngineApi& e, uint64_t op) {
        e.Connect(op, uri, options.ordered, options.stream_method, deadline);
      });
  WHARF_RETURN_IF_ERROR(AwaitState(*core_, state, kNever).WithContext(
      "connect to " + std::string(address)));
  return std::unique_ptr<Connection>(new Connection(core_, state->value));
}

Status Endpoint::Listen() {
  if (core_->closed()) return Closed(*core_);
  core_->WithEngine([](engine::EngineApi& e) { e.Listen(); });
  return core_->SyncEngine();
}

Result<std::unique_ptr<Connection>> Endpoint::Accept(std::chrono::nanoseconds timeout) {
  if (core_->closed()) return Closed(*core_);
  TimeNs deadline = core_->DeadlineAfter(timeout);
  StatePtr state = core_->Start([&](engine::EngineApi& e, uint64_t op) { e.Accept(op, deadline); });
  WHARF_RETURN_IF_ERROR(AwaitState(*core_, state, kNever));
  return std::unique_ptr<Connection>(new Connection(core_, state->value));
}

Status Endpoint::ServeStreams(uint32_t method, StreamHandler handler) {
  if (core_->closed()) return Closed(*core_);
  return core_->stream_acceptor()->Serve(method, std::move(handler));
}

Completion Endpoint::ICall(std::string_view address, uint32_t method, Buffer request,
                           const CallOptions& options) {
  if (core_->closed()) return PublicAccess::MakeCompletion(core_->Failed(Closed(*core_)));
  if (Status ready = PrepareRequest(*core_, options, &method, &request); !ready.ok()) {
    return PublicAccess::MakeCompletion(core_->Failed(std::move(ready)));
  }
  TimeNs deadline = options.deadline.count() == 0 ? kNever : core_->DeadlineAfter(options.deadline);
  // One lock for resolving and calling: this is every RPC's path.
  return PublicAccess::MakeCompletion(core_->Start([&](engine::EngineApi& e, uint64_t op) {
    core_->AssertLocked();  // Start's
    Result<const engine::Uri*> uri = core_->ResolveLocked(address);
    if (!uri.ok()) {
      core_->OnComplete(op, uri.status(), Buffer(), 0);
      return;
    }
    e.Call(op, **uri, method, std::move(request), deadline);
  }));
}

Result<Buffer> Endpoint::Call(std::string_view address, uint32_t method, Buffer request,
                              const CallOptions& options) {
  Completion c = ICall(address, method, std::move(request), options);
  WHARF_RETURN_IF_ERROR(c.Wait());
  return c.TakeMessage();
}

Status Endpoint::Serve(uint32_t method, RpcHandler handler) {
  if (method >= kFirstReservedMethod) {
    return InvalidArgumentError("method " + std::to_string(method) +
                                " is reserved for wharf (ids from 0xFFFF0000)");
  }
  if (!handler) return InvalidArgumentError("empty handler");
  WHARF_RETURN_IF_ERROR(core_->SetHandler(method, std::move(handler), nullptr));
  return core_->SyncEngine();
}

Status Endpoint::ServeAsync(uint32_t method, AsyncRpcHandler handler) {
  if (method >= kFirstReservedMethod) {
    return InvalidArgumentError("method " + std::to_string(method) +
                                " is reserved for wharf (ids from 0xFFFF0000)");
  }
  if (!handler) return InvalidArgumentError("empty handler");
  WHARF_RETURN_IF_ERROR(core_->SetHandler(method, nullptr, std::move(handler)));
  return core_->SyncEngine();
}

void Endpoint::BeginBatch() {
  core_->WithEngine([](engine::EngineApi& e) { e.BeginBatch(); });
}

void Endpoint::EndBatch() {
  core_->WithEngine([](engine::EngineApi& e) { e.EndBatch(); });
}

int Endpoint::Poll() { return core_->PollOnce(); }

Status Endpoint::Run(std::chrono::nanoseconds timeout) {
  return core_->RunUntil(core_->DeadlineAfter(timeout));
}

int Endpoint::WaitForAny(std::chrono::nanoseconds timeout) {
  return core_->WaitForAny(core_->DeadlineAfter(timeout));
}

void Endpoint::Shutdown() { core_->Shutdown(); }

int Endpoint::fd() const { return core_->fd(); }

std::vector<std::pair<std::string, uint64_t>> Endpoint::Stats() const {
  return core_->WithEngine([&](engine::EngineApi&) {
    core_->AssertLocked();  // WithEngine's
    return core_->Counters();
  });
}

// ------------------------------------------------------------- Connection

Connection::~Connection() {
  if (core_->closed()) return;
  core_->WithEngine([&](engine::EngineApi& e) {
    Result<std::string> peer = e.PeerOf(id_);
    // Best effort; the peer learns it is gone. Nobody waits for the answer.
    if (peer.ok()) core_->Start([&](engine::EngineApi& en, uint64_t op) { en.Disconnect(op, id_); });
    e.Release(id_);
  });
}

std::string Connection::peer() const {
  return core_->WithEngine([&](engine::EngineApi& e) { return e.PeerOf(id_).value_or(""); });
}

Completion Connection::ISend(Buffer message) {
  return PublicAccess::MakeCompletion(core_->Start(
      [&](engine::EngineApi& e, uint64_t op) { e.Send(op, id_, std::move(message)); }));
}

Status Connection::Send(Buffer message) { return ISend(std::move(message)).Wait(); }

Completion Connection::IRecv() {
  return PublicAccess::MakeCompletion(
      core_->Start([&](engine::EngineApi& e, uint64_t op) { e.Recv(op, id_); }));
}

Result<Buffer> Connection::Recv(std::chrono::nanoseconds timeout) {
  Completion c = IRecv();
  Status s = c.Wait(timeout);
  if (s.code() == StatusCode::kDeadlineExceeded && !c.done()) {
    // Do not let a late message vanish into a dead handle: withdraw the
    // receive and wait for its outcome, which is at once in process and a
    // round trip through wharfd when managed (a message that arrived before
    // the cancel comes back with it).
    c.Cancel();
    (void)c.Wait();
    if (c.status().ok()) return c.TakeMessage();
    return s;
  }
  WHARF_RETURN_IF_ERROR(s);
  return c.TakeMessage();
}

Completion Connection::ICall(uint32_t method, Buffer request, const CallOptions& options) {
  if (Status ready = PrepareRequest(*core_, options, &method, &request); !ready.ok()) {
    return PublicAccess::MakeCompletion(core_->Failed(std::move(ready)));
  }
  TimeNs deadline = options.deadline.count() == 0 ? kNever : core_->DeadlineAfter(options.deadline);
  return PublicAccess::MakeCompletion(core_->Start([&](engine::EngineApi& e, uint64_t op) {
    e.CallOnConnection(op, id_, method, std::move(request), deadline);
  }));
}

Result<Buffer> Connection::Call(uint32_t method, Buffer request, const CallOptions& options) {
  Completion c = ICall(method, std::move(request), options);
  WHARF_RETURN_IF_ERROR(c.Wait());
  return c.TakeMessage();
}

Status Connection::Disconnect() {
  StatePtr state =
      core_->Start([&](engine::EngineApi& e, uint64_t op) { e.Disconnect(op, id_); });
  return PublicAccess::MakeCompletion(state).Wait();
}

}  // namespace wharf
