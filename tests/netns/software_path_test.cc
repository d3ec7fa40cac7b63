// UdpDatagram::IsSoftwarePath on real routes inside a network namespace: a
// peer reached through the host's veth is a software path (homa leaves it
// unpaced with homa.link_rate auto), one reached through a bridge is not
// (a bridge usually leads to a NIC), and loopback is. Skips without root.
#include <gtest/gtest.h>

#include "netns/netns_cluster.h"
#include "netns/subprocess.h"
#include "netns/thread_netns.h"
#include "transport/udp/udp_datagram.h"
#include "transport/udp/udp_egress_device.h"

namespace wharf::netns {
namespace {

using transport::NetAddress;
using transport::UdpDatagram;

TEST(SoftwarePathTest, VethIsSoftwareABridgeIsNotLoopbackIs) {
  if (Status supported = NetnsCluster::CheckSupported(); !supported.ok()) {
    GTEST_SKIP() << "needs root and network namespaces: " << supported;
  }
  auto cluster = NetnsCluster::Create({.hosts = 2, .prefix = "wharfsoft"});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const std::string ns = (*cluster)->namespace_name(0);
  // A bridge with an address of its own in host 0: routes to 198.19.251.0/24
  // leave through it. Removed with the namespace. Clusters number their
  // hosts in 198.18.X.0/24 (X from the pid), so the bridge's subnet lies in
  // the other half of the benchmarking range, where no cluster's can be.
  Result<CommandOutput> bridge =
      RunChecked({"ip", "-n", ns, "-batch", "-"},
                 {.stdin_data = "link add wharfbr9 type bridge\n"
                                "addr add 198.19.251.1/24 dev wharfbr9\n"
                                "link set wharfbr9 up\n"},
                 10 * kNsPerSec);
  ASSERT_TRUE(bridge.ok()) << bridge.status();

  auto inside = ThreadNetns::Enter(ns);
  ASSERT_TRUE(inside.ok()) << inside.status();
  Result<NetAddress> bind = NetAddress::Parse((*cluster)->address(0) + ":0");
  ASSERT_TRUE(bind.ok()) << bind.status();
  auto socket = UdpDatagram::Open({.bind = *bind});
  ASSERT_TRUE(socket.ok()) << socket.status();

  Result<NetAddress> peer = NetAddress::Parse((*cluster)->address(1) + ":4000");
  ASSERT_TRUE(peer.ok());
  EXPECT_TRUE((*socket)->IsSoftwarePath(*peer)) << "host 1 is behind host 0's veth";
  EXPECT_EQ((*socket)->MaxDatagramBytesTo(*peer), 1472u) << "the cache keeps the MTU too";

  Result<NetAddress> behind_bridge = NetAddress::Parse("198.19.251.2:4000");
  ASSERT_TRUE(behind_bridge.ok());
  EXPECT_FALSE((*socket)->IsSoftwarePath(*behind_bridge));

  Result<NetAddress> loopback = NetAddress::Parse("127.0.0.1:4000");
  ASSERT_TRUE(loopback.ok());
  EXPECT_TRUE((*socket)->IsSoftwarePath(*loopback));

  EXPECT_EQ(transport::udp::InterfaceDriver(3, "no-such-if-x"), "");
}

TEST(SoftwarePathTest, DriverNamesOfDevicesWithoutAWire) {
  using transport::udp::IsSoftwareDriver;
  for (const char* d : {"veth", "tun", "dummy", "vrf"}) EXPECT_TRUE(IsSoftwareDriver(d)) << d;
  for (const char* d : {"bridge", "virtio_net", "mlx5_core", "macvlan", "bonding", ""}) {
    EXPECT_FALSE(IsSoftwareDriver(d)) << d;
  }
}

}  // namespace
}  // namespace wharf::netns
