// HomaHost's send batching over real loopback UDP sockets: a batch of
// equal-size requests to one peer leaves as one sendmmsg carrying one GSO
// message when the socket has GSO, as plain sendmmsg messages when GSO is
// off (UdpOptions::enable_gso false) or when the kernel rejects the GSO send
// (injected, which turns GSO off for the socket), and the server gets every
// request either way. Time is a SimClock the test does not advance; every
// wait is a bounded loop of non-blocking polls.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/socket.h>

#include <cerrno>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/sim_clock.h"
#include "homa/homa_endpoint.h"
#include "homa/homa_host.h"
#include "transport/udp/udp_datagram.h"
#include "transport/udp/udp_syscalls.h"

namespace wharf::homa {
namespace {

using transport::NetAddress;
using transport::UdpDatagram;
using transport::UdpOptions;

constexpr int kRequests = 8;
constexpr size_t kRequestBytes = 100;  // one DATA datagram each, all one size

// The kernel's calls, except that a sendmmsg whose first message carries a
// GSO segment size fails with EIO (a device that cannot segment).
class GsoRejectingSyscalls final : public transport::udp::UdpSyscalls {
 public:
  int SendMmsg(int fd, mmsghdr* msgs, unsigned int count) override {
    if (CarriesGso(msgs[0].msg_hdr)) {
      ++gso_rejections;
      errno = EIO;
      return -1;
    }
    return Kernel().SendMmsg(fd, msgs, count);
  }
  int RecvMmsg(int fd, mmsghdr* msgs, unsigned int count) override {
    return Kernel().RecvMmsg(fd, msgs, count);
  }
  int gso_rejections = 0;

 private:
  static bool CarriesGso(msghdr& hdr) {
    for (cmsghdr* c = CMSG_FIRSTHDR(&hdr); c != nullptr; c = CMSG_NXTHDR(&hdr, c)) {
      if (c->cmsg_level == IPPROTO_UDP && c->cmsg_type == UDP_SEGMENT) return true;
    }
    return false;
  }
};

std::unique_ptr<UdpDatagram> OpenUdp(bool gso, transport::udp::UdpSyscalls* syscalls = nullptr) {
  UdpOptions options;
  options.bind = NetAddress::Ipv4(0x7f000001, 0);
  options.enable_gso = gso;
  // Only the main socket, so its counters see every send.
  options.hot_peer_socket = false;
  options.syscalls = syscalls;
  auto opened = UdpDatagram::Open(options);
  EXPECT_TRUE(opened.ok()) << opened.status();
  return opened.ok() ? std::move(opened).value() : nullptr;
}

Buffer Pattern(size_t size, int seed) {
  Buffer b = Buffer::Allocate(size);
  for (size_t i = 0; i < size; ++i) b.data()[i] = static_cast<std::byte>((i * 7 + seed) & 0xff);
  return b;
}

bool MatchesPattern(const Buffer& b, size_t size, int seed) {
  if (b.size() != size) return false;
  for (size_t i = 0; i < size; ++i) {
    if (b.data()[i] != static_cast<std::byte>((i * 7 + seed) & 0xff)) return false;
  }
  return true;
}

// A client and an echoing server host, each with one endpoint, on loopback.
struct Pair {
  explicit Pair(bool client_gso, transport::udp::UdpSyscalls* client_syscalls = nullptr) {
    client_net = OpenUdp(client_gso, client_syscalls);
    server_net = OpenUdp(true);
    if (!client_net || !server_net) return;
    auto c = HomaHost::Create(HomaConfig{}, client_net.get(), clock);
    auto s = HomaHost::Create(HomaConfig{}, server_net.get(), clock);
    EXPECT_TRUE(c.ok() && s.ok());
    if (!c.ok() || !s.ok()) return;
    client_host = std::move(c).value();
    server_host = std::move(s).value();
    auto ce = client_host->OpenEndpoint(uint16_t{1});
    auto se = server_host->OpenEndpoint(wire::kDefaultEndpoint);
    EXPECT_TRUE(ce.ok() && se.ok());
    if (!ce.ok() || !se.ok()) return;
    client = std::move(ce).value();
    server = std::move(se).value();
  }
  bool ok() const { return client && server; }

  // Sends kRequests equal-size requests inside one batch; the ids by seed.
  void SendBatch() {
    const uint64_t batches_before = client_net->stats().send_batches;
    client->BeginBatch();
    for (int i = 0; i < kRequests; ++i) {
      auto id = client->SendRequestTo(server_net->LocalAddress(), wire::kDefaultEndpoint,
                                      Pattern(kRequestBytes, i));
      ASSERT_TRUE(id.ok()) << id.status();
      seeds[*id] = i;
    }
    EXPECT_EQ(client_net->stats().send_batches, batches_before) << "a request left before EndBatch";
    client->EndBatch();
  }

  // Polls both sides (the server echoes) until every request was answered;
  // bounded.
  void RunUntilAllAnswered() {
    for (int step = 0; step < 200'000 && responses < kRequests; ++step) {
      server->Poll();
      HomaEvent e;
      while (server->PopEvent(&e)) {
        if (e.kind != HomaEvent::Kind::kRequest) continue;
        ++requests;
        ASSERT_TRUE(server->SendResponse(e.server_key, std::move(e.message)).ok());
      }
      client->Poll();
      while (client->PopEvent(&e)) {
        ASSERT_EQ(e.kind, HomaEvent::Kind::kResponse) << e.status;
        auto it = seeds.find(e.client_id);
        ASSERT_NE(it, seeds.end());
        EXPECT_TRUE(MatchesPattern(e.message, kRequestBytes, it->second));
        ++responses;
      }
    }
  }

  SimClock clock;
  std::unique_ptr<UdpDatagram> client_net;
  std::unique_ptr<UdpDatagram> server_net;
  std::unique_ptr<HomaHost> client_host;
  std::unique_ptr<HomaHost> server_host;
  std::unique_ptr<HomaEndpoint> client;
  std::unique_ptr<HomaEndpoint> server;
  std::map<uint64_t, int> seeds;
  int requests = 0;
  int responses = 0;
};

TEST(HomaBatchOverUdpTest, ABatchToOnePeerLeavesAsOneGsoSend) {
  Pair p(/*client_gso=*/true);
  ASSERT_TRUE(p.ok());
  if (!p.client_net->gso_enabled()) GTEST_SKIP() << "kernel lacks UDP GSO";
  p.SendBatch();
  const transport::UdpStats& s = p.client_net->stats();
  EXPECT_EQ(s.send_batches, 1u);
  EXPECT_EQ(s.gso_sends, 1u);
  EXPECT_EQ(s.sent, static_cast<uint64_t>(kRequests));
  p.RunUntilAllAnswered();
  EXPECT_EQ(p.requests, kRequests);
  EXPECT_EQ(p.responses, kRequests);
  EXPECT_EQ(p.server_net->stats().received, static_cast<uint64_t>(kRequests))
      << "the server read other than one datagram per request";
}

TEST(HomaBatchOverUdpTest, WithGsoOffABatchLeavesAsPlainMessagesOfOneSendmmsg) {
  Pair p(/*client_gso=*/false);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p.client_net->gso_enabled());
  p.SendBatch();
  const transport::UdpStats& s = p.client_net->stats();
  EXPECT_EQ(s.send_batches, 1u);
  EXPECT_EQ(s.gso_sends, 0u);
  EXPECT_EQ(s.sent, static_cast<uint64_t>(kRequests));
  p.RunUntilAllAnswered();
  EXPECT_EQ(p.requests, kRequests);
  EXPECT_EQ(p.responses, kRequests);
}

TEST(HomaBatchOverUdpTest, AGsoSendTheKernelRejectsFallsBackToPlainSendsAndAllArrive) {
  GsoRejectingSyscalls syscalls;
  Pair p(/*client_gso=*/true, &syscalls);
  ASSERT_TRUE(p.ok());
  if (!p.client_net->gso_enabled()) GTEST_SKIP() << "kernel lacks UDP GSO; nothing to fall back from";
  p.SendBatch();
  const transport::UdpStats& s = p.client_net->stats();
  EXPECT_EQ(syscalls.gso_rejections, 1);
  EXPECT_FALSE(p.client_net->gso_enabled());
  EXPECT_EQ(s.gso_fallbacks, 1u);
  EXPECT_EQ(s.gso_sends, 0u);
  EXPECT_EQ(s.sent, static_cast<uint64_t>(kRequests));
  p.RunUntilAllAnswered();
  EXPECT_EQ(p.requests, kRequests);
  EXPECT_EQ(p.responses, kRequests);
  // The next batch goes out plain at once, without another GSO attempt.
  const uint64_t sent_before = s.sent;
  p.SendBatch();
  EXPECT_EQ(syscalls.gso_rejections, 1);
  EXPECT_EQ(s.sent - sent_before, static_cast<uint64_t>(kRequests));
  p.responses = 0;
  p.RunUntilAllAnswered();
  EXPECT_EQ(p.responses, kRequests);
}

}  // namespace
}  // namespace wharf::homa
