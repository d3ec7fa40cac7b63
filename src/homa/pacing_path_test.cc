// Which paths the pacer paces (homa.link_rate: auto or a rate): with auto, a
// path through a software device (Datagram::IsSoftwarePath: a veth pair) is
// left unpaced, and any other path is paced at link_bps; a configured rate
// paces every path that is not local. FakeNetwork + SimClock: the clock never
// moves, so only unpaced packets can leave.
#include <gtest/gtest.h>

#include <memory>

#include "base/sim_clock.h"
#include "homa/homa_endpoint.h"
#include "homa/homa_host.h"
#include "transport/fake/counting_datagram.h"
#include "transport/fake/fake_network.h"
#include "wire/packet.h"

namespace wharf::homa {
namespace {

using transport::NetAddress;
using transport::fake::CountingDatagram;
using transport::fake::FakeNetwork;

// DATA packets a 200 KB request puts on the wire before any time passes, from
// a host with `config` whose socket answers IsSoftwarePath with `software`.
int DataSentAtOnce(const HomaConfig& config, bool software) {
  SimClock clock(0);
  FakeNetwork net(clock, 1);
  CountingDatagram client_net(net.Attach("C", NetAddress::Ipv4(0xC6120001, 4000)));
  CountingDatagram server_net(net.Attach("S", NetAddress::Ipv4(0xC6120002, 4000)));
  client_net.software_path = software;
  auto host = HomaHost::Create(config, &client_net, clock);
  EXPECT_TRUE(host.ok()) << host.status();
  auto ep = (*host)->OpenEndpoint(uint16_t{1});
  EXPECT_TRUE(ep.ok()) << ep.status();
  auto id = (*ep)->SendRequestTo(server_net.LocalAddress(), wire::kDefaultEndpoint,
                                 Buffer::Allocate(200'000));
  EXPECT_TRUE(id.ok()) << id.status();
  for (int i = 0; i < 10; ++i) (*ep)->Poll();  // the clock stays put
  int data = 0;
  for (const auto& d : client_net.sent) {
    Result<wire::Packet> p = wire::Decode(d);
    if (p.ok() && p->common.type == wire::PacketType::kData) ++data;
  }
  return data;
}

HomaConfig SlowLink() {
  HomaConfig config;
  config.link_bps = 1'000'000'000;
  config.max_nic_backlog_ns = 5 * kNsPerUs;  // about one packet
  return config;
}

TEST(PacingPathTest, AutoLeavesASoftwarePathUnpaced) {
  HomaConfig config = SlowLink();
  ASSERT_TRUE(config.link_rate_auto);  // the default
  const int unsched_packets = static_cast<int>(config.unsched_bytes / 1400);
  EXPECT_GE(DataSentAtOnce(config, /*software=*/true), unsched_packets);
}

TEST(PacingPathTest, AutoPacesAPathThatCrossesAWire) {
  EXPECT_LE(DataSentAtOnce(SlowLink(), /*software=*/false), 2);
}

TEST(PacingPathTest, AConfiguredRatePacesSoftwarePathsToo) {
  HomaConfig config = SlowLink();
  config.link_rate_auto = false;  // homa.link_rate: 1Gbps in a config file
  EXPECT_LE(DataSentAtOnce(config, /*software=*/true), 2);
}

}  // namespace
}  // namespace wharf::homa
