// base/config_subprocess.h: RunInSubprocess, which runs a piece of work in a
// forked child process under a wall-clock and a memory limit and hands back
// the bytes it produced. It exists for ConfigDoc::Parse: yaml-cpp 0.7 loops
// forever on some malformed documents, and while a looping thread cannot be
// stopped, a looping process can be killed.
//
// Linux only (pipe2, prctl, pidfd). Safe to call from a multi-threaded
// process and from several threads at once; see config_subprocess.cc for what
// the child may and may not do.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "wharf/result.h"

namespace wharf {

struct SubprocessLimits {
  // Wall-clock time from fork to the last byte of the result; the child is
  // killed (SIGKILL) when it runs out.
  int time_limit_ms = 10'000;
  // Address space the child may map beyond what it inherits (RLIMIT_AS,
  // which makes allocation fail with std::bad_alloc); 0 for no limit. Also
  // the most bytes the parent accepts as a result.
  size_t memory_limit_bytes = size_t{1} << 30;
  // Testing hook: runs in the child after `work` returned, before the result
  // is sent (the config fuzzer copies its coverage counters out with it;
  // tests use it to stall or crash a child).
  void (*in_child)() = nullptr;
};

// Runs `work` in a child forked from this process and returns the string it
// returned. `work` runs on a copy of the caller's memory: it can read
// everything the caller can (references it captures stay valid), and nothing
// it changes is seen by the caller. It must not touch resources shared with
// the parent (sockets, shared memory) nor rely on other threads, which do not
// exist in the child.
//
// A child that sleeps without using CPU (about 200 ms with no output) is
// taken to be stuck on a lock another thread held at the fork; it is killed
// and `work` runs again in a new child, while time remains. So `work` must
// not sleep, and may run more than once.
//
// Errors (the child is gone by the time any is returned):
//   kDeadlineExceeded   did not finish within time_limit_ms (it was killed)
//   kUnavailable        every child stalled asleep until time ran out
//   kResourceExhausted  `work` threw std::bad_alloc (the memory limit), or
//                       its result was larger than memory_limit_bytes
//   kInternal           the child could not be started, or it died another
//                       way (a signal, another exception, an exit), named in
//                       the message
Result<std::string> RunInSubprocess(const SubprocessLimits& limits,
                                    const std::function<std::string()>& work);

}  // namespace wharf
