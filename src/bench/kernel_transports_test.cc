// Tests for the kernel-udp and kernel-tcp cluster baselines over loopback:
// echoes of sizes around the datagram boundary up to 1 MB with several in
// flight, stale answers, bad input counted, a closed connection failing its
// RPCs. Every wait is bounded by a deadline.
#include "bench/kernel_transports.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <string>

#include "bench/kernel_udp_reassembly.h"
#include "bench/little_endian.h"

namespace wharf::bench {
namespace {

constexpr DurationNs kTimeoutNs = 20 * kNsPerSec;

class Sink final : public CompletionSink {
 public:
  void Done(uint32_t tag, bool ok) override { (ok ? completed : failed)[tag]++; }
  int total() const {
    int n = 0;
    for (const auto& [tag, count] : completed) n += count;
    for (const auto& [tag, count] : failed) n += count;
    return n;
  }
  std::map<uint32_t, int> completed, failed;
};

// Waits until `sink` saw `want` RPCs finish or the timeout passed.
void WaitFor(LoadTransport& t, Sink& sink, int want) {
  const Clock& clock = SystemClock::Get();
  const TimeNs deadline = clock.NowNs() + kTimeoutNs;
  while (sink.total() < want && clock.NowNs() < deadline) {
    t.Wait(std::min(deadline, clock.NowNs() + 100 * kNsPerMs), sink);
  }
}

SocketAddress Loopback(uint16_t port) {
  Result<SocketAddress> a = ParseSocketAddress("127.0.0.1", port);
  EXPECT_TRUE(a.ok());
  return *a;
}

const std::vector<uint64_t> kSizes = {
    1, 1471, 1473, 100'000, 1'000'000, kKernelUdpMaxPayloadBytes, kKernelUdpMaxPayloadBytes + 1};

// Issues every size at once (tags 0..n-1), twice over, and checks each
// tag completes exactly once per round.
void EchoesEverySize(LoadTransport& t) {
  for (int round = 0; round < 2; ++round) {
    Sink sink;
    for (size_t i = 0; i < kSizes.size(); ++i) {
      ASSERT_TRUE(t.Issue(static_cast<uint32_t>(i), 0, kSizes[i]).ok()) << kSizes[i];
    }
    WaitFor(t, sink, static_cast<int>(kSizes.size()));
    EXPECT_TRUE(sink.failed.empty()) << t.first_error();
    ASSERT_EQ(sink.completed.size(), kSizes.size()) << "round " << round;
    for (const auto& [tag, count] : sink.completed) EXPECT_EQ(count, 1) << "tag " << tag;
  }
}

TEST(KernelUdpTransportTest, EchoesEverySizeWithSeveralInFlight) {
  auto server = StartKernelUdpEchoServer("127.0.0.1", 0, SystemClock::Get());
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto t =
      OpenKernelUdpTransport("127.0.0.1", {Loopback((*server)->port())}, SystemClock::Get(), 16);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EchoesEverySize(**t);
  (*server)->Stop();
  EXPECT_NE((*server)->counters().find("messages=" + std::to_string(2 * kSizes.size())),
            std::string::npos)
      << (*server)->counters();
}

TEST(KernelUdpTransportTest, RejectsBadArguments) {
  auto t = OpenKernelUdpTransport("127.0.0.1", {Loopback(9)}, SystemClock::Get(), 2);
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE((*t)->Issue(2, 0, 10).ok());  // tag >= max_outstanding
  EXPECT_FALSE((*t)->Issue(0, 1, 10).ok());  // no such server
  EXPECT_FALSE((*t)->Issue(0, 0, kKernelUdpMaxMessageBytes + 1).ok());
}

// A hand-driven UDP server: the test decides what is answered.
TEST(KernelUdpTransportTest, StaleAnswerDoesNotCompleteTheTagsNewRpc) {
  Result<UniqueFd> fake = OpenSocket(AF_INET, SOCK_DGRAM);
  ASSERT_TRUE(fake.ok());
  SocketAddress addr = Loopback(0);
  ASSERT_EQ(::bind(fake->get(), addr.get(), addr.length), 0);
  ASSERT_TRUE(SetReceiveTimeout(fake->get(), 5 * kNsPerSec).ok());
  auto t = OpenKernelUdpTransport("127.0.0.1", {Loopback(*LocalPort(fake->get()))},
                                  SystemClock::Get(), 1);
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE((*t)->Issue(0, 0, 100).ok());
  ASSERT_TRUE((*t)->Issue(0, 0, 100).ok());  // the first abandoned, tag 0 reused
  std::string first(2048, '\0'), second(2048, '\0');
  sockaddr_storage from{};
  socklen_t from_len = sizeof(from);
  const ssize_t n1 = ::recvfrom(fake->get(), first.data(), first.size(), 0,
                                reinterpret_cast<sockaddr*>(&from), &from_len);
  const ssize_t n2 = ::recv(fake->get(), second.data(), second.size(), 0);
  ASSERT_EQ(n1, static_cast<ssize_t>(kKernelUdpHeaderBytes + 100));
  ASSERT_EQ(n2, n1);
  EXPECT_NE(DecodeKernelUdpHeader(first.data()).rpc_id,
            DecodeKernelUdpHeader(second.data()).rpc_id);
  // The old RPC's answer: ignored.
  ASSERT_EQ(
      ::sendto(fake->get(), first.data(), n1, 0, reinterpret_cast<sockaddr*>(&from), from_len), n1);
  Sink sink;
  (*t)->Wait(SystemClock::Get().NowNs() + 200 * kNsPerMs, sink);
  EXPECT_EQ(sink.total(), 0);
  // The new one's: completes tag 0 once.
  ASSERT_EQ(
      ::sendto(fake->get(), second.data(), n2, 0, reinterpret_cast<sockaddr*>(&from), from_len),
      n2);
  WaitFor(**t, sink, 1);
  EXPECT_EQ(sink.completed[0], 1);
}

TEST(KernelUdpTransportTest, ServerCountsMalformedDatagrams) {
  auto server = StartKernelUdpEchoServer("127.0.0.1", 0, SystemClock::Get());
  ASSERT_TRUE(server.ok());
  const SocketAddress to = Loopback((*server)->port());
  // Junk first: the server drops it and answers only the valid RPC after.
  Result<UniqueFd> raw = OpenSocket(AF_INET, SOCK_DGRAM);
  ASSERT_TRUE(raw.ok());
  const char junk[5] = {1, 2, 3, 4, 5};
  ASSERT_EQ(::sendto(raw->get(), junk, sizeof(junk), 0, to.get(), to.length), 5);
  auto t = OpenKernelUdpTransport("127.0.0.1", {to}, SystemClock::Get(), 1);
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE((*t)->Issue(0, 0, 3000).ok());
  Sink sink;
  WaitFor(**t, sink, 1);
  EXPECT_EQ(sink.completed[0], 1);
  (*server)->Stop();  // the junk came first on the socket, so it was counted
  EXPECT_NE((*server)->counters().find("malformed=1 "), std::string::npos) << (*server)->counters();
}

// --response-size: the server answers every request, whatever its size,
// with N bytes under the request's RPC id; the client completes them all.
TEST(KernelUdpTransportTest, FixedResponseSize) {
  constexpr uint64_t kResponse = 3000;  // three datagrams
  auto server = StartKernelUdpEchoServer("127.0.0.1", 0, SystemClock::Get(), kResponse);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const SocketAddress to = Loopback((*server)->port());
  // By hand first: one 100-byte request, its answer read datagram by datagram.
  Result<UniqueFd> raw = OpenSocket(AF_INET, SOCK_DGRAM);
  ASSERT_TRUE(raw.ok());
  SocketAddress any = Loopback(0);
  ASSERT_EQ(::bind(raw->get(), any.get(), any.length), 0);
  ASSERT_TRUE(SetReceiveTimeout(raw->get(), 10 * kNsPerSec).ok());
  std::string request(kKernelUdpHeaderBytes + 100, 'q');
  EncodeKernelUdpHeader({.rpc_id = 77, .offset = 0, .total_bytes = 100}, request.data());
  ASSERT_EQ(::sendto(raw->get(), request.data(), request.size(), 0, to.get(), to.length),
            static_cast<ssize_t>(request.size()));
  uint64_t payload = 0;
  while (payload < kResponse) {
    char datagram[2048];
    const ssize_t n = ::recv(raw->get(), datagram, sizeof(datagram), 0);
    ASSERT_GT(n, static_cast<ssize_t>(kKernelUdpHeaderBytes));
    const KernelUdpHeader h = DecodeKernelUdpHeader(datagram);
    EXPECT_EQ(h.rpc_id, 77u);
    EXPECT_EQ(h.total_bytes, kResponse);
    EXPECT_EQ(h.offset, payload);
    payload += static_cast<uint64_t>(n) - kKernelUdpHeaderBytes;
  }
  EXPECT_EQ(payload, kResponse);
  // Then the load transport, every size.
  auto t = OpenKernelUdpTransport("127.0.0.1", {to}, SystemClock::Get(), 16);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EchoesEverySize(**t);
  EXPECT_FALSE(StartKernelUdpEchoServer("127.0.0.1", 0, SystemClock::Get(),
                                        kKernelUdpMaxMessageBytes + 1)
                   .ok());
}

TEST(KernelTcpTransportTest, FixedResponseSize) {
  constexpr uint64_t kResponse = 100'000;
  auto server = StartKernelTcpEchoServer("127.0.0.1", 0, SystemClock::Get(), kResponse);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const SocketAddress to = Loopback((*server)->port());
  // By hand first: two frames (10 and 5000 bytes) in one write; each gets a
  // frame of kResponse bytes with its RPC id, in order.
  Result<UniqueFd> c = OpenSocket(AF_INET, SOCK_STREAM);
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(::connect(c->get(), to.get(), to.length), 0);
  ASSERT_TRUE(SetReceiveTimeout(c->get(), 10 * kNsPerSec).ok());
  std::string frames;
  for (const auto& [length, rpc_id] : {std::pair<uint32_t, uint64_t>{10, 5}, {5000, 6}}) {
    char header[kKernelTcpHeaderBytes];
    PutLe(kKernelTcpMagic, 4, header);
    PutLe(length, 4, header + 4);
    PutLe(rpc_id, 8, header + 8);
    frames.append(header, sizeof(header));
    frames.append(length, 'q');
  }
  ASSERT_EQ(::send(c->get(), frames.data(), frames.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(frames.size()));
  std::string in;
  const size_t want = 2 * (kKernelTcpHeaderBytes + kResponse);
  while (in.size() < want) {
    char buf[65536];
    const ssize_t n = ::recv(c->get(), buf, sizeof(buf), 0);
    ASSERT_GT(n, 0);
    in.append(buf, static_cast<size_t>(n));
  }
  ASSERT_EQ(in.size(), want);
  for (uint64_t i = 0; i < 2; ++i) {
    const char* h = in.data() + i * (kKernelTcpHeaderBytes + kResponse);
    EXPECT_EQ(GetLe(h, 4), kKernelTcpMagic);
    EXPECT_EQ(GetLe(h + 4, 4), kResponse);
    EXPECT_EQ(GetLe(h + 8, 8), 5 + i);
  }
  // Then the load transport, every size.
  auto t = OpenKernelTcpTransport("127.0.0.1", {to}, SystemClock::Get(), 16);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EchoesEverySize(**t);
  (*server)->Stop();
  EXPECT_NE((*server)->counters().find("messages=" + std::to_string(2 + 2 * kSizes.size())),
            std::string::npos)
      << (*server)->counters();
  EXPECT_FALSE(StartKernelTcpEchoServer("127.0.0.1", 0, SystemClock::Get(),
                                        kKernelTcpMaxMessageBytes + 1)
                   .ok());
}

TEST(KernelTcpTransportTest, EchoesEverySizeWithSeveralInFlight) {
  auto server = StartKernelTcpEchoServer("127.0.0.1", 0, SystemClock::Get());
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto t =
      OpenKernelTcpTransport("127.0.0.1", {Loopback((*server)->port())}, SystemClock::Get(), 16);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EchoesEverySize(**t);
  (*server)->Stop();
  EXPECT_NE((*server)->counters().find("accepted=1 "), std::string::npos)
      << (*server)->counters();  // one connection for everything
  EXPECT_NE((*server)->counters().find("messages=" + std::to_string(2 * kSizes.size())),
            std::string::npos)
      << (*server)->counters();
}

TEST(KernelTcpTransportTest, PeerClosingFailsTheOutstandingRpcs) {
  // A hand-driven server that accepts, reads a little and closes.
  Result<UniqueFd> listener = OpenSocket(AF_INET, SOCK_STREAM);
  ASSERT_TRUE(listener.ok());
  SocketAddress addr = Loopback(0);
  ASSERT_EQ(::bind(listener->get(), addr.get(), addr.length), 0);
  ASSERT_EQ(::listen(listener->get(), 4), 0);
  auto t = OpenKernelTcpTransport("127.0.0.1", {Loopback(*LocalPort(listener->get()))},
                                  SystemClock::Get(), 4);
  ASSERT_TRUE(t.ok());
  for (uint32_t tag = 0; tag < 3; ++tag) ASSERT_TRUE((*t)->Issue(tag, 0, 1000).ok());
  Sink sink;
  (*t)->Wait(SystemClock::Get().NowNs() + 50 * kNsPerMs, sink);  // connects, sends
  EXPECT_EQ(sink.total(), 0);
  UniqueFd conn(::accept(listener->get(), nullptr, nullptr));
  ASSERT_TRUE(conn.valid());
  char buf[64];
  ASSERT_GT(::recv(conn.get(), buf, sizeof(buf), 0), 0);
  conn.Reset();  // closed with RPCs in flight
  WaitFor(**t, sink, 3);
  EXPECT_TRUE(sink.completed.empty());
  EXPECT_EQ(sink.failed.size(), 3u);
  EXPECT_NE((*t)->first_error().find("kernel-tcp"), std::string::npos) << (*t)->first_error();
  // The next RPC reconnects.
  ASSERT_TRUE((*t)->Issue(0, 0, 10).ok());
  conn.Reset(::accept(listener->get(), nullptr, nullptr));
  EXPECT_TRUE(conn.valid());
}

TEST(KernelTcpTransportTest, RefusedConnectionFailsTheRpc) {
  // A port nobody listens on.
  Result<UniqueFd> probe = OpenSocket(AF_INET, SOCK_STREAM);
  ASSERT_TRUE(probe.ok());
  SocketAddress addr = Loopback(0);
  ASSERT_EQ(::bind(probe->get(), addr.get(), addr.length), 0);
  const uint16_t port = *LocalPort(probe->get());  // bound, not listening: refuses
  auto t = OpenKernelTcpTransport("127.0.0.1", {Loopback(port)}, SystemClock::Get(), 2);
  ASSERT_TRUE(t.ok());
  Sink sink;
  // Refused at once (an Issue error) or at the next Wait (a failed RPC).
  if ((*t)->Issue(1, 0, 10).ok()) {
    WaitFor(**t, sink, 1);
  } else {
    sink.Done(1, false);
  }
  EXPECT_EQ(sink.failed[1], 1);
  EXPECT_FALSE((*t)->first_error().empty());
}

TEST(KernelTcpTransportTest, ServerClosesOnAMalformedFrame) {
  auto server = StartKernelTcpEchoServer("127.0.0.1", 0, SystemClock::Get());
  ASSERT_TRUE(server.ok());
  Result<UniqueFd> c = OpenSocket(AF_INET, SOCK_STREAM);
  ASSERT_TRUE(c.ok());
  const SocketAddress to = Loopback((*server)->port());
  ASSERT_EQ(::connect(c->get(), to.get(), to.length), 0);
  ASSERT_TRUE(SetReceiveTimeout(c->get(), 10 * kNsPerSec).ok());
  const std::string junk(kKernelTcpHeaderBytes, 'j');  // wrong magic
  ASSERT_EQ(::send(c->get(), junk.data(), junk.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(junk.size()));
  char buf[16];
  EXPECT_EQ(::recv(c->get(), buf, sizeof(buf), 0), 0);  // EOF: closed by the server
  (*server)->Stop();
  EXPECT_NE((*server)->counters().find("malformed=1 "), std::string::npos) << (*server)->counters();
}

}  // namespace
}  // namespace wharf::bench
