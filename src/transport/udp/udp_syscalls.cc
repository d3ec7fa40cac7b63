// The production UdpSyscalls: straight through to the kernel.
#include "transport/udp/udp_syscalls.h"

#include <sys/types.h>

namespace wharf::transport::udp {
namespace {

class KernelSyscalls final : public UdpSyscalls {
 public:
  int SendMmsg(int fd, mmsghdr* msgs, unsigned int count) override {
    return sendmmsg(fd, msgs, count, 0);
  }
  int RecvMmsg(int fd, mmsghdr* msgs, unsigned int count) override {
    return recvmmsg(fd, msgs, count, MSG_DONTWAIT, nullptr);
  }
  int SendOne(int fd, mmsghdr* msg) override {
    const msghdr& hdr = msg->msg_hdr;
    ssize_t n;
    if (hdr.msg_iovlen <= 1 && hdr.msg_controllen == 0) {
      // One buffer, no control message: sendto, the kernel's cheapest send.
      const bool empty = hdr.msg_iovlen == 0;
      n = sendto(fd, empty ? nullptr : hdr.msg_iov[0].iov_base, empty ? 0 : hdr.msg_iov[0].iov_len,
                 0, static_cast<const sockaddr*>(hdr.msg_name), hdr.msg_namelen);
    } else {
      n = sendmsg(fd, &hdr, 0);
    }
    if (n < 0) return -1;
    msg->msg_len = static_cast<unsigned int>(n);
    return 1;
  }
  int RecvOne(int fd, mmsghdr* msg) override {
    const ssize_t n = recvmsg(fd, &msg->msg_hdr, MSG_DONTWAIT);
    if (n < 0) return -1;
    msg->msg_len = static_cast<unsigned int>(n);
    return 1;
  }
};

}  // namespace

UdpSyscalls& UdpSyscalls::Kernel() {
  // Never destroyed, so it is safe to use from other static destructors.
  static auto* kernel = new KernelSyscalls();
  return *kernel;
}

}  // namespace wharf::transport::udp
