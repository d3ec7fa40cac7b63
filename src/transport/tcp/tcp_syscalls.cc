// The production TcpSyscalls: straight through to the kernel.
#include "transport/tcp/tcp_syscalls.h"

#include <sys/socket.h>

namespace wharf::transport::tcp {
namespace {

class KernelSyscalls final : public TcpSyscalls {
 public:
  // sendmsg rather than writev: only sendmsg takes MSG_NOSIGNAL, and a write
  // to a connection the peer reset must be an EPIPE, not a process kill.
  ssize_t Writev(int fd, const iovec* iov, int count) override {
    msghdr msg{};
    msg.msg_iov = const_cast<iovec*>(iov);
    msg.msg_iovlen = static_cast<size_t>(count);
    return sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
  }
  ssize_t Readv(int fd, const iovec* iov, int count) override {
    msghdr msg{};
    msg.msg_iov = const_cast<iovec*>(iov);
    msg.msg_iovlen = static_cast<size_t>(count);
    return recvmsg(fd, &msg, MSG_DONTWAIT);
  }
};

}  // namespace

TcpSyscalls& TcpSyscalls::Kernel() {
  // Never destroyed, so it is safe to use from other static destructors.
  static auto* kernel = new KernelSyscalls();
  return *kernel;
}

}  // namespace wharf::transport::tcp
