// engine/waiter.h: Waiter, how threads waiting on an engine sleep and are
// woken: one epoll set over the transports' fds, a wake-up eventfd (for
// completions made by another thread) and a timerfd armed at the engine's
// next deadline. Also the fd applications fold into their own epoll loop.
//
// The transports' fds go into the epoll set when a thread sleeps and stay
// there until a thread has spun kSpinTurnsBeforeUnwatch turns without
// sleeping (or for good once the application took the fd): a socket in an
// epoll set runs epoll's wake-up callback on every packet, which a spinning
// ping-pong would pay in each round trip, while a loop that sleeps between
// most packets would pay two epoll_ctl calls per fd per sleep instead.
#pragma once

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <type_traits>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "transport/message_transport.h"
#include "wharf/result.h"

namespace wharf::engine {

// Owned by the engine's host. Thread-safe (any thread may sleep, wake or
// arm); Watch and ArmTimer are called under the host's engine lock.
class Waiter {
 public:
  static Result<std::unique_ptr<Waiter>> Open(const Clock& clock);
  ~Waiter();
  Waiter(const Waiter&) = delete;
  Waiter& operator=(const Waiter&) = delete;

  // Watches exactly `fds` from now on: adds the new ones, drops those gone
  // (a closed endpoint's listener). Call it when the list changed.
  Status Watch(const std::vector<int>& fds) ABSL_LOCKS_EXCLUDED(fds_mu_);
  // The epoll fd for applications; from the first call on the transports'
  // fds stay in the set and the timer is always armed.
  int Expose() ABSL_LOCKS_EXCLUDED(fds_mu_);
  // Spins by giving the CPU to any other runnable thread (sched_yield)
  // rather than by pausing: for a loop that shares its CPU with the very
  // processes it waits for (wharfd beside an application on a 2-CPU host),
  // so that they run at once instead of after its spin, while it stays
  // awake for their answer without paying a wake-up.
  void set_yield_while_spinning(bool yes) { yield_while_spinning_ = yes; }
  // With yield_while_spinning: yield only after a turn that handed work to
  // another process (PollResult::handed_off), or after kMaxSpinWithoutYield
  // of turns that did not, pausing in between; after
  // kMaxIdleSpinWithoutYield while every process it serves says it spins
  // waiting for it with nothing of its own to do (PollResult::served_idle).
  // For wharfd: a yield after every turn switched to its application and
  // straight back whenever both only waited for the network (a context
  // switch per turn, ~30% of both CPUs at 32 RPCs in flight); the
  // application has work only when wharfd handed it some. A yield every
  // 20 µs was still a switch there and back per 20 µs of waiting: 0.45
  // context switches per RPC at 32 in flight (homa managed), 0.24 with
  // the idle hint. An application busy with work of its own (preempted in
  // a handler, say) still gets the CPU within 20 µs; anything else
  // runnable within 100 µs. With 1 ms, RPCs one at a time had a P99 of
  // 220-300 µs instead of 110-230, and 1.1 ms in some runs: something
  // runnable (another thread of an application, a kernel thread) waited.
  void set_yield_only_after_handoff(bool yes) { yield_only_after_handoff_ = yes; }
  static constexpr DurationNs kMaxSpinWithoutYield = 20 * kNsPerUs;
  static constexpr DurationNs kMaxIdleSpinWithoutYield = 100 * kNsPerUs;
  // The fds stay in the epoll set from now on (no timer: for a host whose
  // only sleeper is its own loop, which sleeps often; moving them in and
  // out of the set costs two epoll_ctl calls per fd per sleep).
  void KeepFdsWatched() ABSL_LOCKS_EXCLUDED(fds_mu_) {
    MutexLock lock(fds_mu_);
    keep_fds_ = true;
    SetFdsInEpoll(true);
  }

  // Makes the fd readable and sleepers wake at `deadline_ns` when it is
  // earlier than what is armed. A syscall only when someone sleeps or the fd
  // is exposed, and the deadline moved earlier.
  void ArmTimer(TimeNs deadline_ns);
  // Wakes sleeping threads, if any (a completion another thread waits for).
  void WakeSleepers();
  // Wakes sleepers and makes the exposed fd readable, whoever sleeps.
  void WakeAlways();
  // Clears a fired timer and a pending wake-up (the fd is level-triggered):
  // called before each poll of the engine.
  void ClearReadable();

  // Remembers whether a sleep returned with `fd` (a watched one) readable,
  // for a host that would otherwise try it after every wake-up: wharfd's
  // listener, where an accept that finds nobody is a system call per
  // wake-up. One fd; -1 forgets it.
  void NoteReadinessOf(int fd) { noted_fd_.store(fd, std::memory_order_relaxed); }
  // Whether a sleep reported the noted fd readable since the last call.
  // epoll reports at most a few fds per sleep, so a false answer means
  // "not yet seen": a still-readable fd is reported by the next sleep.
  bool TakeNotedReadiness() { return noted_ready_.exchange(false, std::memory_order_relaxed); }

  // The wait loop of every blocking call on an engine: runs until `done()`
  // holds (true) or `deadline_ns` passes or `stop()` (false unless done).
  // Each turn runs `turn()`, the host's non-blocking pass, returning a
  // transport::PollResult (work done, next deadline, the clock as read; now
  // 0 when it could not poll). Within `spin_ns` of the last work it spins;
  // then it sleeps here until a watched fd is readable, a wake-up, the next
  // deadline or 100 ms, calling `before_sleep()` once it counts as a sleeper
  // (so the host can bring the fds up to date). A template: it runs once per
  // spin turn, where an indirect call shows. `spin` is a DurationNs, or a
  // callable returning one, asked after each turn that did work (a host
  // that expects answers soon may spin longer than one that expects none).
  template <typename Done, typename Turn, typename BeforeSleep, typename Stop, typename Spin>
  bool SpinThenBlock(Done&& done, Turn&& turn, BeforeSleep&& before_sleep, Stop&& stop,
                     TimeNs deadline_ns, Spin&& spin) {
    auto spin_ns = [&spin]() -> DurationNs {
      if constexpr (std::is_invocable_v<Spin>) {
        return spin();
      } else {
        return spin;
      }
    };
    TimeNs last_yield = clock_.NowNs();
    TimeNs spin_until = last_yield + spin_ns();
    while (true) {
      if (done()) return true;
      const transport::PollResult r = turn();
      if (done()) return true;
      // One clock read per turn: reading it costs as much here (a VM's
      // clock source) as a fifth of the turn.
      const TimeNs now = r.now != 0 ? r.now : clock_.NowNs();
      if (r.work > 0) spin_until = now + spin_ns();
      if (now >= deadline_ns || stop()) return done();
      if (now < spin_until) {
        if (++spin_turns_ == kSpinTurnsBeforeUnwatch) UnwatchWhileSpinning();
        const DurationNs bound = r.served_idle ? kMaxIdleSpinWithoutYield : kMaxSpinWithoutYield;
        if (yield_while_spinning_ &&
            (!yield_only_after_handoff_ || r.handed_off || now - last_yield >= bound)) {
          sched_yield();
          yields_.fetch_add(1, std::memory_order_relaxed);
          last_yield = now;
        } else {
          CpuRelax();
        }
        continue;
      }
      // Nothing for a while: sleep until a packet, a wake-up or a deadline.
      BeginSleep();
      before_sleep();
      if (!done()) Sleep(std::min({deadline_ns, r.next_deadline, now + 100 * kNsPerMs}));
      EndSleep();
      // Spin again only once a turn finds work: a timer that woke us for
      // nothing (a look-again deadline) must not cost a spin each time.
      spin_until = 0;
    }
  }

  // Sleeps until a watched fd is readable, a wake-up, or `until_ns` (at most
  // 100 ms). Callers bracket it with BeginSleep/EndSleep and re-check their
  // condition between BeginSleep and Sleep (Dekker with ArmTimer/Wake).
  void BeginSleep() { sleepers_.fetch_add(1); }
  void Sleep(TimeNs until_ns) ABSL_LOCKS_EXCLUDED(fds_mu_);
  void EndSleep() { sleepers_.fetch_sub(1); }
  // Whether the watched fds matter now: someone sleeps, or the fd is
  // exposed. While not, keeping them current can wait (a spinning thread
  // polls the transports itself).
  bool watching() const { return sleepers_.load() > 0 || exposed_.load(); }
  // sched_yield calls made while spinning (for tests).
  uint64_t yields() const { return yields_.load(std::memory_order_relaxed); }
  // Whether the watched fds are in the epoll set now (for tests).
  bool fds_in_epoll() ABSL_LOCKS_EXCLUDED(fds_mu_) {
    MutexLock lock(fds_mu_);
    return fds_in_epoll_;
  }

 private:
  explicit Waiter(const Clock& clock) : clock_(clock) {}
  static void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  // Adds (or removes) the watched fds to (from) the epoll set.
  void SetFdsInEpoll(bool in) ABSL_EXCLUSIVE_LOCKS_REQUIRED(fds_mu_);
  // Takes the fds out of the epoll set for a thread that keeps spinning,
  // unless someone sleeps, the fd is exposed or they are kept.
  void UnwatchWhileSpinning() ABSL_LOCKS_EXCLUDED(fds_mu_);

  // Spin turns since a thread last slept (any thread; a heuristic, so
  // relaxed). See the file comment.
  static constexpr uint32_t kSpinTurnsBeforeUnwatch = 256;
  std::atomic<uint32_t> spin_turns_{0};

  const Clock& clock_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  int timer_fd_ = -1;
  std::atomic<TimeNs> timer_armed_ns_{kNever};
  std::atomic<TimeNs> deadline_ns_{kNever};
  // Set before each write to wake_fd_, so that ClearReadable reads (drains)
  // it only when there is something to drain.
  std::atomic<bool> wake_pending_{false};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> exposed_{false};
  std::atomic<int> noted_fd_{-1};          // NoteReadinessOf
  std::atomic<bool> noted_ready_{false};   // TakeNotedReadiness
  // The watched fds, and whether they are in the epoll set now: while
  // threads sleep (sleeping_in_epoll_ > 0) or once exposed.
  Mutex fds_mu_;
  std::vector<int> fds_ ABSL_GUARDED_BY(fds_mu_);
  bool fds_in_epoll_ ABSL_GUARDED_BY(fds_mu_) = false;
  bool keep_fds_ ABSL_GUARDED_BY(fds_mu_) = false;  // KeepFdsWatched
  int sleeping_in_epoll_ ABSL_GUARDED_BY(fds_mu_) = 0;
  // Unguarded: set once by the owner before any thread waits, then only read.
  bool yield_while_spinning_ = false;
  bool yield_only_after_handoff_ = false;
  std::atomic<uint64_t> yields_{0};
};

}  // namespace wharf::engine
