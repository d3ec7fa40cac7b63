// Non-blocking TCP socket helpers for the stream transport.
#include "transport/tcp/tcp_socket.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <string>

namespace wharf::transport::tcp {
namespace {

bool IsV4Mapped(const std::array<uint8_t, 16>& ip) {
  static constexpr uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(ip.data(), kPrefix, sizeof(kPrefix)) == 0;
}

Result<NetAddress> FromKernel(const sockaddr_storage& address, socklen_t len) {
  WHARF_ASSIGN_OR_RETURN(NetAddress result,
                         NetAddress::FromSockaddr(reinterpret_cast<const sockaddr*>(&address), len));
  if (result.is_v6() && IsV4Mapped(result.ip_bytes())) {
    uint32_t be = 0;
    std::memcpy(&be, &result.ip_bytes()[12], 4);
    return NetAddress::Ipv4(ntohl(be), result.port());
  }
  return result;
}

// Closes `fd` unless released: every early return of a setup path closes.
class FdGuard {
 public:
  explicit FdGuard(int fd) : fd_(fd) {}
  ~FdGuard() {
    if (fd_ >= 0) close(fd_);
  }
  FdGuard(const FdGuard&) = delete;
  FdGuard& operator=(const FdGuard&) = delete;
  int Release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

Status SetInt(int fd, int level, int name, int value, const char* what) {
  if (setsockopt(fd, level, name, &value, sizeof(value)) != 0) {
    return ErrnoToStatus(errno, std::string("setsockopt ") + what + " " + std::to_string(value));
  }
  return OkStatus();
}

// Errors of accept4 that concern only the connection being accepted.
bool IsPerConnectionAcceptError(int err) {
  return err == ECONNABORTED || err == EPROTO || err == ENETDOWN || err == ENOPROTOOPT ||
         err == EHOSTDOWN || err == ENONET || err == EHOSTUNREACH || err == EOPNOTSUPP ||
         err == ENETUNREACH || err == EPERM;
}

}  // namespace

Result<int> OpenListener(const NetAddress& bind_address, bool ipv6_only, int backlog) {
  if (bind_address.family() == NetAddress::Family::kNone) {
    return InvalidArgumentError("TCP listener: no bind address given");
  }
  const bool v6 = bind_address.is_v6();
  const int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoToStatus(errno, "socket for " + bind_address.ToString());
  FdGuard guard(fd);
  const std::string where = "TCP listener on " + bind_address.ToString();
  WHARF_RETURN_IF_ERROR(SetInt(fd, SOL_SOCKET, SO_REUSEADDR, 1, "SO_REUSEADDR").WithContext(where));
  if (v6) {
    WHARF_RETURN_IF_ERROR(
        SetInt(fd, IPPROTO_IPV6, IPV6_V6ONLY, ipv6_only ? 1 : 0, "IPV6_V6ONLY").WithContext(where));
  }
  sockaddr_storage address;
  const auto len = static_cast<socklen_t>(bind_address.ToSockaddr(&address));
  if (bind(fd, reinterpret_cast<const sockaddr*>(&address), len) != 0) {
    return ErrnoToStatus(errno, "bind " + bind_address.ToString());
  }
  if (listen(fd, backlog) != 0) return ErrnoToStatus(errno, "listen " + bind_address.ToString());
  return guard.Release();
}

Result<std::optional<Accepted>> Accept(int listen_fd) {
  sockaddr_storage address;
  socklen_t len = sizeof(address);
  const int fd =
      accept4(listen_fd, reinterpret_cast<sockaddr*>(&address), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == EAGAIN || err == EWOULDBLOCK || err == EINTR || IsPerConnectionAcceptError(err)) {
      return std::optional<Accepted>();
    }
    return ErrnoToStatus(err, "accept");
  }
  FdGuard guard(fd);
  WHARF_ASSIGN_OR_RETURN(NetAddress peer, FromKernel(address, len));
  return std::optional<Accepted>(Accepted{guard.Release(), peer});
}

namespace {

// A connect to a port of this host that nothing listens on can connect the
// socket to itself when the kernel picks that very port as its source
// (TCP's simultaneous open). Nobody is there: it is a refusal.
bool ConnectedToItself(int fd) {
  sockaddr_storage local{};
  sockaddr_storage peer{};
  socklen_t local_len = sizeof(local);
  socklen_t peer_len = sizeof(peer);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0 ||
      getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) {
    return false;
  }
  Result<NetAddress> a = FromKernel(local, local_len);
  Result<NetAddress> b = FromKernel(peer, peer_len);
  return a.ok() && b.ok() && *a == *b;
}

Status SelfConnectRefused(const NetAddress& to, int* error) {
  *error = ECONNREFUSED;
  return ErrnoToStatus(ECONNREFUSED, "connect " + to.ToString() +
                                         " (connected to itself: nothing listens there)");
}

}  // namespace

Result<int> StartConnect(const NetAddress& to, bool* done, const NetAddress& from, int* error) {
  *done = false;
  int ignored = 0;
  if (error == nullptr) error = &ignored;
  *error = 0;
  if (to.family() == NetAddress::Family::kNone || to.port() == 0) {
    return InvalidArgumentError("connect: no address to connect to ('" + to.ToString() + "')");
  }
  const int fd = socket(to.is_v6() ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = errno;
    return ErrnoToStatus(*error, "socket for " + to.ToString());
  }
  FdGuard guard(fd);
  const auto& ip = from.ip_bytes();
  const bool wildcard = std::all_of(ip.begin(), ip.end(), [](uint8_t b) { return b == 0; });
  if (from.family() == to.family() && !wildcard) {
    sockaddr_storage source;
    const auto len = static_cast<socklen_t>(from.WithPort(0).ToSockaddr(&source));
    if (bind(fd, reinterpret_cast<const sockaddr*>(&source), len) != 0) {
      *error = errno;
      return ErrnoToStatus(*error, "connect " + to.ToString() + ": bind source " + from.ToString());
    }
  }
  sockaddr_storage address;
  const auto len = static_cast<socklen_t>(to.ToSockaddr(&address));
  if (connect(fd, reinterpret_cast<const sockaddr*>(&address), len) == 0) {
    if (ConnectedToItself(fd)) return SelfConnectRefused(to, error);
    *done = true;
  } else if (errno != EINPROGRESS) {
    *error = errno;
    return ErrnoToStatus(*error, "connect " + to.ToString());
  }
  return guard.Release();
}

Status FinishConnect(int fd, const NetAddress& to, int* error) {
  int err = 0;
  socklen_t len = sizeof(err);
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
    if (error != nullptr) *error = errno;
    return ErrnoToStatus(errno, "connect " + to.ToString() + ": getsockopt SO_ERROR");
  }
  if (error != nullptr) *error = err;
  if (err != 0) return ErrnoToStatus(err, "connect " + to.ToString());
  int ignored = 0;
  if (ConnectedToItself(fd)) return SelfConnectRefused(to, error != nullptr ? error : &ignored);
  return OkStatus();
}

bool PeerGone(int err) {
  return err == ECONNREFUSED || err == EHOSTUNREACH || err == ENETUNREACH || err == EHOSTDOWN;
}

Status ApplyOptions(int fd, const SocketOptions& options) {
  if (options.no_delay) WHARF_RETURN_IF_ERROR(SetInt(fd, IPPROTO_TCP, TCP_NODELAY, 1, "TCP_NODELAY"));
  if (options.notsent_lowat_bytes > 0) {
    WHARF_RETURN_IF_ERROR(SetInt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, options.notsent_lowat_bytes,
                                 "TCP_NOTSENT_LOWAT"));
  }
  if (options.user_timeout_ms > 0) {
    WHARF_RETURN_IF_ERROR(SetInt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT,
                                 static_cast<int>(options.user_timeout_ms), "TCP_USER_TIMEOUT"));
  }
  if (options.send_buffer_bytes > 0) {
    WHARF_RETURN_IF_ERROR(
        SetInt(fd, SOL_SOCKET, SO_SNDBUF, options.send_buffer_bytes, "SO_SNDBUF"));
  }
  if (options.recv_buffer_bytes > 0) {
    WHARF_RETURN_IF_ERROR(
        SetInt(fd, SOL_SOCKET, SO_RCVBUF, options.recv_buffer_bytes, "SO_RCVBUF"));
  }
  return OkStatus();
}

Status SetTrafficClass(int fd, uint8_t tos) {
  const int value = tos;
  const bool v4 = setsockopt(fd, IPPROTO_IP, IP_TOS, &value, sizeof(value)) == 0;
  const int v4_errno = errno;
  const bool v6 = setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &value, sizeof(value)) == 0;
  if (v4 || v6) return OkStatus();
  return ErrnoToStatus(v4_errno, "IP_TOS");
}

Result<NetAddress> LocalAddressOf(int fd) {
  sockaddr_storage address;
  socklen_t len = sizeof(address);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&address), &len) != 0) {
    return ErrnoToStatus(errno, "getsockname");
  }
  return FromKernel(address, len);
}

Result<NetAddress> PeerAddressOf(int fd) {
  sockaddr_storage address;
  socklen_t len = sizeof(address);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&address), &len) != 0) {
    return ErrnoToStatus(errno, "getpeername");
  }
  return FromKernel(address, len);
}

Result<int> GetIntOption(int fd, int level, int name) {
  int value = 0;
  socklen_t len = sizeof(value);
  if (getsockopt(fd, level, name, &value, &len) != 0) {
    return ErrnoToStatus(errno, "getsockopt " + std::to_string(name));
  }
  return value;
}

}  // namespace wharf::transport::tcp
