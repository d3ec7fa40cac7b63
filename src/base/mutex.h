// base/mutex.h: the mutex wharf's code locks, so that clang checks the lock
// rules (-Wthread-safety; docs/design.md §4). std::mutex and
// std::condition_variable underneath, inline, doing what std::lock_guard and
// std::unique_lock did: the annotations are for the compiler only.
// libstdc++'s std::mutex and std::lock_guard carry no annotations, so clang
// could not see through them.
//
//   Mutex mu_;
//   int count_ ABSL_GUARDED_BY(mu_);
//   void Bump() ABSL_LOCKS_EXCLUDED(mu_) { MutexLock lock(mu_); ++count_; }
//   void BumpLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { ++count_; }
//
// A try-lock takes the lock with try_lock() and hands it to a MutexLock with
// kAdoptLock:
//   if (!mu_.try_lock()) return;
//   MutexLock lock(mu_, kAdoptLock);
// A wait on a condition is a loop in the caller, so that the
// analysis sees the fields it reads under the lock:
//   while (!ready_) cv_.Wait(mu_);
#pragma once

#include <absl/base/thread_annotations.h>

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace wharf {

// A std::mutex clang's thread-safety analysis knows as a capability. The
// Lockable names (lock/unlock/try_lock), so std::unique_lock still works on
// it, though the analysis sees only MutexLock and the calls below.
class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  bool try_lock() ABSL_EXCLUSIVE_TRYLOCK_FUNCTION(true) { return mu_.try_lock(); }

  // Tells the analysis that the calling thread holds the lock, where it
  // cannot follow (a callback that always runs under it). Not checked at
  // run time: std::mutex cannot say who holds it.
  void AssertHeld() const ABSL_ASSERT_EXCLUSIVE_LOCK() {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Handed to MutexLock: the caller already holds the lock (its try_lock() succeeded).
struct AdoptLock {
  explicit AdoptLock() = default;
};
inline constexpr AdoptLock kAdoptLock{};

// Holds a mutex for its scope, like std::lock_guard; unlock() lets go early
// and lock() takes it again, like std::unique_lock (the destructor unlocks
// only if held). M is Mutex or another ABSL_LOCKABLE Lockable (client's
// HostMutex).
template <typename M>
class ABSL_SCOPED_LOCKABLE MutexLockOf {
 public:
  explicit MutexLockOf(M& mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_.lock(); }
  // Takes over a lock the caller holds (its try_lock() succeeded).
  MutexLockOf(M& mu, AdoptLock) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) : mu_(mu) {}
  ~MutexLockOf() ABSL_UNLOCK_FUNCTION() {
    if (held_) mu_.unlock();
  }
  MutexLockOf(const MutexLockOf&) = delete;
  MutexLockOf& operator=(const MutexLockOf&) = delete;

  void unlock() ABSL_UNLOCK_FUNCTION() {
    mu_.unlock();
    held_ = false;
  }
  void lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    mu_.lock();
    held_ = true;
  }

 private:
  M& mu_;
  bool held_ = true;
};
using MutexLock = MutexLockOf<Mutex>;

// A std::condition_variable for a Mutex: its waits take the caller's held
// lock for the wait (through std::unique_lock, adopted and given back) and
// return with it held again, as std::condition_variable::wait does.
class CondVar {
 public:
  using Clock = std::chrono::steady_clock;

  void Wait(Mutex& mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();  // the caller's again
  }
  // False when `deadline` passed (spurious wake-ups return true too: the
  // caller re-checks its condition either way).
  bool WaitUntil(Mutex& mu, Clock::time_point deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    const bool woken = cv_.wait_until(lock, deadline) == std::cv_status::no_timeout;
    lock.release();
    return woken;
  }
  void NotifyOne() { cv_.notify_one(); }
  void NotifyAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace wharf
