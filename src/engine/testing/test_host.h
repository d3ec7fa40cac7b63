// engine/testing/test_host.h: TestHost, the smallest host of an Engine, for
// component tests: each operation returns a TestOp that fills in when the
// engine reports on it; served methods run synchronous handlers right after
// each Poll, or (SetDeferred) wait for the test to answer them.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "engine/engine.h"
#include "wharf/endpoint.h"

namespace wharf::engine::testing {

struct TestOp {
  std::atomic<bool> done{false};
  Status status;
  Buffer message;
  uint64_t value = 0;
  uint64_t op_id = 0;
};
using OpPtr = std::shared_ptr<TestOp>;

// Owned by the test; single-threaded like the engine it owns.
class TestHost final : public EngineSink {
 public:
  TestHost(transport::MessageTransport* primary, TransportOpener opener, const Clock& clock,
           EngineLimits limits = EngineLimits{})
      : engine_(std::make_unique<Engine>(primary, std::move(opener), clock, limits, this)) {}
  ~TestHost() override { engine_.reset(); }

  Engine& engine() { return *engine_; }

  OpPtr Connect(const Uri& uri, bool ordered, TimeNs deadline_ns, uint32_t stream_method = 0) {
    return Start(
        [&](uint64_t op) { engine_->Connect(op, uri, ordered, stream_method, deadline_ns); });
  }
  void Listen() { engine_->Listen(); }
  OpPtr Accept(TimeNs deadline_ns) {
    return Start([&](uint64_t op) { engine_->Accept(op, deadline_ns); });
  }
  OpPtr AcceptStream(TimeNs deadline_ns) {
    return Start([&](uint64_t op) { engine_->AcceptStream(op, deadline_ns); });
  }
  OpPtr Send(uint64_t conn, Buffer message) {
    return Start([&](uint64_t op) { engine_->Send(op, conn, std::move(message)); });
  }
  OpPtr Recv(uint64_t conn) {
    return Start([&](uint64_t op) { engine_->Recv(op, conn); });
  }
  OpPtr Call(const Uri& uri, uint32_t method, Buffer request, TimeNs deadline_ns) {
    return Start([&](uint64_t op) {
      engine_->Call(op, uri, method, std::move(request), deadline_ns);
    });
  }
  OpPtr CallOnConnection(uint64_t conn, uint32_t method, Buffer request, TimeNs deadline_ns) {
    return Start([&](uint64_t op) {
      engine_->CallOnConnection(op, conn, method, std::move(request), deadline_ns);
    });
  }
  OpPtr Disconnect(uint64_t conn) {
    return Start([&](uint64_t op) { engine_->Disconnect(op, conn); });
  }
  OpPtr BarrierArrive(const Uri& coordinator, bool is_coordinator, uint64_t group, uint64_t round,
                      uint32_t members, TimeNs deadline_ns) {
    return Start([&](uint64_t op) {
      engine_->BarrierArrive(op, coordinator, is_coordinator, group, round, members, deadline_ns);
    });
  }
  void Release(uint64_t conn) { engine_->Release(conn); }
  Result<std::string> PeerOf(uint64_t conn) const { return engine_->PeerOf(conn); }
  void Cancel(uint64_t op_id) { engine_->Cancel(op_id); }
  void Shutdown(const Status& why) { engine_->Shutdown(why); }
  size_t pending_ops() const { return engine_->pending_ops(); }
  size_t ops_awaiting_answer() const { return engine_->ops_awaiting_answer(); }
  TimeNs NextDeadline() const { return engine_->NextDeadline(); }

  // A synchronous handler, run right after the Poll that received its call.
  void SetHandler(uint32_t method, RpcHandler handler) {
    handlers_[method] = std::move(handler);
    engine_->SetServed(method, true);
  }
  // Requests for `method` wait in deferred() for the test to Respond.
  void SetDeferred(uint32_t method) {
    handlers_[method] = nullptr;
    engine_->SetServed(method, true);
  }
  std::deque<IncomingCall>& deferred() { return deferred_; }
  // Calls whose clients withdrew them (cancel notices), in arrival order.
  const std::vector<ServerCallRef>& cancelled() const { return cancelled_; }
  void Respond(const ServerCallRef& ref, Status status, Buffer payload = Buffer()) {
    engine_->Respond(ref, std::move(status), std::move(payload));
  }

  // The engine's Poll, then the handlers of what it received.
  transport::PollResult Poll() {
    transport::PollResult r = engine_->Poll();
    while (!ready_.empty()) {
      IncomingCall call = std::move(ready_.front());
      ready_.pop_front();
      ++r.work;
      RpcContext context;
      context.peer = call.peer;
      context.method = call.method;
      Result<Buffer> result = handlers_[call.method](context, std::move(call.request));
      if (result.ok()) {
        engine_->Respond(call.ref, OkStatus(), std::move(result).value());
      } else {
        engine_->Respond(call.ref, result.status());
      }
    }
    return r;
  }

  // EngineSink
  void OnComplete(uint64_t op_id, Status status, Buffer message, uint64_t value) override {
    auto it = ops_.find(op_id);
    if (it == ops_.end()) return;
    OpPtr op = std::move(it->second);
    ops_.erase(it);
    op->status = std::move(status);
    op->message = std::move(message);
    op->value = value;
    op->done.store(true);
  }
  void OnRequest(IncomingCall call) override {
    // The peer string is the engine's; keep it only through a copy.
    peers_.emplace_back(call.peer);
    call.peer = peers_.back();
    if (handlers_[call.method]) {
      ready_.push_back(std::move(call));
    } else {
      deferred_.push_back(std::move(call));
    }
  }
  void OnCallCancelled(const ServerCallRef& ref) override { cancelled_.push_back(ref); }

 private:
  template <typename Fn>
  OpPtr Start(Fn&& fn) {
    auto op = std::make_shared<TestOp>();
    op->op_id = next_op_++;
    ops_[op->op_id] = op;
    fn(op->op_id);
    return op;
  }

  std::unique_ptr<Engine> engine_;
  uint64_t next_op_ = 1;
  std::unordered_map<uint64_t, OpPtr> ops_;
  std::unordered_map<uint32_t, RpcHandler> handlers_;
  std::deque<IncomingCall> ready_;
  std::deque<IncomingCall> deferred_;
  std::deque<std::string> peers_;
  std::vector<ServerCallRef> cancelled_;
};

}  // namespace wharf::engine::testing
