// The hot-peer socket: when it opens, that the peer and everyone else still
// reach the main socket's port both ways, with unchanged addresses, and that
// the port stays exclusive.
#include "transport/udp/udp_hot_peer.h"

#include <gtest/gtest.h>
#include <poll.h>

#include <algorithm>
#include <vector>

#include "transport/udp/udp_test_support.h"

namespace wharf::transport {
namespace {

using udp::HotPeerTracker;
using udp_testing::Family;
using udp_testing::Loopback;
using udp_testing::MustOpen;
using udp_testing::OptionsFor;
using udp_testing::Received;
using udp_testing::ReceiveUpTo;

TEST(HotPeerTrackerTest, APeerIsHotAfterThresholdSendsInARow) {
  HotPeerTracker tracker(3, 10);
  const NetAddress a = NetAddress::Ipv4(0x7F000001, 1000);
  const NetAddress b = NetAddress::Ipv4(0x7F000001, 1001);
  EXPECT_FALSE(tracker.NoteSend(a));
  EXPECT_FALSE(tracker.NoteSend(a));
  EXPECT_FALSE(tracker.NoteSend(b));  // the run starts over
  EXPECT_FALSE(tracker.NoteSend(a));
  EXPECT_FALSE(tracker.NoteSend(a));
  EXPECT_TRUE(tracker.NoteSend(a));  // third in a row
  tracker.MadeHot(a);
  for (int i = 0; i < 20; ++i) EXPECT_FALSE(tracker.NoteSend(a)) << "reported again at " << i;
}

TEST(HotPeerTrackerTest, AFailedAttemptIsRetriedAfterAnotherRun) {
  HotPeerTracker tracker(3, 10);
  const NetAddress a = NetAddress::Ipv4(0x7F000001, 1000);
  for (int i = 0; i < 2; ++i) EXPECT_FALSE(tracker.NoteSend(a));
  EXPECT_TRUE(tracker.NoteSend(a));
  // No MadeHot: the caller could not open the socket.
  EXPECT_FALSE(tracker.NoteSend(a));
  EXPECT_FALSE(tracker.NoteSend(a));
  EXPECT_TRUE(tracker.NoteSend(a));
  EXPECT_FALSE(tracker.has_hot());
}

// A new peer takes over only once the hot one has been idle for idle_sends
// sends, however long its own run.
TEST(HotPeerTrackerTest, ANewPeerTakesOverOnlyFromAnIdleOne) {
  HotPeerTracker tracker(3, 10);
  const NetAddress a = NetAddress::Ipv4(0x7F000001, 1000);
  const NetAddress b = NetAddress::Ipv4(0x7F000001, 1001);
  for (int i = 0; i < 3; ++i) (void)tracker.NoteSend(a);
  tracker.MadeHot(a);
  for (int i = 1; i < 10; ++i) EXPECT_FALSE(tracker.NoteSend(b)) << "b took over after " << i;
  EXPECT_TRUE(tracker.NoteSend(b));  // the tenth send since a's last
  tracker.MadeHot(b);
  EXPECT_FALSE(tracker.NoteSend(b));
  // And back, by the same rule: a's run counts only from b's last send.
  for (int i = 1; i < 10; ++i) EXPECT_FALSE(tracker.NoteSend(a)) << "a took over after " << i;
  EXPECT_TRUE(tracker.NoteSend(a));
}

// Two peers served in turns (a server with two clients) leave the socket
// with the first, even when each turn is a run well over the threshold.
TEST(HotPeerTrackerTest, PeersServedInTurnsNeverMoveTheSocket) {
  HotPeerTracker tracker(3, 10);
  const NetAddress a = NetAddress::Ipv4(0x7F000001, 1000);
  const NetAddress b = NetAddress::Ipv4(0x7F000001, 1001);
  for (int i = 0; i < 3; ++i) (void)tracker.NoteSend(a);
  tracker.MadeHot(a);
  for (int turn = 0; turn < 1000; ++turn) {
    for (int i = 0; i < 9; ++i) ASSERT_FALSE(tracker.NoteSend(b)) << "turn " << turn;
    ASSERT_FALSE(tracker.NoteSend(a)) << "turn " << turn;
  }
}

void SendOne(UdpDatagram& from, const NetAddress& to, uint32_t index) {
  std::vector<std::byte> payload = udp_testing::Payload(index, 64);
  OutDatagram d{to, payload, 0};
  udp_testing::SendAll(from, std::span(&d, 1));
}

class HotPeerSocketTest : public testing::TestWithParam<Family> {
 protected:
  void SetUp() override {
    if (GetParam() == Family::kIpv6 && !udp_testing::Ipv6LoopbackUsable()) {
      GTEST_SKIP() << "no IPv6 loopback here";
    }
  }
};

TEST_P(HotPeerSocketTest, OpensAfterARunOfSendsAndCarriesBothDirections) {
  auto a = MustOpen(OptionsFor(GetParam()));
  auto b = MustOpen(OptionsFor(GetParam()));
  auto other = MustOpen(OptionsFor(GetParam()));
  ASSERT_TRUE(a && b && other);
  const size_t run = UdpDatagram::kHotAfterSends;
  for (uint32_t i = 0; i + 1 < run; ++i) SendOne(*a, b->LocalAddress(), i);
  EXPECT_EQ(a->hot_fd(), -1) << "hot one send too early";
  for (uint32_t i = run - 1; i < run + 10; ++i) SendOne(*a, b->LocalAddress(), i);
  ASSERT_GE(a->hot_fd(), 0);
  EXPECT_EQ(a->stats().hot_sockets_opened, 1u);
  EXPECT_EQ(a->stats().hot_sends, 11u);  // the send that made it hot, and the ten after

  // Every datagram arrived, in order, from a's one address and port.
  std::vector<Received> at_b = ReceiveUpTo(*b, run + 10);
  ASSERT_EQ(at_b.size(), run + 10);
  for (uint32_t i = 0; i < at_b.size(); ++i) {
    EXPECT_EQ(at_b[i].from, a->LocalAddress()) << i;
    EXPECT_TRUE(at_b[i].bytes == udp_testing::Payload(i, 64)) << i;
  }

  // b's answers reach a (through the connected socket), and so does a third
  // party (through the main one), each with its own address.
  for (uint32_t i = 0; i < 5; ++i) SendOne(*b, a->LocalAddress(), 100 + i);
  for (uint32_t i = 0; i < 5; ++i) SendOne(*other, a->LocalAddress(), 200 + i);
  std::vector<Received> at_a = ReceiveUpTo(*a, 10);
  ASSERT_EQ(at_a.size(), 10u);
  size_t from_b = 0, from_other = 0;
  for (const Received& r : at_a) {
    if (r.from == b->LocalAddress()) ++from_b;
    if (r.from == other->LocalAddress()) ++from_other;
  }
  EXPECT_EQ(from_b, 5u);
  EXPECT_EQ(from_other, 5u);

  // Sends to someone else still leave from the main socket, same address.
  SendOne(*a, other->LocalAddress(), 300);
  std::vector<Received> at_other = ReceiveUpTo(*other, 1);
  ASSERT_EQ(at_other.size(), 1u);
  EXPECT_EQ(at_other[0].from, a->LocalAddress());
  EXPECT_EQ(a->stats().hot_sends, 11u);
}

// Reads of the hot socket batch up as they do on the main one: the main
// socket's empty reads must not shrink the hot socket's read window (they
// did, and a 10,000-RPC burst then crawled through one datagram per poll).
TEST_P(HotPeerSocketTest, ABurstFromTheHotPeerIsReadInBatches) {
  auto a = MustOpen(OptionsFor(GetParam()));
  auto b = MustOpen(OptionsFor(GetParam()));
  ASSERT_TRUE(a && b);
  for (uint32_t i = 0; i < UdpDatagram::kHotAfterSends; ++i) SendOne(*a, b->LocalAddress(), i);
  ASSERT_GE(a->hot_fd(), 0);
  constexpr size_t kBurst = 256;
  udp_testing::Outgoing burst =
      udp_testing::MakeOutgoing(a->LocalAddress(), std::vector<size_t>(kBurst, 64));
  udp_testing::SendAll(*b, burst.datagrams);
  pollfd ready{a->hot_fd(), POLLIN, 0};
  ASSERT_EQ(poll(&ready, 1, udp_testing::kPollTimeoutMs), 1);
  std::vector<InDatagram> out(32);
  size_t received = 0;
  int calls = 0;
  while (received < kBurst && calls < 1000) {
    Result<size_t> n = a->Receive(out);
    ASSERT_TRUE(n.ok()) << n.status();
    received += *n;
    ++calls;
  }
  EXPECT_EQ(received, kBurst);
  // The window doubles from 1 to 32 in about seven reads; then 32 a read.
  EXPECT_LE(calls, 20) << "reads of the hot socket do not batch";
}

// A server's first client leaves and another takes its place: the socket
// is connected to the new one (same fd, no new socket), and whatever the
// old peer had sent to it before, or sends after, still arrives.
TEST_P(HotPeerSocketTest, TheSocketMovesToTheNextPeerAndLosesNothing) {
  auto a = MustOpen(OptionsFor(GetParam()));
  auto first = MustOpen(OptionsFor(GetParam()));
  auto next = MustOpen(OptionsFor(GetParam()));
  ASSERT_TRUE(a && first && next);
  const size_t run = UdpDatagram::kHotAfterSends;
  for (uint32_t i = 0; i < run; ++i) SendOne(*a, first->LocalAddress(), i);
  ASSERT_GE(a->hot_fd(), 0);
  ASSERT_EQ(a->hot_peer(), first->LocalAddress());
  const int hot_fd = a->hot_fd();
  // Queued on the hot socket while it is still first's, read only after
  // the hand-over.
  for (uint32_t i = 0; i < 3; ++i) SendOne(*first, a->LocalAddress(), 100 + i);
  pollfd queued{hot_fd, POLLIN, 0};
  ASSERT_EQ(poll(&queued, 1, udp_testing::kPollTimeoutMs), 1);

  const size_t before_hand_over = UdpDatagram::kHandOverAfterIdleSends - 1;
  for (uint32_t i = 0; i < before_hand_over; ++i) SendOne(*a, next->LocalAddress(), i);
  EXPECT_EQ(a->hot_peer(), first->LocalAddress()) << "moved before first was idle long enough";
  EXPECT_EQ(a->stats().hot_handovers, 0u);
  const uint32_t after = 10;
  for (uint32_t i = 0; i < 1 + after; ++i) SendOne(*a, next->LocalAddress(), 5000 + i);
  EXPECT_EQ(a->hot_peer(), next->LocalAddress());
  EXPECT_EQ(a->hot_fd(), hot_fd) << "a new socket instead of the same one connected again";
  EXPECT_EQ(a->stats().hot_sockets_opened, 1u);
  EXPECT_EQ(a->stats().hot_handovers, 1u);
  // The send that made first hot, then next's since it took over.
  EXPECT_EQ(a->stats().hot_sends, 1 + 1 + after);

  // next got everything, from a's one address.
  std::vector<Received> at_next = ReceiveUpTo(*next, before_hand_over + 1 + after);
  ASSERT_EQ(at_next.size(), before_hand_over + 1 + after);
  for (const Received& r : at_next) EXPECT_EQ(r.from, a->LocalAddress());
  EXPECT_TRUE(at_next.back().bytes == udp_testing::Payload(5000 + after, 64));

  // first's three queued datagrams, two it sends now (the main socket's),
  // and next's answers (the hot socket's now) all reach a.
  for (uint32_t i = 0; i < 2; ++i) SendOne(*first, a->LocalAddress(), 200 + i);
  for (uint32_t i = 0; i < 4; ++i) SendOne(*next, a->LocalAddress(), 300 + i);
  std::vector<Received> at_a = ReceiveUpTo(*a, 9);
  ASSERT_EQ(at_a.size(), 9u);
  std::vector<std::vector<std::byte>> from_first;
  size_t from_next = 0;
  for (const Received& r : at_a) {
    if (r.from == first->LocalAddress()) from_first.push_back(r.bytes);
    if (r.from == next->LocalAddress()) ++from_next;
  }
  ASSERT_EQ(from_first.size(), 5u);
  // The two sockets are read in turns, so only each one's order is kept.
  for (uint32_t payload : {100, 101, 102, 200, 201}) {
    EXPECT_NE(std::find(from_first.begin(), from_first.end(), udp_testing::Payload(payload, 64)),
              from_first.end())
        << "lost datagram " << payload;
  }
  EXPECT_EQ(from_next, 4u);
}

TEST_P(HotPeerSocketTest, ThePortStaysExclusive) {
  auto a = MustOpen(OptionsFor(GetParam()));
  ASSERT_TRUE(a);
  for (bool hot : {true, false}) {
    UdpOptions same = OptionsFor(GetParam());
    same.bind = a->LocalAddress();
    same.hot_peer_socket = hot;
    Result<std::unique_ptr<UdpDatagram>> second = UdpDatagram::Open(same);
    ASSERT_FALSE(second.ok()) << "a second socket bound " << a->LocalAddress().ToString() << " (hot " << hot << ")";
    EXPECT_NE(second.status().message().find("bind"), std::string::npos) << second.status();
  }
}

TEST_P(HotPeerSocketTest, OffMeansOneSocketOnly) {
  UdpOptions options = OptionsFor(GetParam());
  options.hot_peer_socket = false;
  auto a = MustOpen(options);
  auto b = MustOpen(OptionsFor(GetParam()));
  ASSERT_TRUE(a && b);
  for (uint32_t i = 0; i < 2 * UdpDatagram::kHotAfterSends; ++i) SendOne(*a, b->LocalAddress(), i);
  EXPECT_EQ(a->hot_fd(), -1);
  EXPECT_EQ(a->stats().hot_sends, 0u);
  EXPECT_EQ(ReceiveUpTo(*b, 2 * UdpDatagram::kHotAfterSends).size(), 2 * UdpDatagram::kHotAfterSends);
}

INSTANTIATE_TEST_SUITE_P(Families, HotPeerSocketTest,
                         testing::Values(Family::kIpv4, Family::kIpv6), udp_testing::FamilyName);

}  // namespace
}  // namespace wharf::transport
