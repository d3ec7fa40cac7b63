// wharf/completion.h: Completion, the handle of an asynchronous operation
// (ISend, IRecv, ICall, connect, barrier). Wait on it, poll it, or attach a
// callback. Waiting drives the endpoint's progress: it spins briefly, then
// sleeps until packets or a deadline arrive.
#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include "wharf/buffer.h"
#include "wharf/status.h"

namespace wharf {

namespace internal {
struct CompletionState;
class PublicAccess;
}  // namespace internal

// Copyable: copies refer to the same operation. Thread-safe: any thread may
// wait, poll or read; a callback runs on the thread that completes the
// operation (the one driving the endpoint at that moment).
class Completion {
 public:
  static constexpr std::chrono::nanoseconds kForever = std::chrono::nanoseconds::max();

  Completion() = default;

  // False for a default-constructed handle.
  bool valid() const { return state_ != nullptr; }
  // True once the operation finished (successfully or not). Never blocks and
  // does not drive progress; see Poll().
  bool done() const;
  // Drives the endpoint once (non-blocking), then returns done().
  bool Poll();
  // Blocks until done or `timeout`; returns the operation's status, or
  // kDeadlineExceeded if the wait timed out (the operation goes on).
  Status Wait(std::chrono::nanoseconds timeout = kForever);
  // The outcome. Meaningful once done().
  Status status() const;
  // The received message or RPC response (once done and ok); moves it out.
  Buffer TakeMessage();
  // Runs `fn(status)` once done: immediately (on this thread) if already done.
  void OnComplete(std::function<void(const Status&)> fn);
  // Asks to stop the operation: calls and receives complete with kCancelled
  // if they had not finished. A send already handed to the network goes on.
  void Cancel();

 private:
  // Made by the endpoint (through internal::PublicAccess).
  friend class internal::PublicAccess;
  explicit Completion(std::shared_ptr<internal::CompletionState> state)
      : state_(std::move(state)) {}

  std::shared_ptr<internal::CompletionState> state_;
};

}  // namespace wharf
