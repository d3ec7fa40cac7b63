// transport/udp/udp_egress_device.h: which kind of device a UDP path leaves
// through, for pacing. A software device (a veth pair between network
// namespaces, a tun, a dummy, a VRF) hands each packet on inside the send
// call: there is no wire and no device queue below the socket, so a pacer
// modelling a NIC queue would only slow the path to its own made-up rate.
// A hardware device (or one we cannot tell) has a wire and a queue.
//
// The kernel is asked, nothing is parsed from /sys: the driver comes from
// the ETHTOOL_GDRVINFO ioctl, which answers for the calling thread's
// network namespace (a process that entered one with setns still reads the
// /sys of the namespace that mounted it).
#pragma once

#include <string>
#include <string_view>

namespace wharf::transport::udp {

// True for the drivers of software devices with no wire beneath them:
// veth, tun (and tap), dummy, vrf. Not a bridge, macvlan, ipvlan or bond:
// those usually lead to a NIC.
bool IsSoftwareDriver(std::string_view driver);

// The driver name of interface `ifname` ("veth", "virtio_net", "mlx5_core"),
// asked through socket `fd` (any socket of the namespace); "" when the
// device does not say (no ethtool support, or the name is unknown).
std::string InterfaceDriver(int fd, const char* ifname);

}  // namespace wharf::transport::udp
