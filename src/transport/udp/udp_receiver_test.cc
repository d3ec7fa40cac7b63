// Tests of UdpReceiver alone, reading loopback sockets it does not own:
// datagrams with their sources, drops over the limit, GRO buffers split,
// the hot-peer socket's turn, read errors, and adaptive GRO's switches
// (with a scripted syscall seam where the kernel would have to misbehave).
// Every wait is a poll() with a timeout.
#include "transport/udp/udp_receiver.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <deque>
#include <optional>
#include <vector>

#include "transport/udp/udp_addresses.h"
#include "transport/udp/udp_test_support.h"

namespace wharf::transport::udp {
namespace {

using udp_testing::ExpectSameDatagrams;
using udp_testing::Family;
using udp_testing::GsoSizes;
using udp_testing::kPollTimeoutMs;
using udp_testing::MakeOutgoing;
using udp_testing::MustOpen;
using udp_testing::OptionsFor;
using udp_testing::Outgoing;
using udp_testing::Received;
using udp_testing::SendAll;

// Fails the next receive calls with the errnos queued in `recv_errnos`,
// then passes every call to the kernel; PeekQueuedBytes answers
// `peek_bytes` when set.
class ScriptedReads final : public UdpSyscalls {
 public:
  int SendMmsg(int fd, mmsghdr* msgs, unsigned int count) override {
    return Kernel().SendMmsg(fd, msgs, count);
  }
  int RecvMmsg(int fd, mmsghdr* msgs, unsigned int count) override {
    if (!recv_errnos.empty()) {
      errno = recv_errnos.front();
      recv_errnos.pop_front();
      return -1;
    }
    return Kernel().RecvMmsg(fd, msgs, count);
  }
  int PeekQueuedBytes(int fd) override {
    return peek_bytes.has_value() ? *peek_bytes : Kernel().PeekQueuedBytes(fd);
  }

  std::deque<int> recv_errnos;
  std::optional<int> peek_bytes;
};

// A non-blocking UDP socket bound to 127.0.0.1 (the receiver's socket).
struct BoundSocket {
  BoundSocket() {
    fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_UDP);
    sockaddr_storage a;
    const auto len = static_cast<socklen_t>(NetAddress::Ipv4(0x7F000001, 0).ToSockaddr(&a));
    EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), len), 0);
    socklen_t bound_len = sizeof(a);
    EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &bound_len), 0);
    address = *FromKernelAddress(a, bound_len);
  }
  ~BoundSocket() { close(fd); }
  BoundSocket(const BoundSocket&) = delete;
  BoundSocket& operator=(const BoundSocket&) = delete;

  int fd = -1;
  NetAddress address;
};

class UdpReceiverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sender_ = MustOpen(OptionsFor(Family::kIpv4));
    ASSERT_TRUE(sender_);
  }
  void Open(GroMode gro, size_t max_datagram_bytes = 65507, size_t batch = 16) {
    receiver_.Open(main_.fd, main_.address, batch, max_datagram_bytes, gro);
  }
  // Receives until `count` datagrams arrived or a poll of both sockets waits
  // kPollTimeoutMs in vain.
  std::vector<Received> ReceiveUpTo(size_t count, size_t out_slots = 16) {
    std::vector<Received> got;
    std::vector<InDatagram> out(out_slots);
    while (got.size() < count) {
      Result<size_t> n = receiver_.Receive(out);
      EXPECT_TRUE(n.ok()) << n.status();
      if (!n.ok()) break;
      for (size_t i = 0; i < *n; ++i) {
        got.push_back(Received{out[i].from, {out[i].bytes.begin(), out[i].bytes.end()}});
      }
      if (*n > 0) continue;
      pollfd fds[2] = {{main_.fd, POLLIN, 0}, {hot_.fd, POLLIN, 0}};
      if (poll(fds, 2, kPollTimeoutMs) <= 0) break;
    }
    return got;
  }
  // One datagram of `bytes` to `to`, sent and (when `to` is the main
  // socket) received alone: one lone read.
  void Lone(size_t bytes = 64) {
    Outgoing out = MakeOutgoing(main_.address, {bytes});
    SendAll(*sender_, out.datagrams);
    ExpectSameDatagrams(ReceiveUpTo(1, 1), out, sender_->LocalAddress());
  }
  // Eight datagrams sent one by one before the first read: a queue.
  void Burst() {
    Outgoing out = MakeOutgoing(main_.address, {100, 200, 300, 400, 500, 600, 700, 800});
    for (const OutDatagram& d : out.datagrams) SendAll(*sender_, std::span(&d, 1));
    ExpectSameDatagrams(ReceiveUpTo(8), out, sender_->LocalAddress());
  }

  BoundSocket main_;
  BoundSocket hot_;
  ScriptedReads syscalls_;
  UdpStats stats_;
  UdpReceiver receiver_{&syscalls_, &stats_};
  std::unique_ptr<UdpDatagram> sender_;
};

TEST_F(UdpReceiverTest, Receive__HandsOutEachDatagramWithItsSource) {
  Open(GroMode::kOff);
  EXPECT_FALSE(receiver_.gro_enabled());
  std::vector<InDatagram> out(4);
  EXPECT_EQ(*receiver_.Receive(out), 0u) << "nothing waits";
  Outgoing sent = MakeOutgoing(main_.address, {1, 500, 2});
  SendAll(*sender_, sent.datagrams);
  ExpectSameDatagrams(ReceiveUpTo(3), sent, sender_->LocalAddress());
  EXPECT_EQ(stats_.received, 3u);
  EXPECT_EQ(stats_.truncated, 0u);
}

TEST_F(UdpReceiverTest, Receive__DropsAndCountsADatagramOverTheLimit) {
  Open(GroMode::kOff, /*max_datagram_bytes=*/100);
  Outgoing over = MakeOutgoing(main_.address, {101});
  SendAll(*sender_, over.datagrams);
  Outgoing fits = MakeOutgoing(main_.address, {100});
  SendAll(*sender_, fits.datagrams);
  ExpectSameDatagrams(ReceiveUpTo(1), fits, sender_->LocalAddress());
  EXPECT_EQ(stats_.truncated, 1u);
  EXPECT_EQ(stats_.received, 1u);
}

TEST_F(UdpReceiverTest, Receive__SplitsAGroBufferIntoItsDatagramsInOrder) {
  Open(GroMode::kOn);
  if (!receiver_.gro_enabled()) GTEST_SKIP() << "kernel lacks UDP GRO";
  if (!sender_->gso_enabled()) GTEST_SKIP() << "kernel lacks UDP GSO";
  EXPECT_TRUE(receiver_.gro_for_new_sockets());
  Outgoing sent = MakeOutgoing(main_.address, GsoSizes());
  SendAll(*sender_, sent.datagrams);
  // Seven at a time: a buffer is finished over several calls.
  ExpectSameDatagrams(ReceiveUpTo(41, 7), sent, sender_->LocalAddress());
  EXPECT_GE(stats_.gro_coalesced, 1u);
  EXPECT_EQ(stats_.received, 41u);
}

TEST_F(UdpReceiverTest, Receive__ReadsTheHotSocketEveryCallAndTheMainOneEveryFourth) {
  Open(GroMode::kOff);
  receiver_.AddHotSocket(hot_.fd, false);
  Outgoing to_main = MakeOutgoing(main_.address, {11});
  Outgoing to_hot = MakeOutgoing(hot_.address, {22});
  SendAll(*sender_, to_main.datagrams);
  SendAll(*sender_, to_hot.datagrams);
  for (int fd : {main_.fd, hot_.fd}) {
    pollfd readable{fd, POLLIN, 0};
    ASSERT_EQ(poll(&readable, 1, kPollTimeoutMs), 1);
  }
  std::vector<size_t> sizes;
  std::vector<InDatagram> out(1);
  for (int call = 0; call < UdpReceiver::kMainReadEvery; ++call) {
    Result<size_t> n = receiver_.Receive(out);
    ASSERT_TRUE(n.ok()) << n.status();
    sizes.push_back(*n == 1 ? out[0].bytes.size() : 0);
  }
  EXPECT_EQ(sizes, (std::vector<size_t>{22, 0, 0, 11}));
}

TEST_F(UdpReceiverTest, Receive__RetriesAfterAPendingRefusalAndNotesIt) {
  Open(GroMode::kOff);
  Outgoing sent = MakeOutgoing(main_.address, {100});
  SendAll(*sender_, sent.datagrams);
  syscalls_.recv_errnos = {ECONNREFUSED};
  ExpectSameDatagrams(ReceiveUpTo(1), sent, sender_->LocalAddress());
  EXPECT_EQ(stats_.refused, 1u);
  EXPECT_TRUE(receiver_.path_errors_pending());
  receiver_.ClearPathErrors();
  EXPECT_FALSE(receiver_.path_errors_pending());
}

TEST_F(UdpReceiverTest, Receive__AnErrorNamesTheLocalAddress) {
  Open(GroMode::kOff);
  syscalls_.recv_errnos = {EBADF};
  std::vector<InDatagram> out(4);
  Result<size_t> got = receiver_.Receive(out);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("recvmmsg on " + main_.address.ToString()),
            std::string::npos)
      << got.status();
}

TEST_F(UdpReceiverTest, AdaptGro__ABurstTurnsItOnAndALongRunOfLoneReadsOff) {
  Open(GroMode::kAdaptive);
  if (!receiver_.gro_adaptive()) GTEST_SKIP() << "kernel lacks UDP GRO";
  EXPECT_FALSE(receiver_.gro_enabled());
  receiver_.AddHotSocket(hot_.fd, receiver_.gro_for_new_sockets());
  Burst();
  EXPECT_TRUE(receiver_.gro_enabled());
  EXPECT_TRUE(receiver_.hot_gro_enabled()) << "the hot socket follows";
  EXPECT_TRUE(receiver_.gro_for_new_sockets());
  EXPECT_EQ(stats_.gro_enabled_times, 1u);
  for (uint32_t i = 0; i < AdaptiveGro::kOffAfterLoneReads; ++i) Lone();
  EXPECT_FALSE(receiver_.gro_enabled());
  EXPECT_FALSE(receiver_.hot_gro_enabled());
  EXPECT_FALSE(receiver_.gro_for_new_sockets());
  EXPECT_EQ(stats_.gro_disabled_times, 1u);
  EXPECT_TRUE(receiver_.gro_adaptive());
}

TEST_F(UdpReceiverTest, TurnGroOff__IsDeferredWhileADatagramIsQueued) {
  Open(GroMode::kAdaptive);
  if (!receiver_.gro_adaptive()) GTEST_SKIP() << "kernel lacks UDP GRO";
  Burst();
  ASSERT_TRUE(receiver_.gro_enabled());
  syscalls_.peek_bytes = 1400;  // something queued at the switch
  for (uint32_t i = 0; i < AdaptiveGro::kOffAfterLoneReads; ++i) Lone();
  EXPECT_TRUE(receiver_.gro_enabled());
  EXPECT_TRUE(receiver_.gro_for_new_sockets());
  EXPECT_EQ(stats_.gro_disable_deferred, 1u);
  syscalls_.peek_bytes.reset();
  for (uint32_t i = 0; i < AdaptiveGro::kOffAfterLoneReads; ++i) Lone();
  EXPECT_FALSE(receiver_.gro_enabled());
  EXPECT_EQ(stats_.gro_disabled_times, 1u);
}

}  // namespace
}  // namespace wharf::transport::udp
