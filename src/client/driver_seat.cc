// DriverSeat: the seat (an atomic count of drivers) and the waiting room (a
// condition variable woken only when someone waits).
#include "client/driver_seat.h"

#include <chrono>

namespace wharf::internal {

bool DriverSeat::TryTake(bool dispatches) {
  int free_seat = 0;
  if (!drivers_.compare_exchange_strong(free_seat, 1)) return false;
  driver_dispatches_.store(dispatches);
  return true;
}

void DriverSeat::Leave() {
  drivers_.fetch_sub(1);
  if (waiting_.load() > 0) Notify();
}

void DriverSeat::Join() { drivers_.fetch_add(1); }

void DriverSeat::NoteCompletion() {
  completions_.fetch_add(1);
  if (waiting_.load() > 0) Notify();
}

void DriverSeat::NoteCallsPending() {
  calls_.fetch_add(1);
  // A driver that runs handlers runs these too: nobody needs waking.
  if (dispatching_waiters_.load() > 0 && !driver_dispatches_.load()) Notify();
}

void DriverSeat::WakeAll() {
  completions_.fetch_add(1);
  Notify();
}

void DriverSeat::Notify() {
  // Taken (and released) first: a waiter between its check and its sleep
  // holds it, so the notify cannot fall between the two.
  { MutexLock lock(mu_); }
  cv_.NotifyAll();
}

void DriverSeat::Wait(const Look& seen, const std::function<bool()>& done, TimeNs until_ns,
                      bool dispatches, const Clock& clock) {
  MutexLock lock(mu_);
  // Counted before the check below (both sequentially consistent): a note
  // made after the check sees the waiter and notifies.
  waiting_.fetch_add(1);
  if (dispatches) dispatching_waiters_.fetch_add(1);
  auto ready = [&] {
    return drivers_.load() == 0 || completions_.load() != seen.completions ||
           (dispatches && !driver_dispatches_.load() && calls_.load() != seen.calls) || done();
  };
  const TimeNs now = clock.NowNs();
  if (until_ns > now && !ready()) {
    const auto deadline = CondVar::Clock::now() + std::chrono::nanoseconds(until_ns - now);
    while (!ready() && cv_.WaitUntil(mu_, deadline)) {
    }
  }
  waiting_.fetch_sub(1);
  if (dispatches) dispatching_waiters_.fetch_sub(1);
  wakeups_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace wharf::internal
