// RunInSubprocess: fork, limits in the child, a pipe back, a deadline and
// SIGKILL in the parent.
//
// What the child may do. POSIX allows only async-signal-safe calls in the
// child of a multi-threaded process until it execs, yet the child here runs
// ordinary C++ (yaml-cpp allocates, throws and uses iostreams). That relies
// on glibc, which makes malloc usable in the child of fork(): its fork()
// takes every malloc arena lock before forking and reinitialises them in the
// child, and resets the stdio list lock the same way. A lock of any other
// kind that another thread happened to hold at the fork (a libstdc++ locale
// mutex while some thread calls std::locale::global, the dynamic loader's
// lock during a dlopen) stays held for ever in the child, which then stalls;
// that is seen from the parent as a child asleep without using CPU, and it
// is replaced by a fresh fork (the lock is almost surely free by then); at
// worst the deadline turns it into an error, never a hang. The allocator of
// AddressSanitizer as GCC 12 ships it is such a case (seen in this file's
// tests): unlike glibc's malloc it is not made consistent at fork, so under
// ASan a child of a busy multi-threaded process now and then blocks in malloc.
//
// The child never returns into the caller's code: it ends with _exit (no
// atexit handlers, no second flush of stdio buffers copied from the parent,
// no leak check of memory the parent owns).
#include "base/config_subprocess.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <optional>
#include <system_error>

namespace wharf {
namespace {

using Clock = std::chrono::steady_clock;

// The child's reply: a tag, the payload's length (8 bytes in native order:
// the same binary reads it), then the payload.
constexpr char kReplyResult = 'R';
constexpr char kReplyOutOfMemory = 'M';
constexpr char kReplyException = 'E';
constexpr size_t kHeaderBytes = 1 + sizeof(uint64_t);

// The child's exit status when its parent thread died before it started.
constexpr int kExitOrphan = 111;

std::string ErrnoText(int err) { return std::system_category().message(err); }

// The bytes this process has mapped (VmSize), or 0 if unknown. The memory
// limit is relative to it: the child inherits every mapping of the parent,
// which under AddressSanitizer alone are terabytes of reserved shadow.
size_t MappedBytes() {
  const int fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[128];
  ssize_t n;
  do {
    n = ::read(fd, buf, sizeof(buf) - 1);
  } while (n < 0 && errno == EINTR);
  ::close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  const unsigned long long pages = std::strtoull(buf, nullptr, 10);
  const long page = ::sysconf(_SC_PAGESIZE);
  return page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : 0;
}

// Lowers a resource limit of the child (never raises the hard limit).
void LowerLimit(int resource, rlim_t soft, rlim_t hard) {
  struct rlimit old {};
  if (::getrlimit(resource, &old) != 0) return;
  struct rlimit lim {};
  lim.rlim_max = std::min(hard, old.rlim_max);
  lim.rlim_cur = std::min(soft, lim.rlim_max);
  ::setrlimit(resource, &lim);
}

bool WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

[[noreturn]] void RunChild(int fd, pid_t parent, const SubprocessLimits& limits,
                           rlim_t address_space, const std::function<std::string()>& work) {
  // Die with the thread that waits for this child; if it is already gone,
  // nobody will read the result.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(kExitOrphan);
  LowerLimit(RLIMIT_CORE, 0, 0);  // the parent reports a crash; no core files
  // A backstop in case the parent is stopped rather than dead: a
  // single-threaded child's CPU time never exceeds its wall time, so this
  // can only fire after the parent's deadline.
  const rlim_t cpu_seconds = static_cast<rlim_t>(std::max(0, limits.time_limit_ms) / 1000 + 2);
  LowerLimit(RLIMIT_CPU, cpu_seconds, cpu_seconds + 1);
  if (address_space != 0) LowerLimit(RLIMIT_AS, address_space, address_space);

  char tag = kReplyResult;
  std::string payload;
  try {
    payload = work();
  } catch (const std::bad_alloc&) {
    tag = kReplyOutOfMemory;
  } catch (const std::exception& e) {
    tag = kReplyException;
    try {
      payload = e.what();
    } catch (...) {
    }
  } catch (...) {
    tag = kReplyException;
  }
  if (limits.in_child != nullptr) limits.in_child();
  char header[kHeaderBytes];
  header[0] = tag;
  const uint64_t size = payload.size();
  std::memcpy(header + 1, &size, sizeof(size));
  (void)(WriteAll(fd, header, sizeof(header)) && WriteAll(fd, payload.data(), payload.size()));
  ::_exit(0);
}

// The parent's handle on the child: signals it through a pidfd where the
// kernel has them (Linux 5.3+), which cannot hit a recycled pid, and always
// kills and reaps it before going away, even when the parent's own code
// throws (std::bad_alloc while collecting the result).
class Child {
 public:
  explicit Child(pid_t pid) : pid_(pid) {
#ifdef SYS_pidfd_open
    pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#endif
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (!reaped_) {
      Kill();
      Reap();
    }
    if (pidfd_ >= 0) ::close(pidfd_);
  }

  // Readable (in poll) once the child has exited; -1 without pidfds.
  int pidfd() const { return pidfd_; }

  void Kill() {
    if (reaped_) return;
#ifdef SYS_pidfd_send_signal
    if (pidfd_ >= 0) {
      ::syscall(SYS_pidfd_send_signal, pidfd_, SIGKILL, nullptr, 0);
      return;
    }
#endif
    ::kill(pid_, SIGKILL);
  }

  // Waits for the child to end. Only after it ended or was killed.
  void Reap() {
    while (!reaped_) {
      if (::waitpid(pid_, &status_, 0) == pid_) {
        reaped_ = known_ = true;
      } else if (errno != EINTR) {
        reaped_ = true;  // ECHILD: reaped by someone else (SIGCHLD ignored); status unknown
      }
    }
  }

  // Reaps the child if it has ended; for kernels without pidfds.
  bool TryReap() {
    if (reaped_) return true;
    const pid_t r = ::waitpid(pid_, &status_, WNOHANG);
    if (r == pid_) reaped_ = known_ = true;
    if (r < 0 && errno == ECHILD) reaped_ = true;
    return reaped_;
  }

  // How the child ended, for an error message.
  std::string Describe() const {
    if (!known_) return "child process ended without a result";
    if (WIFSIGNALED(status_)) {
      const int sig = WTERMSIG(status_);
      const char* name = ::sigabbrev_np(sig);
      return name != nullptr ? fmt::format("child process was killed by signal {} (SIG{})", sig, name)
                             : fmt::format("child process was killed by signal {}", sig);
    }
    return fmt::format("child process exited with status {} without a result",
                       WEXITSTATUS(status_));
  }

 private:
  pid_t pid_;
  int pidfd_ = -1;
  bool reaped_ = false;
  bool known_ = false;  // status_ is valid
  int status_ = 0;
};

struct ScopedFd {
  int fd;
  ~ScopedFd() {
    if (fd >= 0) ::close(fd);
  }
};

enum class ReadState { kMore, kEof, kTooBig };

// Appends what the pipe holds now (it is non-blocking) to `reply`.
ReadState Drain(int fd, std::string& reply, size_t max_bytes) {
  char buf[64 * 1024];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno == EAGAIN ? ReadState::kMore : ReadState::kEof;
    if (n == 0) return ReadState::kEof;
    if (reply.size() + static_cast<size_t>(n) > max_bytes) return ReadState::kTooBig;
    reply.append(buf, static_cast<size_t>(n));
  }
}

// The payload's length once the header has arrived.
std::optional<uint64_t> PayloadSize(const std::string& reply) {
  if (reply.size() < kHeaderBytes) return std::nullopt;
  uint64_t size;
  std::memcpy(&size, reply.data() + 1, sizeof(size));
  return size;
}

// How often a silent child is sampled, and so how long it must sleep
// without using CPU to count as stalled (two samples).
constexpr std::chrono::milliseconds kStallCheck(100);

struct CpuSample {
  bool asleep;    // state S: waiting for something (a futex, for a stuck lock)
  uint64_t ticks;  // user + system CPU time, in clock ticks
};

// Samples /proc/<pid>/stat of our child; nullopt if that cannot be read (no
// /proc), which turns stall detection off.
std::optional<CpuSample> SampleCpu(pid_t pid) {
  const std::string path = fmt::format("/proc/{}/stat", pid);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char buf[1024];
  ssize_t n;
  do {
    n = ::read(fd, buf, sizeof(buf) - 1);
  } while (n < 0 && errno == EINTR);
  ::close(fd);
  if (n <= 0) return std::nullopt;
  buf[n] = '\0';
  // "pid (comm) state ppid ...": comm may hold anything, so start after its
  // last ')'. utime and stime are fields 14 and 15, 11 and 12 after state.
  const char* p = std::strrchr(buf, ')');
  if (p == nullptr || p[1] != ' ' || p[2] == '\0') return std::nullopt;
  CpuSample sample{p[2] == 'S', 0};
  p += 3;
  for (int field = 4; field <= 15; ++field) {
    char* end;
    const long long v = std::strtoll(p, &end, 10);
    if (end == p) return std::nullopt;
    // Our child, not a namesake (a /proc of another pid namespace)?
    if (field == 4 && v != ::getpid()) return std::nullopt;
    if (field >= 14) sample.ticks += static_cast<uint64_t>(v);
    p = end;
  }
  return sample;
}

// How one child ended, as far as the parent could see.
struct Attempt {
  enum Kind { kComplete, kTimedOut, kStalled, kTooBig, kFailed } kind = kFailed;
  std::string reply;    // kComplete: header and payload
  std::string failure;  // kFailed: what happened
};

Attempt RunOnce(const SubprocessLimits& limits, const std::function<std::string()>& work,
                Clock::time_point deadline, rlim_t address_space, size_t max_bytes) {
  Attempt a;
  int fds[2];
  // O_CLOEXEC: a program another thread execs concurrently gets neither end.
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    a.failure = "cannot start a child process: pipe: " + ErrnoText(errno);
    return a;
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    RunChild(fds[1], parent, limits, address_space, work);
  }
  const int fork_errno = errno;
  ::close(fds[1]);
  ScopedFd in{fds[0]};
  if (pid < 0) {
    a.failure = "cannot start a child process: fork: " + ErrnoText(fork_errno);
    return a;
  }
  Child child(pid);
  ::fcntl(in.fd, F_SETFL, ::fcntl(in.fd, F_GETFL) | O_NONBLOCK);

  // Collect the reply until it is complete, the pipe closes, the child
  // exits, stalls, or time runs out. The child's exit is watched as well as
  // the pipe: a process another thread forks meanwhile inherits the write
  // end, so end-of-file alone may come late.
  Clock::time_point last_progress = Clock::now();
  std::optional<CpuSample> last_sample;
  for (;;) {
    if (const auto size = PayloadSize(a.reply)) {
      if (*size > max_bytes - kHeaderBytes) {
        a.kind = Attempt::kTooBig;
        break;
      }
      if (a.reply.size() >= kHeaderBytes + *size) {
        a.kind = Attempt::kComplete;
        break;
      }
    }
    const Clock::time_point now = Clock::now();
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
    if (left.count() <= 0) {
      // Out of time; say "stalled" rather than "did not finish" when the
      // child is asleep, not computing.
      const std::optional<CpuSample> sample = SampleCpu(pid);
      a.kind = sample && sample->asleep && (!last_sample || sample->ticks == last_sample->ticks)
                   ? Attempt::kStalled
                   : Attempt::kTimedOut;
      break;
    }
    // No news for a while: is the child computing, or asleep for good?
    if (now - last_progress >= kStallCheck) {
      const std::optional<CpuSample> sample = SampleCpu(pid);
      if (sample && last_sample && sample->asleep && last_sample->asleep &&
          sample->ticks == last_sample->ticks) {
        a.kind = Attempt::kStalled;
        break;
      }
      last_sample = sample;
      last_progress = now;
    }
    pollfd pfd[2] = {{in.fd, POLLIN, 0}, {child.pidfd(), POLLIN, 0}};
    const nfds_t nfds = child.pidfd() >= 0 ? 2 : 1;
    // Without a pidfd, look at the child every 20 ms.
    const auto wake = child.pidfd() >= 0 ? kStallCheck : std::chrono::milliseconds(20);
    const int wait_ms = static_cast<int>(std::min<int64_t>(left.count(), wake.count()));
    if (::poll(pfd, nfds, wait_ms) < 0) {
      if (errno == EINTR) continue;
      a.failure = "poll: " + ErrnoText(errno);
      break;
    }
    const bool exited = child.pidfd() >= 0 ? pfd[1].revents != 0 : child.TryReap();
    const size_t before = a.reply.size();
    const ReadState state = Drain(in.fd, a.reply, max_bytes);
    if (a.reply.size() != before) {
      last_progress = Clock::now();
      last_sample.reset();
    }
    if (state == ReadState::kTooBig) {
      a.kind = Attempt::kTooBig;
      break;
    }
    if (state == ReadState::kEof || exited) {
      // Everything the child wrote is in the reply now (an exited child has
      // nothing in flight); one last look whether that is all of it.
      const auto size = PayloadSize(a.reply);
      if (size && *size <= max_bytes - kHeaderBytes && a.reply.size() >= kHeaderBytes + *size) {
        a.kind = Attempt::kComplete;
      }
      break;
    }
  }
  if (a.kind != Attempt::kComplete) child.Kill();  // a no-op when it already ended
  child.Reap();
  if (a.kind == Attempt::kFailed && a.failure.empty()) a.failure = child.Describe();
  return a;
}

}  // namespace

Result<std::string> RunInSubprocess(const SubprocessLimits& limits,
                                    const std::function<std::string()>& work) {
  const Clock::time_point deadline =
      Clock::now() + std::chrono::milliseconds(std::max(0, limits.time_limit_ms));
  rlim_t address_space = 0;
  if (limits.memory_limit_bytes != 0) {
    if (const size_t mapped = MappedBytes(); mapped != 0) {
      address_space = mapped > std::numeric_limits<rlim_t>::max() - limits.memory_limit_bytes
                          ? RLIM_INFINITY
                          : static_cast<rlim_t>(mapped + limits.memory_limit_bytes);
    }
  }
  // The result is at most what the child could allocate.
  const size_t max_bytes = limits.memory_limit_bytes != 0
                               ? limits.memory_limit_bytes + kHeaderBytes
                               : std::numeric_limits<size_t>::max();

  // A child that sleeps without progress is most likely stuck on a lock that
  // another thread of this process held at the fork (see the top of this
  // file); a fresh fork almost surely finds it free, so try again while
  // time remains. Only a child that keeps computing uses up the deadline.
  for (int stalled = 0;;) {
    Attempt a = RunOnce(limits, work, deadline, address_space, max_bytes);
    switch (a.kind) {
      case Attempt::kComplete: {
        std::string payload = a.reply.substr(kHeaderBytes, *PayloadSize(a.reply));
        if (a.reply[0] == kReplyResult) return payload;
        if (a.reply[0] == kReplyOutOfMemory) {
          return ResourceExhaustedError(
              fmt::format("ran out of memory (limit {} MiB)", limits.memory_limit_bytes >> 20));
        }
        return InternalError(payload.empty() ? std::string("child process threw an exception")
                                             : "child process threw: " + payload);
      }
      case Attempt::kTimedOut:
        return DeadlineExceededError(
            fmt::format("did not finish within {} ms", limits.time_limit_ms));
      case Attempt::kTooBig:
        return ResourceExhaustedError(
            fmt::format("sent a result larger than its memory limit ({} MiB)",
                        limits.memory_limit_bytes >> 20));
      case Attempt::kFailed:
        return InternalError(a.failure);
      case Attempt::kStalled:
        ++stalled;
        if (Clock::now() >= deadline) {
          return UnavailableError(fmt::format(
              "child process stalled asleep, {} times in {} ms (a lock held at the fork?)",
              stalled, limits.time_limit_ms));
        }
        break;
    }
  }
}

}  // namespace wharf
