// bench/sockets.h: the small socket plumbing the kernel baselines share:
// an owning fd, numeric IPv4/IPv6 addresses, timeouts and port helpers. It
// holds no benchmark logic; the wharf transports have their own socket code
// and this file is deliberately independent of it, so that a baseline
// measures the kernel and nothing of wharf.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "wharf/result.h"
#include "wharf/status.h"

namespace wharf::bench {

// Owns one file descriptor; closes it on destruction. Move-only.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.Release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { Reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Gives up ownership without closing.
  int Release();
  // Closes the current fd (if any) and takes `fd`.
  void Reset(int fd = -1);

 private:
  int fd_ = -1;
};

// A numeric socket address ("127.0.0.1", "198.18.0.2", "::1") and port.
struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;

  int family() const { return storage.ss_family; }
  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage); }
  uint16_t port() const;
  void set_port(uint16_t port);
  // "127.0.0.1:5201" or "[::1]:5201".
  std::string ToString() const;
};

// Parses a numeric host (no DNS) and port; InvalidArgument names the text.
Result<SocketAddress> ParseSocketAddress(std::string_view host, uint16_t port);

// socket(family, type | SOCK_CLOEXEC), with context in the error.
Result<UniqueFd> OpenSocket(int family, int type);

// The port the kernel bound `fd` to.
Result<uint16_t> LocalPort(int fd);

Status SetNonBlocking(int fd, bool non_blocking);
// SO_RCVTIMEO; 0 means "block forever".
Status SetReceiveTimeout(int fd, DurationNs timeout_ns);
Status SetTcpNoDelay(int fd);

// A TCP port on `host` that nobody listens on right now (bound with port 0,
// then closed: another process could take it before the caller does).
Result<uint16_t> PickFreeTcpPort(std::string_view host);
// True when binding `host:port` for TCP fails with EADDRINUSE (SO_REUSEADDR
// set, as servers set it, so TIME_WAIT leftovers do not count as busy).
Result<bool> TcpPortBusy(std::string_view host, uint16_t port);

}  // namespace wharf::bench
