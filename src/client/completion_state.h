// client/completion_state.h: the shared state behind a public Completion, and
// ProgressDriver, the interface through which a waiter drives the engine that
// will complete it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

#include "base/clock.h"
#include "base/mutex.h"
#include "wharf/buffer.h"
#include "wharf/status.h"

namespace wharf::internal {

// Implemented by whatever hosts an engine (the embedded endpoint core).
class ProgressDriver {
 public:
  virtual ~ProgressDriver() = default;
  // One non-blocking pass of the engine; returns work done.
  virtual int PollOnce() = 0;
  // Drives progress until `done()` holds or `deadline_ns` passes (on the
  // driver's clock); spins briefly, then sleeps. False on timeout.
  virtual bool AwaitUntil(const std::function<bool()>& done, TimeNs deadline_ns) = 0;
  virtual TimeNs NowNs() const = 0;
  // True on a thread that is running a handler or callback of this engine:
  // blocking there would wait for work only that same thread can do.
  virtual bool InCallback() const = 0;
  // Asks the engine to stop operation `op_id` with kCancelled.
  virtual void CancelOp(uint64_t op_id) = 0;
};

// Shared (hence shared_ptr) between the engine, which completes it, and any
// number of public Completion handles, which may outlive the endpoint.
struct CompletionState {
  // Set last, with release order, after status/message/value are written.
  std::atomic<bool> done{false};
  Mutex mu;  // against callback registration and TakeMessage
  // Unguarded: written once, under mu, before `done` is released, and read
  // without the lock only after `done` was seen (acquire); never written again.
  Status status;
  uint64_t value = 0;  // e.g. the connection id an Accept/Connect produced
  Buffer message ABSL_GUARDED_BY(mu);  // Completion::TakeMessage moves it out
  std::function<void(const Status&)> callback ABSL_GUARDED_BY(mu);
  uint64_t op_id = 0;
  std::weak_ptr<ProgressDriver> driver;

  // Completes once; later calls are ignored. Returns the callback the
  // application attached (empty if none) for the caller to run once it is
  // safe to re-enter the engine.
  [[nodiscard]] std::function<void(const Status&)> Complete(Status s, Buffer m = Buffer(),
                                                            uint64_t v = 0)
      ABSL_LOCKS_EXCLUDED(mu) {
    MutexLock lock(mu);
    if (done.load(std::memory_order_relaxed)) return {};
    status = std::move(s);
    message = std::move(m);
    value = v;
    done.store(true, std::memory_order_release);
    return std::move(callback);
  }
};

}  // namespace wharf::internal
