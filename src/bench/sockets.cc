// Socket plumbing for the kernel baselines.
#include "bench/sockets.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace wharf::bench {

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) Reset(other.Release());
  return *this;
}

int UniqueFd::Release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

void UniqueFd::Reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

uint16_t SocketAddress::port() const {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  if (family() == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
  }
  return 0;
}

void SocketAddress::set_port(uint16_t port) {
  if (family() == AF_INET) reinterpret_cast<sockaddr_in*>(&storage)->sin_port = htons(port);
  if (family() == AF_INET6) reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port = htons(port);
}

std::string SocketAddress::ToString() const {
  char text[INET6_ADDRSTRLEN] = {};
  if (family() == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr, text,
                sizeof(text));
    return std::string(text) + ":" + std::to_string(port());
  }
  if (family() == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr, text,
                sizeof(text));
    return "[" + std::string(text) + "]:" + std::to_string(port());
  }
  return "none";
}

Result<SocketAddress> ParseSocketAddress(std::string_view host, uint16_t port) {
  std::string text(host);
  // "[::1]" is accepted as well as "::1".
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
    text = text.substr(1, text.size() - 2);
  }
  SocketAddress address;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&address.storage);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&address.storage);
  if (::inet_pton(AF_INET, text.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    address.length = sizeof(sockaddr_in);
  } else if (::inet_pton(AF_INET6, text.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    address.length = sizeof(sockaddr_in6);
  } else {
    return InvalidArgumentError("address '" + std::string(host) +
                                "': expected a numeric IPv4 or IPv6 address");
  }
  address.set_port(port);
  return address;
}

Result<UniqueFd> OpenSocket(int family, int type) {
  int fd = ::socket(family, type | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return ErrnoToStatus(errno, type == SOCK_STREAM ? "socket(TCP)" : "socket(UDP)");
  }
  return UniqueFd(fd);
}

Result<uint16_t> LocalPort(int fd) {
  SocketAddress local;
  local.length = sizeof(local.storage);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local.storage), &local.length) != 0) {
    return ErrnoToStatus(errno, "getsockname");
  }
  return local.port();
}

Status SetNonBlocking(int fd, bool non_blocking) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0) return ErrnoToStatus(errno, "fcntl(F_GETFL)");
  flags = non_blocking ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK);
  if (::fcntl(fd, F_SETFL, flags) != 0) return ErrnoToStatus(errno, "fcntl(F_SETFL)");
  return OkStatus();
}

Status SetReceiveTimeout(int fd, DurationNs timeout_ns) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout_ns / kNsPerSec);
  tv.tv_usec = static_cast<suseconds_t>((timeout_ns % kNsPerSec) / kNsPerUs);
  if (timeout_ns > 0 && tv.tv_sec == 0 && tv.tv_usec == 0) tv.tv_usec = 1;
  if (::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0) {
    return ErrnoToStatus(errno, "setsockopt(SO_RCVTIMEO)");
  }
  return OkStatus();
}

Status SetTcpNoDelay(int fd) {
  int one = 1;
  if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0) {
    return ErrnoToStatus(errno, "setsockopt(TCP_NODELAY)");
  }
  return OkStatus();
}

namespace {

// A TCP socket with SO_REUSEADDR on which bind(host:port) was tried; the
// bind's errno (0 when it succeeded) goes to *bind_errno.
Result<UniqueFd> BindTcp(std::string_view host, uint16_t port, int* bind_errno) {
  WHARF_ASSIGN_OR_RETURN(SocketAddress address, ParseSocketAddress(host, port));
  WHARF_ASSIGN_OR_RETURN(UniqueFd fd, OpenSocket(address.family(), SOCK_STREAM));
  int one = 1;
  if (::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0) {
    return ErrnoToStatus(errno, "setsockopt(SO_REUSEADDR)");
  }
  *bind_errno = 0;
  if (::bind(fd.get(), address.get(), address.length) != 0) *bind_errno = errno;
  return fd;
}

}  // namespace

Result<uint16_t> PickFreeTcpPort(std::string_view host) {
  int bind_errno = 0;
  WHARF_ASSIGN_OR_RETURN(UniqueFd fd, BindTcp(host, 0, &bind_errno));
  if (bind_errno != 0) return ErrnoToStatus(bind_errno, "bind " + std::string(host) + ":0");
  return LocalPort(fd.get());
}

Result<bool> TcpPortBusy(std::string_view host, uint16_t port) {
  int bind_errno = 0;
  WHARF_ASSIGN_OR_RETURN(UniqueFd fd, BindTcp(host, port, &bind_errno));
  if (bind_errno == EADDRINUSE) return true;
  if (bind_errno != 0) {
    return ErrnoToStatus(bind_errno, "bind " + std::string(host) + ":" + std::to_string(port));
  }
  return false;
}

}  // namespace wharf::bench
