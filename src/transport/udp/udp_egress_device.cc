// The ethtool driver query and the list of software drivers (see the header
// for why pacing cares).
#include "transport/udp/udp_egress_device.h"

#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>

#include <array>
#include <cstring>

namespace wharf::transport::udp {

bool IsSoftwareDriver(std::string_view driver) {
  static constexpr std::array<std::string_view, 4> kSoftware = {"veth", "tun", "dummy", "vrf"};
  for (std::string_view d : kSoftware) {
    if (driver == d) return true;
  }
  return false;
}

std::string InterfaceDriver(int fd, const char* ifname) {
  if (ifname == nullptr || std::strlen(ifname) >= IFNAMSIZ) return "";
  ethtool_drvinfo info{};
  info.cmd = ETHTOOL_GDRVINFO;
  ifreq request{};
  std::strncpy(request.ifr_name, ifname, IFNAMSIZ - 1);
  request.ifr_data = reinterpret_cast<char*>(&info);
  if (ioctl(fd, SIOCETHTOOL, &request) != 0) return "";
  info.driver[sizeof(info.driver) - 1] = '\0';
  return std::string(info.driver);
}

}  // namespace wharf::transport::udp
