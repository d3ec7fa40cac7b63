// ThreadNetns: setns(2) on the calling thread, and back.
#include "netns/thread_netns.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace wharf::netns {

Result<std::unique_ptr<ThreadNetns>> ThreadNetns::Enter(const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos) {
    return InvalidArgumentError("not a namespace name: '" + name + "'");
  }
  const int original = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (original < 0) return ErrnoToStatus(errno, "open /proc/thread-self/ns/net");
  const std::string path = "/var/run/netns/" + name;
  const int target = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (target < 0) {
    const int err = errno;
    ::close(original);
    return ErrnoToStatus(err, "open " + path);
  }
  const int rc = ::setns(target, CLONE_NEWNET);
  const int err = errno;
  ::close(target);
  if (rc != 0) {
    ::close(original);
    return ErrnoToStatus(err, "setns " + path);
  }
  return std::unique_ptr<ThreadNetns>(new ThreadNetns(original));
}

ThreadNetns::~ThreadNetns() {
  if (::setns(original_fd_, CLONE_NEWNET) != 0) {
    std::fprintf(stderr, "ThreadNetns: cannot return to the original namespace: %s\n",
                 std::strerror(errno));
    std::abort();
  }
  ::close(original_fd_);
}

}  // namespace wharf::netns
