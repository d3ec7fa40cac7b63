// BackgroundCloser: a queue of fds and the thread that closes them.
#include "shm/background_closer.h"

#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace wharf::shm {

struct BackgroundCloser::State {
  std::mutex mu;
  std::condition_variable work;  // fds queued, or stop
  std::condition_variable idle;  // the queue ran empty
  std::deque<int> fds;           // guarded by mu
  bool closing_one = false;      // guarded by mu: the thread is inside close()
  bool stop = false;             // guarded by mu
  Counters counters;             // guarded by mu
};

void BackgroundCloser::CloseLoop(const std::shared_ptr<State>& state) {
  std::unique_lock<std::mutex> lock(state->mu);
  while (true) {
    state->work.wait(lock, [&] { return state->stop || !state->fds.empty(); });
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
    if (state->fds.empty()) state->idle.notify_all();
  }
}

BackgroundCloser::BackgroundCloser(std::chrono::milliseconds drain_on_exit)
    : state_(std::make_shared<State>()), drain_on_exit_(drain_on_exit) {
  std::thread([state = state_] { CloseLoop(state); }).detach();
}

BackgroundCloser::~BackgroundCloser() {
  (void)WaitIdle(drain_on_exit_);
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->stop = true;
  state_->work.notify_all();
  // The thread ends once the queue is empty; if a close blocks it, it ends
  // after that close, holding the state alive until then.
}

void BackgroundCloser::Close(UniqueFd fd) {
  if (!fd.valid()) return;
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->fds.push_back(fd.Release());
  ++state_->counters.queued;
  state_->work.notify_one();
}

bool BackgroundCloser::WaitIdle(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(state_->mu);
  return state_->idle.wait_for(lock, timeout,
                               [&] { return state_->fds.empty() && !state_->closing_one; });
}

BackgroundCloser::Counters BackgroundCloser::counters() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->counters;
}

}  // namespace wharf::shm
