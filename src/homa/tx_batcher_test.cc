// Unit tests of TxBatcher: what it puts on the wire (the fake network's
// packet log), when (Send() calls counted by CountingDatagram), and what it
// does when the socket refuses (a scripted socket).
#include "homa/tx_batcher.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "base/sim_clock.h"
#include "transport/fake/counting_datagram.h"
#include "transport/fake/fake_network.h"

namespace wharf::homa {
namespace {

using transport::NetAddress;
using transport::OutDatagram;
using transport::fake::CountingDatagram;
using transport::fake::FakeNetwork;

NetAddress Address(uint32_t n) { return NetAddress::Ipv4((198u << 24) | (18u << 16) | n, 4000); }

// Host A's batcher, sending to host B, on a fake network whose log the
// tests compare.
class TxWorld {
 public:
  TxWorld()
      : clock_(0),
        net_(clock_, 1),
        a_(net_.Attach("A", Address(1))),
        b_(net_.Attach("B", Address(2))),
        tx_(&a_, /*control_priority=*/7, &stats_) {}

  void Control(const wire::Body& body) { tx_.AddControl(Address(2), 1, 2, 10, body); }
  void Data(uint32_t offset, size_t payload_bytes) {
    payload_.resize(std::max(payload_.size(), size_t{offset} + payload_bytes));
    wire::CommonHeader common;
    common.type = wire::PacketType::kData;
    common.sport = 1;
    common.dport = 2;
    common.rpc_id = 10;
    wire::DataHeader data;
    data.message_length = static_cast<uint32_t>(payload_.size());
    data.offset = offset;
    data.incoming = data.message_length;
    tx_.AddData(Address(2), common, data, std::span(payload_).subspan(offset, payload_bytes),
                /*priority=*/3);
  }

  SimClock clock_;
  FakeNetwork net_;
  CountingDatagram a_;
  CountingDatagram b_;
  HomaStats stats_;
  TxBatcher tx_;
  std::vector<std::byte> payload_ = std::vector<std::byte>(4096, std::byte{0x5a});
};

// A socket that takes `accept` datagrams per Send() (all when negative) or
// fails the call outright while `fail` is set, and records the priority of
// each datagram it took.
class ScriptedSocket final : public transport::Datagram {
 public:
  NetAddress LocalAddress() const override { return Address(1); }
  size_t MaxDatagramBytes() const override { return 1472; }
  Result<size_t> Send(std::span<const OutDatagram> batch) override {
    ++calls;
    if (fail) return UnavailableError("scripted");
    const size_t n = accept < 0 ? batch.size() : std::min(batch.size(), size_t(accept));
    for (size_t i = 0; i < n; ++i) priorities.push_back(batch[i].priority);
    return n;
  }
  Result<size_t> Receive(std::span<transport::InDatagram>) override { return size_t{0}; }
  int ReadableFd() const override { return -1; }

  int accept = -1;
  bool fail = false;
  int calls = 0;
  std::vector<uint8_t> priorities;
};

TEST(TxBatcher, End__SendsTheHeldBatchAtTheOutermostEnd) {
  TxWorld w;
  w.tx_.Begin();
  w.tx_.Begin();
  w.Control(wire::Busy{});
  w.tx_.FlushUnlessHeld(0);
  w.tx_.End();
  EXPECT_EQ(w.a_.send_calls, 0);
  EXPECT_TRUE(w.tx_.held());
  w.tx_.End();
  EXPECT_FALSE(w.tx_.held());
  EXPECT_EQ(w.a_.send_calls, 1);
  EXPECT_EQ(w.net_.Log(), "A->B BUSY");
  EXPECT_EQ(w.stats_.batched_flushes, 1u);
  // Unmatched: nothing, and the next batch still holds.
  w.tx_.End();
  w.tx_.Begin();
  w.Control(wire::Busy{});
  w.tx_.FlushUnlessHeld(0);
  EXPECT_EQ(w.a_.send_calls, 1);
  w.tx_.End();
  EXPECT_EQ(w.a_.send_calls, 2);
}

TEST(TxBatcher, End__WithNothingHeldIsNoBatchedFlush) {
  TxWorld w;
  w.tx_.Begin();
  w.tx_.End();
  EXPECT_EQ(w.a_.send_calls, 0);
  EXPECT_EQ(w.stats_.batched_flushes, 0u);
}

TEST(TxBatcher, FlushUnlessHeld__SendsAtOnceOutsideABatch) {
  TxWorld w;
  w.Control(wire::Grant{10'000, 3, 0});
  w.Control(wire::Resend{0, 1400, 3});
  w.tx_.FlushUnlessHeld(0);
  ASSERT_EQ(w.a_.send_calls, 1);
  EXPECT_EQ(w.a_.batch_sizes[0], 2u);
  EXPECT_EQ(w.net_.Log(), "A->B GRANT 10000; A->B RESEND 1400@0");
  EXPECT_EQ(w.stats_.packets_sent, 2u);
}

TEST(TxBatcher, FlushUnlessHeld__AHeldBatchSendsItsHeadOnce) {
  TxWorld w;
  w.tx_.Begin();
  for (int i = 0; i < 15; ++i) {
    w.Control(wire::Busy{});
    w.tx_.FlushUnlessHeld(/*window=*/0);
  }
  EXPECT_EQ(w.a_.send_calls, 0);
  w.Control(wire::Busy{});
  w.tx_.FlushUnlessHeld(0);  // the 16th: the head leaves
  ASSERT_EQ(w.a_.send_calls, 1);
  EXPECT_EQ(w.a_.batch_sizes[0], 16u);
  EXPECT_EQ(w.stats_.batch_cuts, 1u);
  for (int i = 0; i < 40; ++i) {
    w.Control(wire::Busy{});
    w.tx_.FlushUnlessHeld(0);
  }
  EXPECT_EQ(w.a_.send_calls, 1) << "one cut per batch";
  w.tx_.End();
  ASSERT_EQ(w.a_.send_calls, 2);
  EXPECT_EQ(w.a_.batch_sizes[1], 40u);
}

TEST(TxBatcher, FlushUnlessHeld__TheHeadGrowsWithTheWindow) {
  TxWorld w;
  w.tx_.Begin();
  for (int i = 0; i < 30; ++i) {
    w.Control(wire::Busy{});
    w.tx_.FlushUnlessHeld(/*window=*/60);
  }
  EXPECT_EQ(w.a_.send_calls, 1);
  EXPECT_EQ(w.a_.batch_sizes[0], 30u);
  w.tx_.End();
}

TEST(TxBatcher, HeadPackets__HalfTheWindowWithinOneBatch) {
  EXPECT_EQ(TxBatcher::HeadPackets(0), TxBatcher::kMinHeldPackets);
  EXPECT_EQ(TxBatcher::HeadPackets(40), 20u);
  EXPECT_EQ(TxBatcher::HeadPackets(1000), TxBatcher::kMaxPackets);
}

TEST(TxBatcher, FlushBorrowed__SendsOnlyABatchThatBorrows) {
  TxWorld w;
  w.tx_.Begin();
  w.Data(0, 100);  // copied into its slot
  w.tx_.FlushBorrowed();
  EXPECT_EQ(w.a_.send_calls, 0);
  EXPECT_EQ(w.tx_.borrowed(), 0u);
  w.Data(100, 1000);  // sent from the message in place
  EXPECT_EQ(w.tx_.borrowed(), 1u);
  w.tx_.FlushBorrowed();
  EXPECT_EQ(w.a_.send_calls, 1);
  EXPECT_EQ(w.tx_.size(), 0u);
  EXPECT_EQ(w.tx_.borrowed(), 0u);
  EXPECT_EQ(w.net_.Log(), "A->B DATA 100@0; A->B DATA 1000@100");
  w.tx_.End();
}

TEST(TxBatcher, Flush__ASocketThatTakesNothingDropsTheBatchAfterFourTries) {
  ScriptedSocket socket;
  socket.accept = 0;
  HomaStats stats;
  TxBatcher tx(&socket, 7, &stats);
  for (int i = 0; i < 3; ++i) tx.AddControl(Address(2), 1, 2, 10, wire::Busy{});
  tx.Flush();
  EXPECT_EQ(socket.calls, 4);
  EXPECT_EQ(stats.tx_dropped, 3u);
  EXPECT_EQ(stats.packets_sent, 0u);
  EXPECT_EQ(tx.size(), 0u);
}

TEST(TxBatcher, Flush__ADatagramTheSocketRefusesIsDroppedAndTheRestSent) {
  ScriptedSocket socket;
  socket.fail = true;
  HomaStats stats;
  TxBatcher tx(&socket, 7, &stats);
  tx.AddControl(Address(2), 1, 2, 10, wire::Busy{});
  tx.Flush();
  EXPECT_EQ(stats.send_errors, 1u);
  EXPECT_EQ(stats.tx_dropped, 1u);
  socket.fail = false;
  socket.accept = 1;  // one per call: partial sends are retried
  const uint64_t sent_before = stats.packets_sent;
  for (int i = 0; i < 3; ++i) tx.AddControl(Address(2), 1, 2, 10, wire::Busy{});
  tx.Flush();
  EXPECT_EQ(stats.packets_sent - sent_before, 3u);
  EXPECT_EQ(socket.priorities.size(), 3u);
}

TEST(TxBatcher, AddData__ShortPayloadsAreCopiedAndLongOnesBorrowed) {
  TxWorld w;
  w.Data(0, TxBatcher::kInlinePayloadBytes);
  w.Data(TxBatcher::kInlinePayloadBytes, TxBatcher::kInlinePayloadBytes + 1);
  EXPECT_EQ(w.tx_.size(), 2u);
  EXPECT_EQ(w.tx_.borrowed(), 1u);
  // The borrowed bytes are read when the batch leaves.
  std::fill(w.payload_.begin(), w.payload_.end(), std::byte{0x33});
  w.tx_.Flush();
  ASSERT_EQ(w.a_.sent.size(), 2u);
  EXPECT_EQ(w.a_.sent[0].back(), std::byte{0x5a});
  EXPECT_EQ(w.a_.sent[1].back(), std::byte{0x33});
  EXPECT_EQ(w.net_.Log(), "A->B DATA 512@0; A->B DATA 513@512");
}

TEST(TxBatcher, AddData__AFullBatchLeavesAtOnce) {
  TxWorld w;
  w.tx_.Begin();
  for (size_t i = 0; i <= TxBatcher::kMaxPackets; ++i) w.Data(0, 1);
  ASSERT_EQ(w.a_.send_calls, 1);
  EXPECT_EQ(w.a_.batch_sizes[0], TxBatcher::kMaxPackets);
  EXPECT_EQ(w.tx_.size(), 1u);
  w.tx_.End();
}

TEST(TxBatcher, AddControl__EveryTypeGoesOutAsItsPacket) {
  TxWorld w;
  wire::AckList acks;
  acks.acks[0] = {4, 2};
  acks.acks[1] = {6, 2};
  acks.count = 2;
  wire::Cutoffs cutoffs;
  cutoffs.version = 3;
  w.Control(wire::Grant{10'000, 3, 0});
  w.Control(wire::Resend{2848, 1424, 3});
  w.Control(wire::RpcUnknown{});
  w.Control(wire::Busy{});
  w.Control(cutoffs);
  w.Control(wire::NeedAck{});
  w.Control(acks);
  w.tx_.Flush();
  EXPECT_EQ(w.net_.Log(),
            "A->B GRANT 10000; A->B RESEND 1424@2848; A->B RPC_UNKNOWN; A->B BUSY; "
            "A->B CUTOFFS v3; A->B NEED_ACK; A->B ACK 2");
}

TEST(TxBatcher, AddControl__GoesAtTheControlPriority) {
  ScriptedSocket socket;
  HomaStats stats;
  TxBatcher tx(&socket, /*control_priority=*/6, &stats);
  tx.AddControl(Address(2), 1, 2, 10, wire::Busy{});
  tx.Flush();
  EXPECT_EQ(socket.priorities, std::vector<uint8_t>{6});
}

TEST(TxBatcher, AddControl__APacketThatCannotBeEncodedIsCountedNotSent) {
  TxWorld w;
  w.Control(wire::Grant{10'000, /*priority=*/9, 0});  // priorities are 0..7
  EXPECT_EQ(w.tx_.size(), 0u);
  EXPECT_EQ(w.stats_.send_errors, 1u);
}

}  // namespace
}  // namespace wharf::homa
