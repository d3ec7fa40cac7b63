// shm/doorbell.h: Doorbell, the eventfd one side of a region rings to wake
// the other when it put entries in a ring the other sleeps on. Which ring a
// doorbell belongs to, and the spin-then-sleep policy around it, are the
// owner's; the protocol that decides when to ring without losing a wake-up
// is in spsc_ring.h (SetWaiting / PeerWaiting).
//
// The eventfd is non-blocking, so Ring never waits: a counter that is
// saturated (which a hostile peer holding the same eventfd can arrange)
// means "already rung", and reading an empty one returns at once.
#pragma once

#include <cstdint>
#include <utility>

#include "base/unique_fd.h"
#include "wharf/result.h"

namespace wharf::shm {

// Owns one eventfd. Move-only. Ring may be called from any thread; Drain and
// Wait by the single thread that sleeps on it.
class Doorbell {
 public:
  // A new eventfd (EFD_NONBLOCK | EFD_CLOEXEC), counter 0.
  static Result<Doorbell> Create();

  // Takes an fd received from the peer. kInvalidArgument unless it is an
  // eventfd (checked through /proc/self/fd); sets O_NONBLOCK on it.
  static Result<Doorbell> Adopt(UniqueFd fd);

  Doorbell(Doorbell&&) = default;
  Doorbell& operator=(Doorbell&&) = default;

  // Adds 1 to the counter, waking a poll()/epoll on fd(). A saturated
  // counter (EAGAIN) is already rung: OK. Never blocks while the eventfd is
  // non-blocking (see docs/shm.md for the peer that clears the flag).
  Status Ring();

  // Reads and so resets the counter; true if it had been rung since the last
  // Drain. Never blocks.
  bool Drain();

  // Sleeps in poll() until the doorbell is rung or `timeout_ms` passes (-1:
  // forever; 0: just look). True if rung (the counter is not drained). For
  // owners that sleep on one doorbell; an event loop polls fd() instead.
  Result<bool> Wait(int timeout_ms);

  // The eventfd, for poll/epoll and for passing to the peer (SCM_RIGHTS).
  int fd() const { return fd_.get(); }

 private:
  explicit Doorbell(UniqueFd fd) : fd_(std::move(fd)) {}

  UniqueFd fd_;
};

}  // namespace wharf::shm
