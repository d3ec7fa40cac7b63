// The production UdpSyscalls: straight through to the kernel.
#include "transport/udp/udp_syscalls.h"

#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>

namespace wharf::transport::udp {
namespace {

// The calls go to the kernel through syscall(2), not libc's wrappers: those
// are thread-cancellation points, and in a process with more than one thread
// (an endpoint with handlers has its keeper) each call pays for enabling and
// disabling asynchronous cancellation, about 40 ns per packet here. Every
// call below is non-blocking, so it never needs to be a cancellation point.
inline ssize_t SysSendTo(int fd, const void* buf, size_t len, int flags, const sockaddr* to,
                         socklen_t to_len) {
  return syscall(SYS_sendto, fd, buf, len, flags, to, to_len);
}
inline ssize_t SysRecvFrom(int fd, void* buf, size_t len, int flags, sockaddr* from,
                           socklen_t* from_len) {
  return syscall(SYS_recvfrom, fd, buf, len, flags, from, from_len);
}

class KernelSyscalls final : public UdpSyscalls {
 public:
  int SendMmsg(int fd, mmsghdr* msgs, unsigned int count) override {
    return static_cast<int>(syscall(SYS_sendmmsg, fd, msgs, count, 0));
  }
  int RecvMmsg(int fd, mmsghdr* msgs, unsigned int count) override {
    return static_cast<int>(syscall(SYS_recvmmsg, fd, msgs, count, MSG_DONTWAIT, nullptr));
  }
  int SendOne(int fd, mmsghdr* msg) override {
    const msghdr& hdr = msg->msg_hdr;
    ssize_t n;
    if (hdr.msg_iovlen <= 1 && hdr.msg_controllen == 0) {
      // One buffer, no control message: sendto, the kernel's cheapest send.
      const bool empty = hdr.msg_iovlen == 0;
      n = SysSendTo(fd, empty ? nullptr : hdr.msg_iov[0].iov_base,
                    empty ? 0 : hdr.msg_iov[0].iov_len, 0,
                    static_cast<const sockaddr*>(hdr.msg_name), hdr.msg_namelen);
    } else {
      n = syscall(SYS_sendmsg, fd, &hdr, 0);
    }
    if (n < 0) return -1;
    msg->msg_len = static_cast<unsigned int>(n);
    return 1;
  }
  int RecvOne(int fd, mmsghdr* msg) override {
    msghdr& hdr = msg->msg_hdr;
    if (hdr.msg_iovlen == 1 && hdr.msg_controllen == 0) {
      // No control message wanted: recvfrom, the cheapest receive. With
      // MSG_TRUNC it returns the datagram's real length, from which the
      // truncation recvmsg would flag is told here.
      auto namelen = static_cast<socklen_t>(hdr.msg_namelen);
      const size_t room = hdr.msg_iov[0].iov_len;
      const ssize_t n = SysRecvFrom(fd, hdr.msg_iov[0].iov_base, room, MSG_DONTWAIT | MSG_TRUNC,
                                    static_cast<sockaddr*>(hdr.msg_name), &namelen);
      if (n < 0) return -1;
      hdr.msg_namelen = namelen;
      hdr.msg_flags = static_cast<size_t>(n) > room ? MSG_TRUNC : 0;
      msg->msg_len = static_cast<unsigned int>(std::min(static_cast<size_t>(n), room));
      return 1;
    }
    const ssize_t n = syscall(SYS_recvmsg, fd, &hdr, MSG_DONTWAIT);
    if (n < 0) return -1;
    msg->msg_len = static_cast<unsigned int>(n);
    return 1;
  }
};

}  // namespace

int UdpSyscalls::SetIntOption(int fd, int level, int name, int value) {
  return setsockopt(fd, level, name, &value, sizeof(value));
}

int UdpSyscalls::PeekQueuedBytes(int fd) {
  return static_cast<int>(recv(fd, nullptr, 0, MSG_PEEK | MSG_DONTWAIT | MSG_TRUNC));
}

UdpSyscalls& UdpSyscalls::Kernel() {
  // Never destroyed, so it is safe to use from other static destructors.
  static auto* kernel = new KernelSyscalls();
  return *kernel;
}

}  // namespace wharf::transport::udp
