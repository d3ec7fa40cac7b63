// Waiter: epoll, eventfd and timerfd for threads waiting on an engine.
#include "engine/waiter.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>

namespace wharf::engine {

Result<std::unique_ptr<Waiter>> Waiter::Open(const Clock& clock) {
  std::unique_ptr<Waiter> w(new Waiter(clock));
  w->wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  w->timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  w->epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (w->wake_fd_ < 0 || w->timer_fd_ < 0 || w->epoll_fd_ < 0) {
    return ErrnoToStatus(errno, "endpoint: epoll setup");
  }
  for (int fd : {w->wake_fd_, w->timer_fd_}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(w->epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      return ErrnoToStatus(errno, "endpoint: epoll_ctl");
    }
  }
  return w;
}

Waiter::~Waiter() {
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
  if (timer_fd_ >= 0) close(timer_fd_);
}

Status Waiter::Watch(const std::vector<int>& fds) {
  MutexLock lock(fds_mu_);
  for (auto it = fds_.begin(); it != fds_.end();) {
    if (std::find(fds.begin(), fds.end(), *it) != fds.end()) {
      ++it;
      continue;
    }
    // Gone (its socket may be closed already, which dropped it from the
    // epoll set; the error is then expected).
    if (fds_in_epoll_) (void)epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, *it, nullptr);
    it = fds_.erase(it);
  }
  for (int fd : fds) {
    if (std::find(fds_.begin(), fds_.end(), fd) != fds_.end()) continue;
    if (fds_in_epoll_) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = fd;
      if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
        return ErrnoToStatus(errno, "endpoint: epoll_ctl");
      }
    }
    fds_.push_back(fd);
  }
  return OkStatus();
}

int Waiter::Expose() {
  {
    MutexLock lock(fds_mu_);
    exposed_ = true;
    SetFdsInEpoll(true);
  }
  // From now on the timer keeps the fd readable at each deadline; start
  // with the one pending.
  ArmTimer(deadline_ns_.load());
  return epoll_fd_;
}

void Waiter::SetFdsInEpoll(bool in) {
  if (fds_in_epoll_ == in) return;
  for (int fd : fds_) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    // Cannot fail for a valid fd and epoll set; a failure would only cost
    // wake-ups (sleeps are bounded), so it is not worth a Status here.
    (void)epoll_ctl(epoll_fd_, in ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, fd, &ev);
  }
  fds_in_epoll_ = in;
}

void Waiter::ArmTimer(TimeNs deadline_ns) {
  // Threads about to sleep read deadline_ns_; one already asleep, or an
  // application asleep in its own epoll on the fd, must be woken for the
  // deadline by the timer. A spinning thread needs neither, and a
  // timerfd_settime costs more than a whole round trip (a VM exit here), so
  // with no one asleep and the fd never exposed no timer is armed.
  // Dekker-style with Sleep(): a thread either sees sleepers_ > 0 here or
  // the deadline there.
  deadline_ns_.store(deadline_ns);
  if (sleepers_.load() == 0 && !exposed_.load()) return;
  // Re-arm only when the deadline moved earlier or the timer fired.
  TimeNs armed = timer_armed_ns_;
  if (deadline_ns == kNever || (armed != kNever && deadline_ns >= armed)) return;
  itimerspec spec{};
  TimeNs at = std::max<TimeNs>(deadline_ns, 1);  // 0 would disarm
  spec.it_value.tv_sec = static_cast<time_t>(at / kNsPerSec);
  spec.it_value.tv_nsec = static_cast<long>(at % kNsPerSec);
  if (timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &spec, nullptr) == 0) {
    timer_armed_ns_ = deadline_ns;
  }
}

void Waiter::WakeSleepers() {
  if (sleepers_.load() == 0) return;
  WakeAlways();
}

void Waiter::WakeAlways() {
  wake_pending_ = true;
  uint64_t one = 1;
  ssize_t n = write(wake_fd_, &one, sizeof(one));
  (void)n;  // a full counter already wakes everyone
}

void Waiter::ClearReadable() {
  uint64_t drained;
  if (timer_armed_ns_ != kNever && read(timer_fd_, &drained, sizeof(drained)) > 0) {
    timer_armed_ns_ = kNever;
  }
  if (wake_pending_.exchange(false) && read(wake_fd_, &drained, sizeof(drained)) < 0) drained = 0;
}

void Waiter::UnwatchWhileSpinning() {
  MutexLock lock(fds_mu_);
  if (sleeping_in_epoll_ == 0 && !exposed_ && !keep_fds_) SetFdsInEpoll(false);
}

void Waiter::Sleep(TimeNs until_ns) {
  // A deadline another thread set since our caller looked (see ArmTimer).
  until_ns = std::min(until_ns, deadline_ns_.load());
  TimeNs now = clock_.NowNs();
  TimeNs span = until_ns == kNever ? 100 * kNsPerMs
                                   : std::clamp<TimeNs>(until_ns - now, 0, 100 * kNsPerMs);
  timespec ts{static_cast<time_t>(span / kNsPerSec), static_cast<long>(span % kNsPerSec)};
  {
    // Added while the socket already holds data, a level-triggered fd is
    // reported at once: nothing that arrived since the last poll is missed.
    MutexLock lock(fds_mu_);
    if (sleeping_in_epoll_++ == 0) SetFdsInEpoll(true);
  }
  epoll_event events[4];
  int n = epoll_pwait2(epoll_fd_, events, 4, &ts, nullptr);
  {
    MutexLock lock(fds_mu_);
    --sleeping_in_epoll_;
  }
  spin_turns_.store(0, std::memory_order_relaxed);
  const int noted = noted_fd_.load(std::memory_order_relaxed);
  for (int i = 0; i < n; ++i) {
    int fd = events[i].data.fd;
    if (fd == noted && noted >= 0) noted_ready_.store(true, std::memory_order_relaxed);
    if (fd == wake_fd_ || fd == timer_fd_) {
      uint64_t drained;
      if (read(fd, &drained, sizeof(drained)) > 0 && fd == timer_fd_) timer_armed_ns_ = kNever;
    }
  }
}

}  // namespace wharf::engine
