// transport/udp/udp_syscalls.h: UdpSyscalls, the seam through which
// UdpDatagram makes its batched system calls and its run-time socket-option
// changes, so that tests can inject the errors a loopback socket never
// produces on demand (EAGAIN part-way through a batch, a pending
// ECONNREFUSED, a NIC that rejects GSO with EIO, a kernel without UDP_GRO).
// Production code uses Kernel(); nothing else lives here.
#pragma once

#include <sys/socket.h>

namespace wharf::transport::udp {

// Implementations behave like the system calls: a count on success, -1 with
// errno set on failure. Stateless in production; a test double may keep a
// script. Called from the thread that owns the UdpDatagram.
class UdpSyscalls {
 public:
  virtual ~UdpSyscalls() = default;

  virtual int SendMmsg(int fd, mmsghdr* msgs, unsigned int count) = 0;
  // Always non-blocking (MSG_DONTWAIT).
  virtual int RecvMmsg(int fd, mmsghdr* msgs, unsigned int count) = 0;

  // The same for exactly one message (returns 1 or -1, sets msg_len). The
  // kernel's single-message calls (sendto, recvmsg) skip work the batched
  // ones do per call, which a lone request or reply pays on its critical
  // path; a test double that scripts only the batched calls sees these as
  // batches of one.
  virtual int SendOne(int fd, mmsghdr* msg) { return SendMmsg(fd, msg, 1); }
  virtual int RecvOne(int fd, mmsghdr* msg) { return RecvMmsg(fd, msg, 1); }

  // setsockopt(fd, level, name, &value, sizeof(int)): 0, or -1 with errno.
  // Used for UDP_GRO, which adaptive GRO switches while the socket is in
  // use. This and PeekQueuedBytes default to the real calls (through libc:
  // they are rare, off the per-packet path), so doubles override them only
  // to script failures.
  virtual int SetIntOption(int fd, int level, int name, int value);
  // recv(fd, NULL, 0, MSG_PEEK | MSG_DONTWAIT | MSG_TRUNC): the length of
  // the first datagram queued on the socket, which stays queued; -1 with
  // errno EAGAIN when none is.
  virtual int PeekQueuedBytes(int fd);

  // The real system calls. A process-wide object that lives forever.
  static UdpSyscalls& Kernel();
};

}  // namespace wharf::transport::udp
