// MeasureProcessSwitch: see switch_probe.h.
#include "bench/switch_probe.h"

#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <string>
#include <thread>

#include "bench/affinity.h"

namespace wharf::bench {
namespace {

// In a MAP_SHARED page: the child's yield count and the stop flag.
struct SharedCounters {
  std::atomic<uint64_t> child_yields{0};
  std::atomic<bool> stop{false};
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared across processes");

// The forked child: only async-signal-safe calls (the parent may have other
// threads). It inherited the forking thread's CPU mask. Bounded: it stops
// on the flag, or after 10 s of turns should the parent die.
[[noreturn]] void TakeTurns(SharedCounters* shared) {
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  while (!shared->stop.load(std::memory_order_relaxed)) {
    sched_yield();
    const uint64_t n = shared->child_yields.fetch_add(1, std::memory_order_relaxed) + 1;
    if (n % 1024 == 0) {
      struct timespec now;
      clock_gettime(CLOCK_MONOTONIC, &now);
      if (now.tv_sec - start.tv_sec > 10) break;
    }
  }
  _exit(0);
}

}  // namespace

Result<double> MeasureProcessSwitch(const SwitchProbeOptions& options) {
  if (options.cpu < 0) {
    return InvalidArgumentError("process switch probe: CPU " + std::to_string(options.cpu) +
                                " is not a CPU");
  }
  void* page = mmap(nullptr, sizeof(SharedCounters), PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return ErrnoToStatus(errno, "process switch probe: mmap");
  auto* shared = new (page) SharedCounters();
  Result<double> result = InternalError("process switch probe: did not run");
  // A thread of its own, pinned, forks the child: the caller's CPU mask
  // stays as it was, and the child starts on the probe's CPU.
  std::thread prober([&] {
    if (!PinCallingThread(options.cpu)) {
      result = FailedPreconditionError("process switch probe: cannot pin a thread to CPU " +
                                       std::to_string(options.cpu));
      return;
    }
    const pid_t child = fork();
    if (child < 0) {
      result = ErrnoToStatus(errno, "process switch probe: fork");
      return;
    }
    if (child == 0) TakeTurns(shared);
    const Clock& clock = SystemClock::Get();
    // Turns counted only once the child runs.
    const TimeNs give_up = clock.NowNs() + 2 * kNsPerSec;
    while (shared->child_yields.load() == 0 && clock.NowNs() < give_up) sched_yield();
    const uint64_t child_before = shared->child_yields.load();
    const TimeNs start = clock.NowNs();
    const TimeNs until = start + options.duration_ns;
    uint64_t own = 0;
    TimeNs now = start;
    while (now < until) {
      sched_yield();
      ++own;
      now = clock.NowNs();
    }
    const uint64_t child_turns = shared->child_yields.load() - child_before;
    shared->stop.store(true);
    while (waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
    }
    // Taking turns, each side yields about as often as the other; a child
    // that barely ran means the yields went elsewhere (or nowhere).
    if (child_before == 0 || child_turns * 2 < own || own * 2 < child_turns) {
      result =
          UnavailableError("process switch probe: the two processes did not take turns on CPU " +
                           std::to_string(options.cpu) + " (" + std::to_string(own) + " and " +
                           std::to_string(child_turns) + " yields)");
      return;
    }
    result = static_cast<double>(now - start) / kNsPerUs / static_cast<double>(own + child_turns);
  });
  prober.join();
  shared->~SharedCounters();
  munmap(page, sizeof(SharedCounters));
  return result;
}

}  // namespace wharf::bench
