// ClusterGuard: signal handlers writing to a self-pipe, and the watcher
// thread that tears the protected clusters down and re-raises the signal.
#include "bench/cluster_guard.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "netns/netns_cluster.h"

namespace wharf::bench {
namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};

// The write end of the live guard's pipe, or -1; read by the handler.
std::atomic<int> g_write_fd{-1};
// The dispositions the guard replaced, restored by its destructor.
struct sigaction g_previous[sizeof(kSignals) / sizeof(kSignals[0])];

void OnSignal(int signo) {
  const int saved_errno = errno;
  const int fd = g_write_fd.load(std::memory_order_relaxed);
  if (fd >= 0) {
    const unsigned char byte = static_cast<unsigned char>(signo);
    // A full pipe means a teardown is already pending: dropping is fine.
    [[maybe_unused]] const ssize_t n = ::write(fd, &byte, 1);
  }
  errno = saved_errno;
}

}  // namespace

Result<std::unique_ptr<ClusterGuard>> ClusterGuard::Install() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return ErrnoToStatus(errno, "pipe2");
  int expected = -1;
  if (!g_write_fd.compare_exchange_strong(expected, fds[1])) {
    ::close(fds[0]);
    ::close(fds[1]);
    return FailedPreconditionError("a ClusterGuard is already installed in this process");
  }
  auto guard = std::unique_ptr<ClusterGuard>(new ClusterGuard(fds[0], fds[1]));
  struct sigaction action {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (size_t i = 0; i < std::size(kSignals); ++i) {
    if (::sigaction(kSignals[i], &action, &g_previous[i]) != 0) {
      return ErrnoToStatus(errno, "sigaction");  // the destructor restores the ones set
    }
  }
  // Started last: the handlers' bytes wait in the pipe until it reads them.
  guard->watcher_ = std::thread([g = guard.get()] { g->Watch(); });
  return guard;
}

ClusterGuard::ClusterGuard(int read_fd, int write_fd) : read_fd_(read_fd), write_fd_(write_fd) {}

ClusterGuard::~ClusterGuard() {
  for (size_t i = 0; i < std::size(kSignals); ++i) ::sigaction(kSignals[i], &g_previous[i], nullptr);
  g_write_fd.store(-1);
  if (watcher_.joinable()) {
    const unsigned char stop = 0;
    // Blocking retry is not needed: the pipe is empty unless a signal byte
    // is pending, and then the watcher is about to end the process anyway.
    [[maybe_unused]] const ssize_t n = ::write(write_fd_, &stop, 1);
    watcher_.join();
  }
  ::close(read_fd_);
  ::close(write_fd_);
}

void ClusterGuard::Protect(std::string tag) {
  MutexLock lock(mu_);
  tags_.push_back(std::move(tag));
}

void ClusterGuard::Unprotect(const std::string& tag) {
  MutexLock lock(mu_);
  std::erase(tags_, tag);
}

void ClusterGuard::Watch() {
  while (true) {
    pollfd p{.fd = read_fd_, .events = POLLIN, .revents = 0};
    if (::poll(&p, 1, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    unsigned char byte = 0;
    const ssize_t n = ::read(read_fd_, &byte, 1);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0 || byte == 0) return;
    TearDownAndReraise(byte);
  }
}

void ClusterGuard::TearDownAndReraise(int signo) {
  std::vector<std::string> tags;
  {
    MutexLock lock(mu_);
    tags = tags_;
  }
  std::fprintf(stderr, "\nwharf: %s: removing %zu cluster(s) before exiting\n",
               ::strsignal(signo), tags.size());
  for (const std::string& tag : tags) {
    if (Status removed = netns::NetnsCluster::RemoveCluster(tag); !removed.ok()) {
      std::fprintf(stderr, "wharf: removing cluster %s: %s (the next run sweeps it)\n",
                   tag.c_str(), removed.ToString().c_str());
    }
  }
  std::fflush(stderr);
  // Die of the signal itself, so that the shell and the exit status see it.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(signo, &dfl, nullptr);
  sigset_t unblock;
  sigemptyset(&unblock);
  sigaddset(&unblock, signo);
  ::pthread_sigmask(SIG_UNBLOCK, &unblock, nullptr);
  ::raise(signo);  // this thread: delivered before raise returns
  // Not reached unless every thread blocks the signal.
  ::_exit(128 + signo);
}

}  // namespace wharf::bench
