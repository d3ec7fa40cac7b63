// The hot-peer socket: opening it, and binding the main socket so that it
// can share its port.
#include "transport/udp/udp_hot_peer.h"

#include <netinet/in.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "transport/udp/udp_path_errors.h"
#include "transport/udp/udp_socket_options.h"

namespace wharf::transport::udp {
namespace {

bool SetReusePort(int fd) {
  const int one = 1;
  return setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) == 0;
}

bool SetV6Only(int fd, bool only) {
  const int value = only ? 1 : 0;
  return setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &value, sizeof(value)) == 0;
}

// Closes the fd unless released: every early return of OpenHotSocket.
struct FdGuard {
  int fd;
  ~FdGuard() {
    if (fd >= 0) close(fd);
  }
  int Release() {
    int f = fd;
    fd = -1;
    return f;
  }
};

}  // namespace

bool HotPeerTracker::NoteSend(const NetAddress& to) {
  if (has_hot_ && to == hot_) {
    sends_since_hot_ = 0;
    run_ = 0;
    return false;
  }
  if (has_hot_) ++sends_since_hot_;
  if (run_ > 0 && to == candidate_) {
    ++run_;
  } else {
    candidate_ = to;
    run_ = 1;
  }
  if (run_ < threshold_ || (has_hot_ && sends_since_hot_ < idle_sends_)) return false;
  run_ = 0;
  return true;
}

void HotPeerTracker::MadeHot(const NetAddress& to) {
  has_hot_ = true;
  hot_ = to;
  sends_since_hot_ = 0;
}

Status ConnectHotSocket(int fd, const sockaddr_storage& peer, socklen_t peer_len) {
  if (connect(fd, reinterpret_cast<const sockaddr*>(&peer), peer_len) != 0) {
    return ErrnoToStatus(errno, "hot-peer socket: connect");
  }
  return OkStatus();
}

Result<int> OpenHotSocket(const HotSocketSetup& setup, const sockaddr_storage& peer,
                          socklen_t peer_len) {
  const std::string where = "hot-peer socket on " + setup.local.ToString();
  FdGuard fd{socket(setup.ipv6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
                    IPPROTO_UDP)};
  if (fd.fd < 0) return ErrnoToStatus(errno, where + ": socket");
  if (setup.ipv6 && !SetV6Only(fd.fd, !setup.dual_stack)) {
    return ErrnoToStatus(errno, where + ": IPV6_V6ONLY");
  }
  if (!SetReusePort(fd.fd)) return ErrnoToStatus(errno, where + ": SO_REUSEPORT");
  // The peer's packets arrive here: the same room as the main socket.
  if (setup.recv_buffer_bytes > 0) {
    WHARF_RETURN_IF_ERROR(
        SetBufferBytes(fd.fd, BufferKind::kReceive, setup.recv_buffer_bytes).status());
  }
  if (setup.send_buffer_bytes > 0) {
    WHARF_RETURN_IF_ERROR(SetBufferBytes(fd.fd, BufferKind::kSend, setup.send_buffer_bytes).status());
  }
  // The same per-packet behaviour as the main socket: reads with or without
  // a GRO control message alike, the same default marking, DF.
  if (setup.gro && !EnableGro(fd.fd)) return InternalError(where + ": UDP_GRO refused");
  if (!setup.ipv6 || setup.dual_stack) (void)SetSocketTos(fd.fd, true, static_cast<uint8_t>(setup.tos_v4));
  if (setup.ipv6) (void)SetSocketTos(fd.fd, false, static_cast<uint8_t>(setup.tos_v6));
  (void)SetDontFragment(fd.fd, setup.ipv6);
  // ICMP reports for the peer queue here as for the main socket.
  (void)EnableRecvErr(fd.fd, setup.ipv6, setup.dual_stack);
  sockaddr_storage local;
  const auto local_len = static_cast<socklen_t>(setup.local.ToSockaddr(&local));
  if (bind(fd.fd, reinterpret_cast<const sockaddr*>(&local), local_len) != 0) {
    return ErrnoToStatus(errno, where + ": bind");
  }
  if (connect(fd.fd, reinterpret_cast<const sockaddr*>(&peer), peer_len) != 0) {
    return ErrnoToStatus(errno, where + ": connect");
  }
  return fd.Release();
}

Status BindExclusiveReusePort(int fd, const NetAddress& address, bool ipv6_only) {
  sockaddr_storage storage;
  const auto len = static_cast<socklen_t>(address.ToSockaddr(&storage));
  auto* sa = reinterpret_cast<sockaddr*>(&storage);
  // A port another process picks between the probe's close and our bind
  // (only possible for port 0) is retried with a fresh one.
  constexpr int kAttempts = 4;
  for (int attempt = 0;; ++attempt) {
    FdGuard probe{socket(address.is_v6() ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_CLOEXEC,
                         IPPROTO_UDP)};
    if (probe.fd < 0) return ErrnoToStatus(errno, "socket for " + address.ToString());
    if (address.is_v6()) (void)SetV6Only(probe.fd, ipv6_only);
    if (bind(probe.fd, sa, len) != 0) return ErrnoToStatus(errno, "bind " + address.ToString());
    sockaddr_storage bound;
    socklen_t bound_len = sizeof(bound);
    if (getsockname(probe.fd, reinterpret_cast<sockaddr*>(&bound), &bound_len) != 0) {
      return ErrnoToStatus(errno, "getsockname " + address.ToString());
    }
    close(probe.Release());
    if (!SetReusePort(fd)) return ErrnoToStatus(errno, "SO_REUSEPORT on " + address.ToString());
    if (bind(fd, reinterpret_cast<const sockaddr*>(&bound), bound_len) == 0) return OkStatus();
    const int err = errno;
    if (err != EADDRINUSE || address.port() != 0 || attempt + 1 == kAttempts) {
      return ErrnoToStatus(err, "bind " + address.ToString());
    }
  }
}

}  // namespace wharf::transport::udp
