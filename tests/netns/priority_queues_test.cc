// The bottleneck's strict-priority queues (TbfOptions::priority_levels): a
// flood of unmarked datagrams overflows the link's queue while datagrams
// marked with the highest DSCP class selector all get through; with one
// FIFO the same flood drops most of them too. Plain UDP sockets created
// inside the hosts' namespaces; every wait is bounded.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "base/unique_fd.h"
#include "netns/bottleneck.h"
#include "netns/netns_cluster.h"
#include "netns/status_testing.h"
#include "netns/thread_netns.h"

namespace wharf::netns {
namespace {

constexpr int kPort = 7100;
constexpr int kLowDatagrams = 1000;  // 1.4 MB: ~1.1 s of a 10 Mbit/s link
constexpr int kHighEvery = 20;       // one marked datagram after every 20
constexpr int kHighDatagrams = kLowDatagrams / kHighEvery;

// A UDP socket created inside `netns` (it stays there), bound to `ip:port`.
UniqueFd UdpSocketIn(const std::string& netns, const std::string& ip, int port, int tos) {
  auto inside = ThreadNetns::Enter(netns);
  EXPECT_TRUE(inside.ok()) << inside.status();
  if (!inside.ok()) return UniqueFd();
  UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  EXPECT_TRUE(fd.valid());
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  EXPECT_EQ(inet_pton(AF_INET, ip.c_str(), &addr.sin_addr), 1);
  EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0)
      << std::strerror(errno);
  if (tos != 0) {
    EXPECT_EQ(::setsockopt(fd.get(), IPPROTO_IP, IP_TOS, &tos, sizeof(tos)), 0);
  }
  return fd;
}

struct Delivered {
  int low = 0;
  int high = 0;
};

// Floods host 0 -> host 1 through a 10 Mbit/s bottleneck with
// `priority_levels` queues: unmarked 1400-byte datagrams, and a 100-byte
// one marked DSCP CS7 (TOS 0xe0) after every kHighEvery of them.
Delivered Flood(int priority_levels) {
  Delivered got;
  auto created = NetnsCluster::Create({.hosts = 2});
  EXPECT_TRUE(created.ok()) << created.status();
  if (!created.ok()) return got;
  std::unique_ptr<NetnsCluster> cluster = std::move(created).value();
  auto applied = ApplyBottleneck(*cluster, 10'000'000, /*ingress=*/true, priority_levels);
  EXPECT_TRUE(applied.ok()) << applied.status();
  if (!applied.ok()) return got;

  UniqueFd receiver = UdpSocketIn(cluster->namespace_name(1), cluster->address(1), kPort, 0);
  UniqueFd low = UdpSocketIn(cluster->namespace_name(0), cluster->address(0), 0, 0);
  UniqueFd high = UdpSocketIn(cluster->namespace_name(0), cluster->address(0), 0, 0xe0);
  if (!receiver.valid() || !low.valid() || !high.valid()) return got;
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(kPort);
  inet_pton(AF_INET, cluster->address(1).c_str(), &to.sin_addr);

  char payload[1400];
  for (int i = 0; i < kLowDatagrams; ++i) {
    payload[0] = 'L';
    (void)::sendto(low.get(), payload, sizeof(payload), 0, reinterpret_cast<sockaddr*>(&to),
                   sizeof(to));
    if ((i + 1) % kHighEvery == 0) {
      payload[0] = 'H';
      (void)::sendto(high.get(), payload, 100, 0, reinterpret_cast<sockaddr*>(&to), sizeof(to));
    }
  }
  // What got queued drains in tens of ms (a class buffers 5 ms of the rate
  // plus the bucket, 9 kB here: the 50 marked datagrams, 6.4 kB on the
  // wire, fit); stop after 1 s of silence.
  while (true) {
    pollfd p{receiver.get(), POLLIN, 0};
    if (::poll(&p, 1, 1000) <= 0) break;
    char buffer[2048];
    const ssize_t n = ::recv(receiver.get(), buffer, sizeof(buffer), MSG_DONTWAIT);
    if (n <= 0) continue;
    (buffer[0] == 'H' ? got.high : got.low) += 1;
  }
  EXPECT_OK(cluster->Destroy());
  return got;
}

class PriorityQueuesTest : public testing::Test {
 protected:
  void SetUp() override {
    if (Status supported = NetnsCluster::CheckSupported(); !supported.ok()) {
      GTEST_SKIP() << "multi-host tests need root and network namespaces: " << supported;
    }
  }
};

TEST_F(PriorityQueuesTest, MarkedDatagramsPassAFloodThatOverflowsTheLink) {
  const Delivered got = Flood(8);
  std::printf("8 levels: %d of %d unmarked, %d of %d marked delivered\n", got.low, kLowDatagrams,
              got.high, kHighDatagrams);
  EXPECT_EQ(got.high, kHighDatagrams);
  EXPECT_GT(got.low, 0);
  EXPECT_LT(got.low, kLowDatagrams / 2) << "the flood should have overflowed the queue";
}

// The contrast: behind one FIFO the marked datagrams share the drops.
TEST_F(PriorityQueuesTest, OneFifoDropsMarkedDatagramsWithTheFlood) {
  const Delivered got = Flood(1);
  std::printf("one FIFO: %d of %d unmarked, %d of %d marked delivered\n", got.low, kLowDatagrams,
              got.high, kHighDatagrams);
  EXPECT_LT(got.low, kLowDatagrams / 2);
  EXPECT_LT(got.high, kHighDatagrams * 3 / 4);
}

TEST_F(PriorityQueuesTest, LevelsAreCheckedAndQueuesReplaceEarlierLimits) {
  auto cluster = NetnsCluster::Create({.hosts = 2});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  EXPECT_EQ((*cluster)->SetEgressRate(0, "10mbit", {.priority_levels = 9}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ((*cluster)->SetEgressRate(0, "10mbit", {.priority_levels = 0}).code(),
            StatusCode::kInvalidArgument);
  // Installed, installed again over itself (the throughput rows lift and
  // restore the bottleneck), over a tbf and back, and cleared.
  const TbfOptions prio = {.burst = "64kb", .latency = "5ms", .priority_levels = 4};
  ASSERT_OK((*cluster)->SetEgressRate(0, "10mbit", prio));
  ASSERT_OK((*cluster)->SetEgressRate(0, "20mbit", prio));
  ASSERT_OK((*cluster)->SetEgressRate(0, "10mbit", {.burst = "64kb", .latency = "5ms"}));
  ASSERT_OK((*cluster)->SetEgressRate(0, "10mbit", prio));
  ASSERT_OK((*cluster)->ClearRates(0));
  ASSERT_OK(ApplyBottleneck(**cluster, 10'000'000, true, 8).status());
  ASSERT_OK(ApplyBottleneck(**cluster, 10'000'000, true, 8).status());
}

}  // namespace
}  // namespace wharf::netns
