// Doorbell: an eventfd rung with write(1) and drained with read().
#include "shm/doorbell.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <string_view>

namespace wharf::shm {
namespace {

std::string Name(int fd) { return "doorbell fd " + std::to_string(fd); }

}  // namespace

Result<Doorbell> Doorbell::Create() {
  const int fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, "eventfd");
  return Doorbell(UniqueFd(fd));
}

Result<Doorbell> Doorbell::Adopt(UniqueFd fd) {
  if (!fd.valid()) return InvalidArgumentError("doorbell: no fd");
  // An eventfd is an anonymous inode whose /proc link reads exactly this.
  const std::string link = "/proc/self/fd/" + std::to_string(fd.get());
  char target[64];
  const ssize_t n = ::readlink(link.c_str(), target, sizeof(target));
  if (n < 0) return ErrnoToStatus(errno, Name(fd.get()) + ": readlink " + link);
  constexpr std::string_view kEventfd = "anon_inode:[eventfd]";
  if (std::string_view(target, static_cast<size_t>(n)) != kEventfd) {
    return InvalidArgumentError(Name(fd.get()) + " is not an eventfd (" +
                                std::string(target, static_cast<size_t>(n)) + ")");
  }
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags | O_NONBLOCK) != 0) {
    return ErrnoToStatus(errno, Name(fd.get()) + ": setting O_NONBLOCK");
  }
  return Doorbell(std::move(fd));
}

Status Doorbell::Ring() {
  const uint64_t one = 1;
  while (true) {
    if (::write(fd_.get(), &one, sizeof(one)) == sizeof(one)) return OkStatus();
    if (errno == EINTR) continue;
    // The counter is at its maximum: a wake-up is already pending.
    if (errno == EAGAIN) return OkStatus();
    return ErrnoToStatus(errno, Name(fd_.get()) + ": ring");
  }
}

bool Doorbell::Drain() {
  uint64_t count = 0;
  while (true) {
    if (::read(fd_.get(), &count, sizeof(count)) == sizeof(count)) return count != 0;
    if (errno != EINTR) return false;  // EAGAIN: not rung
  }
}

Result<bool> Doorbell::Wait(int timeout_ms) {
  pollfd p{.fd = fd_.get(), .events = POLLIN, .revents = 0};
  while (true) {
    const int n = ::poll(&p, 1, timeout_ms);
    if (n >= 0) return n > 0;
    if (errno != EINTR) return ErrnoToStatus(errno, Name(fd_.get()) + ": poll");
  }
}

}  // namespace wharf::shm
