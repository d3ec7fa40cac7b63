// integration/daemon_flood_test.cc: wharfd gives back what a flood made it
// allocate. A host that sends the first packet of many large messages (an
// incast, or garbage) makes wharfd's homa:// socket start a message buffer
// for each; once those RPCs die with their silent peers, the memory must go
// back to the system, not stay with the process (it once stayed: 8 MB of
// resident memory before, 60 MB long after every such RPC had ended).
//
// The flood comes from 400 UDP sockets on distinct loopback addresses
// (127.77.X.Y), each a peer of its own, each starting a few 256 KiB
// messages at wharfd's own endpoint and never answering a RESEND.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/sanitizer_build.h"
#include "base/unique_fd.h"
#include "integration/wharfd_process.h"
#include "wire/endpoint_id.h"
#include "wire/packet.h"

namespace wharf::integration {
namespace {

// Resident memory of process `pid`, in KiB (0 if /proc cannot tell).
uint64_t ResidentKiB(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  while (in >> key) {
    if (key == "VmRSS:") {
      uint64_t kib = 0;
      in >> kib;
      return kib;
    }
    std::string rest;
    std::getline(in, rest);
  }
  return 0;
}

uint16_t HomaPort(const nlohmann::json& status) {
  for (const auto& item : status["transports"].items()) {
    const std::string& name = item.key();
    if (name.rfind("homa://", 0) == 0) return static_cast<uint16_t>(std::stoi(name.substr(name.rfind(':') + 1)));
  }
  return 0;
}

// The first DATA packet of a message of `length` bytes (1000 bytes of it).
std::vector<std::byte> FirstPacket(uint64_t rpc_id, uint32_t length) {
  wire::DataHeader data;
  data.message_length = length;
  data.offset = 0;
  data.incoming = 10000;
  wire::CommonHeader common;
  common.type = wire::PacketType::kData;
  common.sport = 1;
  common.dport = wire::EndpointIdForName("wharfd");
  common.rpc_id = rpc_id;
  std::vector<std::byte> packet(wire::kDataHeaderBytes + 1000);
  EXPECT_TRUE(wire::EncodeDataHeader(common, data, packet).ok());
  return packet;
}

TEST(DaemonFloodTest, MemoryAFloodTookIsGivenBackOnceItsRpcsDie) {
  if (kSanitizedBuild) {
    // ASan keeps freed memory in its quarantine and maps shadow for it: the
    // resident size measures the sanitizer, not wharfd's pool.
    GTEST_SKIP() << "resident memory is not wharfd's under a sanitizer";
  }
  auto dir = TempDir::Create("wharfd-flood");
  ASSERT_TRUE(dir.ok()) << dir.status();
  auto daemon = WharfdProcess::Start({.socket = (*dir)->path() + "/wharfd.sock",
                                      .settings = {"homa.peer_timeout=300ms",
                                                   "homa.peer_idle_timeout=1s"}});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  const pid_t pid = (*daemon)->pid();
  Result<nlohmann::json> status = QueryStatus((*daemon)->options().socket);
  ASSERT_TRUE(status.ok()) << status.status();
  const uint16_t port = HomaPort(*status);
  ASSERT_NE(port, 0) << status->dump();
  ASSERT_TRUE(WaitUntilIdle(pid));
  const uint64_t before_kib = ResidentKiB(pid);
  ASSERT_GT(before_kib, 0u);

  constexpr int kPeers = 400;
  constexpr int kMessagesPerPeer = 16;
  std::vector<UniqueFd> peers;
  for (int i = 0; i < kPeers; ++i) {
    UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    sockaddr_in from{};
    from.sin_family = AF_INET;
    from.sin_addr.s_addr = htonl((127u << 24) | (77u << 16) | ((i / 250) << 8) | (1 + i % 250));
    ASSERT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&from), sizeof from), 0) << i;
    peers.push_back(std::move(fd));
  }
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::mt19937_64 rng(26);
  auto wave = [&](int messages_per_peer) {
    for (int m = 0; m < messages_per_peer; ++m) {
      for (int i = 0; i < kPeers; ++i) {
        const std::vector<std::byte> packet = FirstPacket((rng() >> 2) << 1, 256 << 10);
        (void)::sendto(peers[i].get(), packet.data(), packet.size(), 0,
                       reinterpret_cast<const sockaddr*>(&to), sizeof to);
      }
      // Paced, so that wharfd's socket buffer keeps up and the flood lands.
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  };
  // A first wave that dies before the second comes, as in a flood that
  // lasts longer than the peer timeout: glibc, seeing large blocks freed,
  // then serves the next ones from its heap, which it keeps.
  wave(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  wave(kMessagesPerPeer);
  uint64_t peak_kib = ResidentKiB(pid);
  // The flood landed: without that, the test below would prove nothing.
  status = QueryStatus((*daemon)->options().socket);
  ASSERT_TRUE(status.ok()) << status.status();
  uint64_t allocated = 0;
  for (const auto& item : (*status)["transports"].items()) {
    allocated += item.value().value("homa.receive_buffers_allocated", uint64_t{0});
  }
  EXPECT_GT(allocated, uint64_t{kPeers}) << status->dump();

  // The RPCs die with their silent peers (peer_timeout), the peers are
  // forgotten (peer_idle_timeout), the idle blocks go (1-2 s): resident
  // memory comes back near where it was.
  uint64_t now_kib = peak_kib;
  const bool back = PollUntil(
      [&] {
        now_kib = ResidentKiB(pid);
        peak_kib = std::max(peak_kib, now_kib);
        return now_kib <= before_kib + 8 * 1024;
      },
      20 * kNsPerSec, 100 * kNsPerMs);
  EXPECT_TRUE(back) << "resident " << before_kib << " KiB before the flood, " << peak_kib
                    << " KiB at most, " << now_kib << " KiB 20 s later";
  RecordProperty("rss_before_kib", std::to_string(before_kib));
  RecordProperty("rss_peak_kib", std::to_string(peak_kib));
  RecordProperty("rss_after_kib", std::to_string(now_kib));
  EXPECT_TRUE((*daemon)->Stop().ok());
}

}  // namespace
}  // namespace wharf::integration
