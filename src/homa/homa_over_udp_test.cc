// HomaTransport over real loopback UDP sockets, with time from a SimClock
// that the test advances (the transport reads no other clock), for what
// only real sockets show: a relay that rewrites UDP addresses and ports (a
// NAT, Docker -p, a NodePort), and a flood of packets from 100,000 distinct
// sources. Every wait is a bounded loop of non-blocking polls.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/sim_clock.h"
#include "homa/homa_transport.h"
#include "transport/udp/udp_datagram.h"
#include "wire/packet.h"

namespace wharf::homa {
namespace {

using transport::NetAddress;
using transport::UdpDatagram;
using transport::UdpOptions;

NetAddress Loopback(uint16_t port = 0) { return NetAddress::Ipv4(0x7f000001, port); }

std::unique_ptr<UdpDatagram> OpenUdp() {
  UdpOptions options;
  options.bind = Loopback();
  auto opened = UdpDatagram::Open(options);
  EXPECT_TRUE(opened.ok()) << opened.status();
  return opened.ok() ? std::move(opened).value() : nullptr;
}

std::unique_ptr<HomaTransport> OpenHoma(const HomaConfig& config, UdpDatagram* net,
                                        const Clock& clock) {
  auto created = HomaTransport::Create(config, net, clock);
  EXPECT_TRUE(created.ok()) << created.status();
  return created.ok() ? std::move(created).value() : nullptr;
}

// A non-blocking plain UDP socket bound to `address`; -1 on failure.
int OpenPlainSocket(const NetAddress& address) {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_storage sa;
  const auto len = static_cast<socklen_t>(address.ToSockaddr(&sa));
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), len) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

NetAddress BoundAddress(int fd) {
  sockaddr_storage sa;
  socklen_t len = sizeof(sa);
  getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  auto a = NetAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&sa), len);
  return a.ok() ? *a : NetAddress();
}

void SendTo(int fd, const NetAddress& to, std::span<const std::byte> bytes) {
  sockaddr_storage sa;
  const auto len = static_cast<socklen_t>(to.ToSockaddr(&sa));
  (void)sendto(fd, bytes.data(), bytes.size(), 0, reinterpret_cast<sockaddr*>(&sa), len);
}

// A user-space UDP relay between one client and one server, as a NAT or a
// port forward sees them: the client talks to `front`, the server hears
// from `back`, so both the source and the destination port of every packet
// change on the way. Every `drop_every`-th packet is lost.
class Relay {
 public:
  Relay(const NetAddress& server, int drop_every) : server_(server), drop_every_(drop_every) {
    front_ = OpenPlainSocket(Loopback());
    back_ = OpenPlainSocket(Loopback());
  }
  ~Relay() {
    if (front_ >= 0) close(front_);
    if (back_ >= 0) close(back_);
  }
  bool ok() const { return front_ >= 0 && back_ >= 0; }
  NetAddress front() const { return BoundAddress(front_); }
  NetAddress back() const { return BoundAddress(back_); }
  uint64_t forwarded() const { return forwarded_; }
  uint64_t dropped() const { return dropped_; }

  // Forwards everything waiting, both ways; returns how many packets moved.
  int Pump() {
    int moved = 0;
    std::byte buffer[65536];
    for (int fd : {front_, back_}) {
      for (;;) {
        sockaddr_storage sa;
        socklen_t len = sizeof(sa);
        const ssize_t n = recvfrom(fd, buffer, sizeof(buffer), MSG_DONTWAIT,
                                   reinterpret_cast<sockaddr*>(&sa), &len);
        if (n < 0) break;
        ++moved;
        if (fd == front_) {
          auto from = NetAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&sa), len);
          if (from.ok()) client_ = *from;
        }
        if (++seen_ % drop_every_ == 0) {
          ++dropped_;
          continue;
        }
        ++forwarded_;
        std::span<const std::byte> bytes(buffer, static_cast<size_t>(n));
        if (fd == front_) {
          SendTo(back_, server_, bytes);
        } else if (client_.port() != 0) {
          SendTo(front_, client_, bytes);
        }
      }
    }
    return moved;
  }

 private:
  NetAddress server_;
  int drop_every_;
  int front_ = -1;
  int back_ = -1;
  NetAddress client_;
  uint64_t seen_ = 0;
  uint64_t forwarded_ = 0;
  uint64_t dropped_ = 0;
};

// Serves every request with an echo, counting runs per client id.
void ServeEchoes(HomaTransport& server, std::map<uint64_t, int>* runs,
                 std::vector<ServerRpcKey>* sources = nullptr) {
  HomaEvent e;
  while (server.PopEvent(&e)) {
    if (e.kind != HomaEvent::Kind::kRequest) continue;
    if (runs != nullptr) ++(*runs)[e.client_id];
    if (sources != nullptr) sources->push_back(e.server_key);
    (void)server.SendResponse(e.server_key, std::move(e.message));
  }
}

Buffer Pattern(size_t size, uint64_t seed) {
  Buffer b = Buffer::Allocate(size);
  for (size_t i = 0; i < size; ++i) b.data()[i] = static_cast<std::byte>((i * 7 + seed) & 0xff);
  return b;
}

bool MatchesPattern(const Buffer& b, size_t size, uint64_t seed) {
  if (b.size() != size) return false;
  for (size_t i = 0; i < size; ++i) {
    if (b.data()[i] != static_cast<std::byte>((i * 7 + seed) & 0xff)) return false;
  }
  return true;
}

TEST(HomaOverUdpTest, RpcsThroughAPortRewritingRelayRunOnceAndAllAnswer) {
  SimClock clock;
  auto server_net = OpenUdp();
  auto client_net = OpenUdp();
  ASSERT_TRUE(server_net && client_net);
  HomaConfig config;
  auto server = OpenHoma(config, server_net.get(), clock);
  auto client = OpenHoma(config, client_net.get(), clock);
  ASSERT_TRUE(server && client);
  Relay relay(server_net->LocalAddress(), /*drop_every=*/11);
  ASSERT_TRUE(relay.ok());
  ASSERT_NE(relay.front().port(), server_net->LocalAddress().port());

  constexpr int kRpcs = 120;
  constexpr size_t kInFlight = 8;
  const size_t sizes[] = {64, 1'500, 20'000, 150'000};
  std::map<uint64_t, size_t> pending;  // client id -> index
  std::map<uint64_t, int> runs;
  int issued = 0;
  int answered = 0;
  for (int step = 0; step < 200'000 && answered < kRpcs; ++step) {
    while (issued < kRpcs && pending.size() < kInFlight) {
      const size_t size = sizes[issued % 4];
      auto id = client->SendRequest(relay.front(), Pattern(size, issued));
      ASSERT_TRUE(id.ok()) << id.status();
      pending[*id] = static_cast<size_t>(issued++);
    }
    int work = relay.Pump();
    work += server->Poll().work;
    ServeEchoes(*server, &runs);
    work += client->Poll().work;
    HomaEvent e;
    while (client->PopEvent(&e)) {
      ASSERT_EQ(e.kind, HomaEvent::Kind::kResponse) << e.status;
      auto it = pending.find(e.client_id);
      ASSERT_NE(it, pending.end());
      const size_t index = it->second;
      EXPECT_TRUE(MatchesPattern(e.message, sizes[index % 4], index)) << "RPC " << index;
      pending.erase(it);
      ++answered;
    }
    // Time moves only when nothing is in motion, so lost packets are
    // recovered by the protocol's timers, never by a race.
    clock.AdvanceBy(work == 0 ? 1 * kNsPerMs : 10 * kNsPerUs);
  }
  EXPECT_EQ(answered, kRpcs);
  EXPECT_EQ(runs.size(), static_cast<size_t>(kRpcs));
  for (const auto& [id, count] : runs) EXPECT_EQ(count, 1) << "client id " << id;
  EXPECT_GT(relay.dropped(), 0u);
  EXPECT_EQ(server->stats().wrong_port, 0u);
  EXPECT_EQ(client->stats().client_timeouts, 0u);
}

// One well-formed homa packet from each of 100,000 sources (127.x.y.z, a
// fresh port each) at a server that a real client keeps calling: the client
// sees no error, the server's peer table stays under its cap, and once the
// sources are idle for homa.peer_idle_timeout the table empties again.
TEST(HomaOverUdpTest, FloodOfDistinctSourcesStaysBoundedAndIdlesAway) {
  SimClock clock;
  auto server_net = OpenUdp();
  auto client_net = OpenUdp();
  ASSERT_TRUE(server_net && client_net);
  HomaConfig config;
  config.max_peers = 512;
  config.peer_idle_timeout_ns = 2 * kNsPerSec;
  auto server = OpenHoma(config, server_net.get(), clock);
  auto client = OpenHoma(config, client_net.get(), clock);
  ASSERT_TRUE(server && client);
  const NetAddress server_addr = server_net->LocalAddress();

  // The packets the flood sends: a one-packet request, a RESEND, a GRANT
  // and an ACK, each with its own id.
  auto encode = [](const wire::Body& body, wire::PacketType type, uint64_t id) {
    wire::Packet p;
    p.common.type = type;
    p.common.rpc_id = id;
    p.body = body;
    std::vector<std::byte> out(wire::kMaxHeaderBytes + 64);
    auto n = wire::Encode(p, out);
    out.resize(n.ok() ? *n : 0);
    return out;
  };
  const std::byte payload[8] = {};
  wire::Data request;
  request.header.message_length = sizeof(payload);
  request.header.incoming = sizeof(payload);
  request.header.cutoff_version = config.cutoff_version;
  request.payload = payload;

  uint64_t calls_ok = 0;
  uint64_t in_flight_id = 0;
  size_t max_peers_seen = 0;
  auto pump = [&](int rounds) {
    for (int r = 0; r < rounds; ++r) {
      if (in_flight_id == 0) {
        auto id = client->SendRequest(server_addr, Pattern(100, calls_ok));
        ASSERT_TRUE(id.ok()) << id.status();
        in_flight_id = *id;
      }
      server->Poll();
      ServeEchoes(*server, nullptr);
      client->Poll();
      HomaEvent e;
      while (client->PopEvent(&e)) {
        ASSERT_EQ(e.kind, HomaEvent::Kind::kResponse) << e.status;
        ASSERT_EQ(e.client_id, in_flight_id);
        ++calls_ok;
        in_flight_id = 0;
      }
      max_peers_seen = std::max(max_peers_seen, server->num_peers());
      clock.AdvanceBy(20 * kNsPerUs);
    }
  };

  constexpr int kSources = 100'000;
  std::vector<std::byte> packet;
  for (int i = 0; i < kSources; ++i) {
    // 127.1.0.0 upwards: skips 127.0.0.0/16, where the sockets under test live.
    const uint32_t ip = 0x7f010000u + static_cast<uint32_t>(i);
    const uint64_t id = 2 * static_cast<uint64_t>(i + 1);
    switch (i % 4) {
      case 0: packet = encode(request, wire::PacketType::kData, id); break;
      case 1: packet = encode(wire::Resend{0, 100, 7}, wire::PacketType::kResend, id); break;
      case 2: packet = encode(wire::Grant{1000, 7, 0}, wire::PacketType::kGrant, id | 1); break;
      default: {
        wire::AckList acks;
        acks.count = 1;
        acks.acks[0] = {id, 0};
        packet = encode(acks, wire::PacketType::kAck, id);
      }
    }
    ASSERT_FALSE(packet.empty());
    const int fd = OpenPlainSocket(NetAddress::Ipv4(ip, 0));
    ASSERT_GE(fd, 0) << "bind 127.x.y.z: " << std::strerror(errno);
    SendTo(fd, server_addr, packet);
    close(fd);
    if (i % 64 == 63) {
      ASSERT_NO_FATAL_FAILURE(pump(2));
    }
  }
  ASSERT_NO_FATAL_FAILURE(pump(200));
  EXPECT_LE(max_peers_seen, config.max_peers);
  EXPECT_GT(server->peer_stats().refused, 0u);     // the cap was reached
  EXPECT_GT(server->stats().peers_unreachable, 0u);  // answers to closed ports drew ICMP
  EXPECT_GT(calls_ok, 100u);
  EXPECT_EQ(client->stats().client_timeouts, 0u);
  const PeerTableStats& peers = server->peer_stats();
  EXPECT_GT(peers.created, 0u);
  // Only request data may create a peer: three quarters of the sources
  // (RESEND, GRANT, ACK) are strangers and leave nothing behind.
  EXPECT_LE(peers.created + peers.refused, static_cast<uint64_t>(kSources / 4) + 10);
  EXPECT_GE(server->stats().from_stranger, static_cast<uint64_t>(kSources / 2));

  // The client stops; after the idle timeout (and a sweep of the table) the
  // server keeps no peer at all.
  // (pump issues a new call whenever none is in flight: stop right after
  // one completes instead.)
  for (int r = 0; r < 10'000; ++r) {
    server->Poll();
    ServeEchoes(*server, nullptr);
    client->Poll();
    HomaEvent e;
    while (client->PopEvent(&e)) {
      ASSERT_EQ(e.kind, HomaEvent::Kind::kResponse) << e.status;
      in_flight_id = 0;
    }
    if (in_flight_id == 0) break;
    clock.AdvanceBy(20 * kNsPerUs);
  }
  ASSERT_EQ(in_flight_id, 0u);
  for (int r = 0; r < 4'000 && server->num_peers() > 0; ++r) {
    server->Poll();
    ServeEchoes(*server, nullptr);
    client->Poll();
    clock.AdvanceBy(1 * kNsPerMs);
  }
  EXPECT_EQ(server->num_peers(), 0u);
  EXPECT_EQ(server->peer_stats().created, server->peer_stats().freed);
  EXPECT_EQ(client->num_peers(), 0u);
}

}  // namespace
}  // namespace wharf::homa
