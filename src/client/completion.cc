// Completion: the public handle over internal::CompletionState.
#include "wharf/completion.h"

#include "base/clock.h"
#include "client/completion_state.h"

namespace wharf {
namespace {

Status Invalid() { return FailedPreconditionError("empty Completion handle"); }

}  // namespace

bool Completion::done() const {
  return state_ != nullptr && state_->done.load(std::memory_order_acquire);
}

bool Completion::Poll() {
  if (state_ == nullptr) return false;
  if (!done()) {
    if (auto driver = state_->driver.lock()) driver->PollOnce();
  }
  return done();
}

Status Completion::Wait(std::chrono::nanoseconds timeout) {
  if (state_ == nullptr) return Invalid();
  if (!done()) {
    auto driver = state_->driver.lock();
    if (driver == nullptr) return CancelledError("the endpoint is gone");
    if (driver->InCallback()) {
      return FailedPreconditionError(
          "blocking wait inside a handler or callback of the same endpoint; use OnComplete");
    }
    TimeNs deadline = kNever;
    if (timeout != kForever) deadline = driver->NowNs() + timeout.count();
    bool finished = driver->AwaitUntil(
        [this] { return state_->done.load(std::memory_order_acquire); }, deadline);
    if (!finished) return DeadlineExceededError("wait timed out; the operation goes on");
  }
  return status();
}

Status Completion::status() const {
  if (state_ == nullptr) return Invalid();
  if (!done()) return UnavailableError("operation still in progress");
  // Written once, before `done` was released, and never again: no lock.
  return state_->status;
}

Buffer Completion::TakeMessage() {
  if (!done()) return Buffer();
  MutexLock lock(state_->mu);
  return std::move(state_->message);
}

void Completion::OnComplete(std::function<void(const Status&)> fn) {
  if (state_ == nullptr) return;
  {
    MutexLock lock(state_->mu);
    if (!state_->done.load(std::memory_order_acquire)) {
      state_->callback = std::move(fn);
      return;
    }
  }
  fn(status());
}

void Completion::Cancel() {
  if (state_ == nullptr || done()) return;
  if (auto driver = state_->driver.lock()) driver->CancelOp(state_->op_id);
}

}  // namespace wharf
