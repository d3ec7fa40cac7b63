// Adaptive GRO: the on/off rule alone (AdaptiveGro), then UdpDatagram over
// real loopback sockets: lone datagrams leave GRO off, a burst turns it on,
// a long run of lone datagrams turns it off again, every datagram arrives
// intact and in order around each switch, and the hot-peer socket follows.
#include "transport/udp/udp_adaptive_gro.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "transport/udp/udp_datagram.h"
#include "transport/udp/udp_test_support.h"

namespace wharf::transport {
namespace {

using udp::AdaptiveGro;
using Action = AdaptiveGro::Action;
using namespace udp_testing;  // NOLINT(google-build-using-namespace): test helpers

TEST(AdaptiveGroTest, OnlyAReadOfFourOrMoreMessagesTurnsItOn) {
  AdaptiveGro policy;
  for (int i = 0; i < 1000; ++i) {
    EXPECT_EQ(policy.NoteRead(false, 1, true), Action::kNone);
    EXPECT_EQ(policy.NoteRead(false, 3, false), Action::kNone);
  }
  EXPECT_EQ(policy.NoteRead(false, AdaptiveGro::kOnAfterMessages, false), Action::kTurnOn);
  EXPECT_EQ(policy.NoteRead(false, 32, false), Action::kTurnOn);
}

TEST(AdaptiveGroTest, OnlyAnUnbrokenRunOfLoneReadsTurnsItOff) {
  AdaptiveGro policy;
  const uint32_t run = AdaptiveGro::kOffAfterLoneReads;
  for (uint32_t i = 0; i + 1 < run; ++i) ASSERT_EQ(policy.NoteRead(true, 1, true), Action::kNone);
  // A coalesced buffer, or two messages, start the run over.
  EXPECT_EQ(policy.NoteRead(true, 1, false), Action::kNone);
  for (uint32_t i = 0; i + 1 < run; ++i) ASSERT_EQ(policy.NoteRead(true, 1, true), Action::kNone);
  EXPECT_EQ(policy.NoteRead(true, 2, false), Action::kNone);
  for (uint32_t i = 0; i + 1 < run; ++i) ASSERT_EQ(policy.NoteRead(true, 1, true), Action::kNone);
  EXPECT_EQ(policy.NoteRead(true, 1, true), Action::kTurnOff);
  // Abandoned (still on): another whole run is needed.
  for (uint32_t i = 0; i + 1 < run; ++i) ASSERT_EQ(policy.NoteRead(true, 1, true), Action::kNone);
  EXPECT_EQ(policy.NoteRead(true, 1, true), Action::kTurnOff);
}

class AdaptiveGroSocketTest : public testing::TestWithParam<Family> {
 protected:
  void SetUp() override {
    if (GetParam() == Family::kIpv6 && !Ipv6LoopbackUsable()) {
      GTEST_SKIP() << "IPv6 loopback [::1] is not available on this host";
    }
    sender_ = MustOpen(OptionsFor(GetParam()));
    receiver_ = MustOpen(OptionsFor(GetParam()));  // loopback: adaptive by default
    ASSERT_TRUE(sender_ && receiver_);
    if (!receiver_->gro_adaptive()) GTEST_SKIP() << "kernel lacks UDP GRO";
    ASSERT_FALSE(receiver_->gro_enabled());
  }

  // One datagram, sent and received on its own: one lone read.
  void LoneDatagram(uint32_t index) {
    Outgoing out;
    out.payloads.push_back(Payload(index, 64 + index % 7));
    out.datagrams.push_back(OutDatagram{receiver_->LocalAddress(), out.payloads[0], 0});
    SendAll(*sender_, out.datagrams);
    ExpectSameDatagrams(ReceiveUpTo(*receiver_, 1, /*out_slots=*/1), out, sender_->LocalAddress());
  }

  // Eight datagrams sent one by one before the receiver reads: its first
  // read takes at least four, which turns GRO on.
  void TurnOnWithABurst() {
    Outgoing out = MakeOutgoing(receiver_->LocalAddress(), {100, 200, 300, 400, 500, 600, 700, 800});
    for (const OutDatagram& d : out.datagrams) SendAll(*sender_, std::span(&d, 1));
    ExpectSameDatagrams(ReceiveUpTo(*receiver_, 8), out, sender_->LocalAddress());
    ASSERT_TRUE(receiver_->gro_enabled());
  }

  // A GSO run of 41 datagrams; true when it reached the receiver as (at
  // least one) coalesced buffer, which only happens with GRO on.
  bool GsoBatchArrivesIntact() {
    const uint64_t coalesced = receiver_->stats().gro_coalesced;
    Outgoing out = MakeOutgoing(receiver_->LocalAddress(), GsoSizes());
    SendAll(*sender_, out.datagrams);
    ExpectSameDatagrams(ReceiveUpTo(*receiver_, 41, /*out_slots=*/7), out, sender_->LocalAddress());
    return receiver_->stats().gro_coalesced > coalesced;
  }

  std::unique_ptr<UdpDatagram> sender_;
  std::unique_ptr<UdpDatagram> receiver_;
};

INSTANTIATE_TEST_SUITE_P(Families, AdaptiveGroSocketTest,
                         testing::Values(Family::kIpv4, Family::kIpv6), FamilyName);

TEST_P(AdaptiveGroSocketTest, APingPongOfLoneDatagramsNeverTurnsGroOn) {
  for (uint32_t i = 0; i < 200; ++i) {
    LoneDatagram(i);
    // And back, so that both ends see a ping-pong.
    Outgoing back = MakeOutgoing(sender_->LocalAddress(), {64});
    SendAll(*receiver_, back.datagrams);
    ExpectSameDatagrams(ReceiveUpTo(*sender_, 1, 16), back, receiver_->LocalAddress());
  }
  for (UdpDatagram* end : {sender_.get(), receiver_.get()}) {
    EXPECT_FALSE(end->gro_enabled());
    EXPECT_EQ(end->stats().gro_enabled_times, 0u);
  }
}

TEST_P(AdaptiveGroSocketTest, ABurstTurnsGroOnAndEveryDatagramArrivesInOrder) {
  TurnOnWithABurst();
  EXPECT_EQ(receiver_->stats().gro_enabled_times, 1u);
  // Now a GSO run stays one buffer and is split here.
  if (!sender_->gso_enabled()) GTEST_SKIP() << "kernel lacks UDP GSO";
  EXPECT_TRUE(GsoBatchArrivesIntact());
  EXPECT_TRUE(receiver_->gro_enabled());
  std::vector<std::pair<std::string, uint64_t>> counters;
  receiver_->AppendCounters(&counters);
  EXPECT_NE(std::find(counters.begin(), counters.end(),
                      std::pair<std::string, uint64_t>{"udp.gro_enabled_times", 1}),
            counters.end());
}

TEST_P(AdaptiveGroSocketTest, AGsoRunReadWithGroOffTurnsItOn) {
  if (!sender_->gso_enabled()) GTEST_SKIP() << "kernel lacks UDP GSO";
  // Split by the kernel while GRO is off: the read that finds them is large.
  EXPECT_FALSE(GsoBatchArrivesIntact());
  EXPECT_TRUE(receiver_->gro_enabled());
  EXPECT_TRUE(GsoBatchArrivesIntact());
}

TEST_P(AdaptiveGroSocketTest, ALongRunOfLoneDatagramsTurnsGroOffAgain) {
  TurnOnWithABurst();
  const uint32_t run = AdaptiveGro::kOffAfterLoneReads;
  for (uint32_t i = 0; i + 1 < run; ++i) LoneDatagram(i);
  EXPECT_TRUE(receiver_->gro_enabled()) << "off one lone read too early";
  LoneDatagram(run);
  EXPECT_FALSE(receiver_->gro_enabled());
  EXPECT_EQ(receiver_->stats().gro_disabled_times, 1u);
  // Off again: lone datagrams, then a GSO run split by the kernel, all whole.
  for (uint32_t i = 0; i < 3; ++i) LoneDatagram(100 + i);
  if (!sender_->gso_enabled()) GTEST_SKIP() << "kernel lacks UDP GSO";
  EXPECT_FALSE(GsoBatchArrivesIntact());
  EXPECT_EQ(receiver_->stats().gro_coalesced, 0u);
}

// A GSO run queued (coalesced) when the switch comes: the kernel would hand
// it, read after the switch, as one datagram holding all 41. The switch is
// put off, and the run is split as sent.
TEST_P(AdaptiveGroSocketTest, TurnOffWaitsWhileACoalescedBufferIsQueued) {
  if (!sender_->gso_enabled()) GTEST_SKIP() << "kernel lacks UDP GSO";
  TurnOnWithABurst();
  const uint32_t run = AdaptiveGro::kOffAfterLoneReads;
  for (uint32_t i = 0; i + 1 < run; ++i) LoneDatagram(i);
  Outgoing lone = MakeOutgoing(receiver_->LocalAddress(), {64});
  Outgoing batch = MakeOutgoing(receiver_->LocalAddress(), GsoSizes());
  SendAll(*sender_, lone.datagrams);
  SendAll(*sender_, batch.datagrams);
  // One slot: the 64th lone read, with the run queued behind it.
  ExpectSameDatagrams(ReceiveUpTo(*receiver_, 1, 1), lone, sender_->LocalAddress());
  EXPECT_TRUE(receiver_->gro_enabled());
  EXPECT_EQ(receiver_->stats().gro_disable_deferred, 1u);
  EXPECT_EQ(receiver_->stats().gro_disabled_times, 0u);
  const uint64_t coalesced = receiver_->stats().gro_coalesced;
  ExpectSameDatagrams(ReceiveUpTo(*receiver_, 41, 7), batch, sender_->LocalAddress());
  EXPECT_GT(receiver_->stats().gro_coalesced, coalesced);
  // Another whole run, with nothing queued, turns it off.
  for (uint32_t i = 0; i < run; ++i) LoneDatagram(i);
  EXPECT_FALSE(receiver_->gro_enabled());
  EXPECT_EQ(receiver_->stats().gro_disabled_times, 1u);
}

TEST_P(AdaptiveGroSocketTest, AlwaysAndNeverDoNotAdapt) {
  for (LoopbackGro mode : {LoopbackGro::kAlways, LoopbackGro::kNever}) {
    UdpOptions options = OptionsFor(GetParam());
    options.loopback_gro = mode;
    receiver_ = MustOpen(options);
    ASSERT_TRUE(receiver_);
    EXPECT_FALSE(receiver_->gro_adaptive());
    const bool on = mode == LoopbackGro::kAlways;
    EXPECT_EQ(receiver_->gro_enabled(), on);
    Outgoing out = MakeOutgoing(receiver_->LocalAddress(), {100, 200, 300, 400, 500, 600});
    for (const OutDatagram& d : out.datagrams) SendAll(*sender_, std::span(&d, 1));
    ExpectSameDatagrams(ReceiveUpTo(*receiver_, 6), out, sender_->LocalAddress());
    for (uint32_t i = 0; i < AdaptiveGro::kOffAfterLoneReads + 1; ++i) LoneDatagram(i);
    EXPECT_EQ(receiver_->gro_enabled(), on);
    EXPECT_EQ(receiver_->stats().gro_enabled_times + receiver_->stats().gro_disabled_times, 0u);
  }
}

// The hot-peer socket (which a peer's datagrams reach once it is open)
// switches with the main one, and one opened while GRO is on opens with it.
// The receiver sends to the sender until that peer is hot: the receiver
// then has a hot-peer socket the sender's datagrams arrive on.
void MakeHotPeer(UdpDatagram& receiver, UdpDatagram& sender) {
  for (uint32_t i = 0; i < UdpDatagram::kHotAfterSends; ++i) {
    Outgoing out = MakeOutgoing(sender.LocalAddress(), {64});
    SendAll(receiver, out.datagrams);
  }
  ASSERT_EQ(ReceiveUpTo(sender, UdpDatagram::kHotAfterSends).size(), UdpDatagram::kHotAfterSends);
  ASSERT_GE(receiver.hot_fd(), 0);
}

TEST_P(AdaptiveGroSocketTest, TheHotPeerSocketFollows) {
  if (!sender_->gso_enabled()) GTEST_SKIP() << "kernel lacks UDP GSO";
  ASSERT_NO_FATAL_FAILURE(MakeHotPeer(*receiver_, *sender_));
  EXPECT_FALSE(receiver_->hot_gro_enabled());
  // The sender's run lands on the hot socket, split by its kernel.
  EXPECT_FALSE(GsoBatchArrivesIntact());
  EXPECT_TRUE(receiver_->gro_enabled());
  EXPECT_TRUE(receiver_->hot_gro_enabled());
  EXPECT_TRUE(GsoBatchArrivesIntact());  // now coalesced on the hot socket
  for (uint32_t i = 0; i < AdaptiveGro::kOffAfterLoneReads; ++i) LoneDatagram(i);
  EXPECT_FALSE(receiver_->gro_enabled());
  EXPECT_FALSE(receiver_->hot_gro_enabled());
  EXPECT_FALSE(GsoBatchArrivesIntact());  // split again: the hot socket is off too
}

TEST_P(AdaptiveGroSocketTest, AHotSocketOpenedWhileGroIsOnOpensWithIt) {
  if (!sender_->gso_enabled()) GTEST_SKIP() << "kernel lacks UDP GSO";
  TurnOnWithABurst();
  ASSERT_NO_FATAL_FAILURE(MakeHotPeer(*receiver_, *sender_));
  EXPECT_TRUE(receiver_->hot_gro_enabled());
  EXPECT_TRUE(GsoBatchArrivesIntact());
}

}  // namespace
}  // namespace wharf::transport
