// client/driver_seat.h: DriverSeat, which thread drives an EngineHost while
// several wait on it. One thread at a time drives (spins, polls the engines,
// sleeps in the Waiter's epoll); the others wait here, off the CPU, until
// something they may be waiting for happened: an operation completed,
// requests wait for a thread that runs handlers (when the driver runs none),
// or the seat is free. Then the first to look takes the seat, or they check
// their own condition. A driver stuck in a long handler is covered by the
// endpoint's keeper thread, which drives beside it (Join).
//
// Why: every waiting thread used to spin and poll on its own. With a thread
// in Endpoint::Run and another blocked in Accept (`wharf serve`), both burned
// the CPU in equal shares, and on a shared CPU the one holding the engine's
// lock was preempted for a scheduler slice while the other spun: round trips
// of milliseconds (driver_seat_test.cc, endpoint_serve_test.cc).
//
// A seat belongs to one EngineHost; thread-safe. Taking and leaving it are
// an atomic each; waking waiters costs a lock and a notify only when some
// wait.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

#include "base/clock.h"
#include "base/mutex.h"

namespace wharf::internal {

class DriverSeat {
 public:
  // Takes the seat if nobody drives; true if this thread now drives.
  // `dispatches`: it runs handlers in its turns (then waiters need not be
  // woken for requests).
  bool TryTake(bool dispatches);
  // The driver gets up; a waiter is woken to take over.
  void Leave();
  // Drives beside whoever has the seat (the keeper thread, while the
  // driver runs a long handler: the two share the engine's lock); Leave
  // when done.
  void Join();
  // Whether some thread drives now.
  bool taken() const { return drivers_.load(std::memory_order_acquire) > 0; }

  // An operation completed (any endpoint of the host): waiters re-check.
  void NoteCompletion();
  // Requests wait for a handler thread: if the driver runs none, waiters
  // that do re-check.
  void NoteCallsPending();
  // Wakes every waiter (shutdown, close).
  void WakeAll();

  // What a waiter saw before it last checked its condition and ran
  // pending handlers: Wait returns on anything newer.
  struct Look {
    uint64_t completions = 0;
    uint64_t calls = 0;
  };
  Look Observe() const { return {completions_.load(), calls_.load()}; }
  // Waits, off the CPU, until `done()`, a completion or pending calls (the
  // latter only if `dispatches` and the driver runs no handlers) newer than
  // `seen`, the seat is free, or
  // `until_ns` on `clock`. The caller then re-checks its condition and
  // tries the seat.
  void Wait(const Look& seen, const std::function<bool()>& done, TimeNs until_ns,
            bool dispatches, const Clock& clock) ABSL_LOCKS_EXCLUDED(mu_);

  // How often waiters were woken (for tests).
  uint64_t wakeups() const { return wakeups_.load(std::memory_order_relaxed); }

 private:
  void Notify() ABSL_LOCKS_EXCLUDED(mu_);

  // Threads driving now: 0 or 1, 2 while the keeper drives beside.
  std::atomic<int> drivers_{0};
  // Whether the driver that took the seat last runs handlers.
  std::atomic<bool> driver_dispatches_{false};
  // Bumped at every completion / pending-calls note, so a waiter sees that
  // one happened since it looked.
  std::atomic<uint64_t> completions_{0};
  std::atomic<uint64_t> calls_{0};
  // Threads in Wait, and those of them that run handlers: a note with none
  // waiting costs an atomic load.
  std::atomic<int> waiting_{0};
  std::atomic<int> dispatching_waiters_{0};
  std::atomic<uint64_t> wakeups_{0};
  // Guards no field (the state above is atomics, read without it): it pairs
  // the waiters' checks with the notes (no lost wake-up).
  Mutex mu_;
  CondVar cv_;
};

}  // namespace wharf::internal
