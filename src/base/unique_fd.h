// base/unique_fd.h: UniqueFd, an owning file descriptor (the control plane's
// sockets, received memfds, eventfds). Header-only; nothing else.
#pragma once

#include <unistd.h>

#include <utility>

namespace wharf {

// Owns one file descriptor and closes it on destruction, so that an fd a
// peer passed us cannot leak on any error path. Move-only; not thread-safe.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.Release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) Reset(other.Release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { Reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Gives up ownership without closing.
  int Release() { return std::exchange(fd_, -1); }
  // Closes the current fd (if any) and takes `fd`. close() errors are
  // ignored: the descriptor is released either way on Linux.
  void Reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace wharf
