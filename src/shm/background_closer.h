// shm/background_closer.h: BackgroundCloser, which closes file descriptors
// on a thread of its own, for a caller whose thread must never block.
//
// Why: close() can block for as long as the last holder of a file lets it.
// A TCP socket with SO_LINGER and unsent data blocks its final close for the
// linger time (hours, if the sender says so); a Unix socket's final close
// drops the messages queued in it, and with them the last reference to the
// files they carry, whose own closes then run in the closing thread; a FUSE
// file waits for its server. A peer that can pass wharfd a file (SCM_RIGHTS
// on the control socket) could otherwise freeze wharfd's loop for everyone.
// wharfd refuses passed files where the kernel can (SO_PASSRIGHTS, Linux
// 6.16, control_socket.h); on older kernels every file a peer could have
// passed, and every control connection whose queue may hold some, is closed
// here instead.
//
// Sockets among them are first made to abort on close (SO_LINGER with a
// zero timeout), so a lingering TCP socket never even holds up this thread.
//
// Bounds: the queue holds fds, each still open in this process, so it can
// never exceed the process's fd limit (RLIMIT_NOFILE); when that is
// reached, accept() and recvmsg() fail first and the daemon backs off. The
// counters say how many were queued and closed.
//
// Thread-safe. The destructor waits a bounded time for the queue to drain,
// then leaves the thread to finish alone (it owns its state): a close that
// blocks for an hour must not block the daemon's exit for an hour.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "base/unique_fd.h"

namespace wharf::shm {

// Where an fd goes to be closed. The plain one closes on the spot.
class FdCloser {
 public:
  virtual ~FdCloser() = default;
  virtual void Close(UniqueFd fd) = 0;
};

class BackgroundCloser final : public FdCloser {
 public:
  struct Counters {
    uint64_t queued = 0;
    uint64_t closed = 0;
    uint64_t sockets_aborted = 0;  // sockets made to abort (SO_LINGER 0) first
  };

  // Starts the thread. `drain_on_exit`: how long the destructor waits for
  // queued fds to be closed before it leaves the thread behind.
  explicit BackgroundCloser(std::chrono::milliseconds drain_on_exit = std::chrono::seconds(1));
  ~BackgroundCloser() override;
  BackgroundCloser(const BackgroundCloser&) = delete;
  BackgroundCloser& operator=(const BackgroundCloser&) = delete;

  // Never blocks on the fd (only, briefly, on the queue's mutex).
  void Close(UniqueFd fd) override;

  // Waits up to `timeout` until every fd queued so far is closed; whether
  // they all were (for tests).
  bool WaitIdle(std::chrono::milliseconds timeout);

  Counters counters() const;

 private:
  struct State;
  // The thread's loop: it holds `state` for as long as it runs.
  static void CloseLoop(const std::shared_ptr<State>& state);
  // Shared with the thread, which may outlive us (see the file comment).
  std::shared_ptr<State> state_;
  const std::chrono::milliseconds drain_on_exit_;
};

}  // namespace wharf::shm
