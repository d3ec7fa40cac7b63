// transport/tcp/tcp_syscalls.h: TcpSyscalls, the seam through which the TCP
// message transport (src/stream/) moves bytes on a connected socket, so that
// tests can inject what loopback never produces on demand: a short write, an
// EAGAIN after part of a batch, ECONNRESET in the middle of a message.
// Production code uses Kernel(). Nothing else lives here.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

namespace wharf::transport::tcp {

// Implementations behave like the system calls: a byte count on success, -1
// with errno set on failure. Both are non-blocking whatever the socket's mode,
// and Writev never raises SIGPIPE (a peer that went away is EPIPE). Stateless
// in production; a test double may keep a script. Called from the thread that
// owns the connection.
class TcpSyscalls {
 public:
  virtual ~TcpSyscalls() = default;

  virtual ssize_t Writev(int fd, const iovec* iov, int count) = 0;
  virtual ssize_t Readv(int fd, const iovec* iov, int count) = 0;

  // The real system calls (sendmsg / recvmsg with MSG_DONTWAIT, MSG_NOSIGNAL).
  // A process-wide object that lives forever.
  static TcpSyscalls& Kernel();
};

}  // namespace wharf::transport::tcp
