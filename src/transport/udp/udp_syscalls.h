// transport/udp/udp_syscalls.h: UdpSyscalls, the seam through which
// UdpDatagram makes its two batched system calls, so that tests can inject
// the errors a loopback socket never produces on demand (EAGAIN part-way
// through a batch, a pending ECONNREFUSED, a NIC that rejects GSO with EIO).
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

  // The real system calls. A process-wide object that lives forever.
  static UdpSyscalls& Kernel();
};

}  // namespace wharf::transport::udp
