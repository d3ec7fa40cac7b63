// The production UdpSyscalls: straight through to the kernel.
#include "transport/udp/udp_syscalls.h"

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
};

}  // namespace

UdpSyscalls& UdpSyscalls::Kernel() {
  // Never destroyed, so it is safe to use from other static destructors.
  static auto* kernel = new KernelSyscalls();
  return *kernel;
}

}  // namespace wharf::transport::udp
