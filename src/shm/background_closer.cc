// BackgroundCloser: a queue of fds and the thread that closes them.
#include "shm/background_closer.h"

#include <sys/socket.h>
#include <unistd.h>

#include <deque>
#include <thread>

#include "base/mutex.h"

namespace wharf::shm {

struct BackgroundCloser::State {
  Mutex mu;
  CondVar work;  // fds queued, or stop
  CondVar idle;  // the queue ran empty
  std::deque<int> fds ABSL_GUARDED_BY(mu);
  bool closing_one ABSL_GUARDED_BY(mu) = false;  // the thread is inside close()
  bool stop ABSL_GUARDED_BY(mu) = false;
  Counters counters ABSL_GUARDED_BY(mu);
};

void BackgroundCloser::CloseLoop(const std::shared_ptr<State>& state) {
  MutexLock lock(state->mu);
  while (true) {
    while (!state->stop && state->fds.empty()) state->work.Wait(state->mu);
    if (state->fds.empty()) return;  // stopped and drained
    const int fd = state->fds.front();
    state->fds.pop_front();
    state->closing_one = true;
    lock.unlock();
    // A socket is made to abort rather than linger: its close then returns
    // at once whatever its sender asked for. Not a socket: ENOTSOCK, fine.
    const linger abort_now{.l_onoff = 1, .l_linger = 0};
    const bool aborted =
        ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort_now, sizeof abort_now) == 0;
    ::close(fd);
    lock.lock();
    state->closing_one = false;
    ++state->counters.closed;
    state->counters.sockets_aborted += aborted ? 1 : 0;
    if (state->fds.empty()) state->idle.NotifyAll();
  }
}

BackgroundCloser::BackgroundCloser(std::chrono::milliseconds drain_on_exit)
    : state_(std::make_shared<State>()), drain_on_exit_(drain_on_exit) {
  std::thread([state = state_] { CloseLoop(state); }).detach();
}

BackgroundCloser::~BackgroundCloser() {
  (void)WaitIdle(drain_on_exit_);
  MutexLock lock(state_->mu);
  state_->stop = true;
  state_->work.NotifyAll();
  // The thread ends once the queue is empty; if a close blocks it, it ends
  // after that close, holding the state alive until then.
}

void BackgroundCloser::Close(UniqueFd fd) {
  if (!fd.valid()) return;
  MutexLock lock(state_->mu);
  state_->fds.push_back(fd.Release());
  ++state_->counters.queued;
  state_->work.NotifyOne();
}

bool BackgroundCloser::WaitIdle(std::chrono::milliseconds timeout) {
  const auto deadline = CondVar::Clock::now() + timeout;
  MutexLock lock(state_->mu);
  while (!state_->fds.empty() || state_->closing_one) {
    if (!state_->idle.WaitUntil(state_->mu, deadline)) {
      return state_->fds.empty() && !state_->closing_one;
    }
  }
  return true;
}

BackgroundCloser::Counters BackgroundCloser::counters() const {
  MutexLock lock(state_->mu);
  return state_->counters;
}

}  // namespace wharf::shm
