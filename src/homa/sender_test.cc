// Unit tests of Sender: host A's messages and owed acks to host B, built into
// a TxBatcher on a fake network, asserted as its packet log. DATA packets
// are described with the acks they carry: "DATA 1000@0 ack=100 floor=102".
#include "homa/sender.h"

#include <gtest/gtest.h>

#include <string>

#include "base/sim_clock.h"
#include "transport/fake/fake_network.h"

namespace wharf::homa {
namespace {

using transport::NetAddress;
using transport::fake::FakeDatagram;
using transport::fake::FakeNetwork;

constexpr uint16_t kA = 1;  // our client endpoints
constexpr uint16_t kB = 2;
constexpr uint16_t kServer = 0;  // theirs

NetAddress Address(uint32_t n) { return NetAddress::Ipv4((198u << 24) | (18u << 16) | n, 4000); }

// wire::Describe, but DATA also shows its piggybacked ack and ack floor.
std::string DescribeWithAcks(std::span<const std::byte> bytes) {
  Result<wire::Packet> packet = wire::Decode(bytes);
  if (!packet.ok() || packet->common.type != wire::PacketType::kData) {
    return wire::Describe(bytes);
  }
  const auto& data = std::get<wire::Data>(packet->body);
  std::string out = wire::Describe(bytes);
  if (data.header.ack.client_id != 0) out += " ack=" + std::to_string(data.header.ack.client_id);
  if (data.header.ack_floor != 0) out += " floor=" + std::to_string(data.header.ack_floor);
  return out;
}

class SendWorld {
 public:
  explicit SendWorld(const HomaConfig& config = {})
      : config_(config),
        clock_(0),
        net_(clock_, 1),
        a_(net_.Attach("A", Address(1))),
        b_(net_.Attach("B", Address(2))),
        tx_(a_.get(), config_.control_priority, &stats_),
        rpcs_(100),
        peers_(config_),
        sender_(config_, clock_, &tx_, &rpcs_, &stats_),
        peer_(*peers_.FindOrAdd(Address(2))) {
    net_.SetDescriber(DescribeWithAcks);
    peer_.payload_bytes = 1424;
    peer_.paced = false;
  }

  // A request of `bytes` from our endpoint `ep`, queued.
  Rpc& Request(size_t bytes, uint16_t ep = kA) {
    Rpc& rpc = rpcs_.NewClientRpc(nullptr, ep, peer_, kServer);
    rpc.out.emplace(Buffer::Allocate(bytes), config_.unsched_bytes, peer_.payload_bytes, 0);
    sender_.Queue(rpc);
    return rpc;
  }
  // Pumps (reading the clock when a paced packet needs it) and sends.
  int Pump() {
    TimeNs now = 0;
    const int made = sender_.Pump(&now, /*clock_fresh=*/false);
    tx_.Flush();
    return made;
  }

  HomaConfig config_;
  SimClock clock_;
  FakeNetwork net_;
  std::unique_ptr<FakeDatagram> a_;
  std::unique_ptr<FakeDatagram> b_;
  HomaStats stats_;
  TxBatcher tx_;
  RpcRegistry rpcs_;
  PeerTable peers_;
  Sender sender_;
  Peer& peer_;
};

TEST(Sender, Pump__ShortestRemainingFirst) {
  SendWorld w;
  w.Request(3000);
  w.Request(1000);
  EXPECT_EQ(w.Pump(), 4);
  EXPECT_EQ(w.net_.Log(),
            "A->B DATA 1000@0 floor=100; A->B DATA 1424@0 floor=100; "
            "A->B DATA 1424@1424 floor=100; A->B DATA 152@2848 floor=100");
  EXPECT_TRUE(w.sender_.idle());
  EXPECT_EQ(w.stats_.data_sent, 4u);
}

TEST(Sender, Pump__StopsAtWhatIsGranted) {
  HomaConfig config;
  config.unsched_bytes = 2 * 1424;
  SendWorld w(config);
  Rpc& rpc = w.Request(100'000);
  EXPECT_EQ(w.Pump(), 2);
  EXPECT_TRUE(w.sender_.idle()) << "nothing ready: off the queue";
  ASSERT_TRUE(rpc.out->HandleGrant(4 * 1424, 0));
  w.sender_.Queue(rpc);
  EXPECT_EQ(w.Pump(), 2);
  EXPECT_EQ(w.net_.Log(),
            "A->B DATA 1424@0 floor=100; A->B DATA 1424@1424 floor=100; "
            "A->B DATA 1424@2848 floor=100; A->B DATA 1424@4272 floor=100");
}

TEST(Sender, Pump__APacedPeerWaitsForThePacerButShortMessagesDoNot) {
  HomaConfig config;
  config.link_bps = 1'000'000'000;
  config.max_nic_backlog_ns = 5 * kNsPerUs;  // about one packet
  SendWorld w(config);
  w.peer_.paced = true;
  w.Request(5000);
  EXPECT_EQ(w.Pump(), 1);
  EXPECT_EQ(w.Pump(), 0) << "the NIC queue is full";
  w.Request(500);  // under homa.pacer_bypass_bytes
  EXPECT_EQ(w.Pump(), 1);
  EXPECT_GT(w.sender_.NextSendTime(), w.clock_.NowNs());
  w.clock_.AdvanceTo(w.sender_.NextSendTime());
  EXPECT_EQ(w.Pump(), 1);
  EXPECT_EQ(w.net_.Log(),
            "A->B DATA 1424@0 floor=100; A->B DATA 500@0 floor=100; "
            "A->B DATA 1424@1424 floor=100");
}

TEST(Sender, Pump__AFullySentResponseAwaitsItsAck) {
  SendWorld w;
  ClientRecord& record = w.peer_.clients[EndpointPair(kServer, kA)];
  Rpc& rpc =
      w.rpcs_.NewServerRpc(nullptr, kServer, w.peer_, record, kA, 40, RpcState::kServerSending);
  rpc.out.emplace(Buffer::Allocate(2000), w.config_.unsched_bytes, 1424, 0);
  w.sender_.Queue(rpc);
  EXPECT_EQ(w.rpcs_.unanswered(), 1u);
  EXPECT_EQ(w.Pump(), 2);
  EXPECT_EQ(rpc.state, RpcState::kServerAwaitAck);
  EXPECT_EQ(w.rpcs_.unanswered(), 0u);
  EXPECT_EQ(w.net_.Log(), "A->B DATA 1424@0; A->B DATA 576@1424") << "servers send no floor";
}

TEST(Sender, Pump__AnAckRidesOnlyOnDataFromTheEndpointThatOwesIt) {
  SendWorld w;
  w.sender_.OweAck(w.peer_, {/*client_id=*/42, kServer, /*client_port=*/kA});
  w.Request(100, kB);
  w.Pump();
  w.Request(100, kA);
  w.Pump();
  EXPECT_EQ(w.net_.Log(), "A->B DATA 100@0 floor=100; A->B DATA 100@0 ack=42 floor=102");
  EXPECT_TRUE(w.peer_.pending_acks.empty());
}

TEST(Sender, FlushAcks__SendsWhatIsStillOwedAsAckPackets) {
  SendWorld w;
  for (uint64_t id : {200, 202, 204}) w.sender_.OweAck(w.peer_, {id, kServer, kA});
  w.sender_.OweAck(w.peer_, {206, kServer, kB});
  w.sender_.FlushAcks();
  w.tx_.Flush();
  EXPECT_EQ(w.net_.Log(), "A->B ACK 3; A->B ACK 1");
  EXPECT_TRUE(w.peer_.pending_acks.empty());
  EXPECT_FALSE(w.peer_.owed_acks_listed);
  EXPECT_EQ(w.stats_.acks_sent, 2u);
  w.sender_.FlushAcks();  // nothing owed: nothing sent
  w.tx_.Flush();
  EXPECT_EQ(w.net_.LogLines().size(), 2u);
}

TEST(Sender, SendAcks__LeavesOutWhatTheFloorCoversAndFillsPackets) {
  SendWorld w;
  std::vector<Rpc*> rpcs;
  for (int i = 0; i < 12; ++i) rpcs.push_back(&w.Request(10));
  w.Pump();
  w.net_.ClearLog();
  // 100 and 102 finish below the floor (104, still running); 106..122 above.
  for (Rpc* rpc : rpcs) {
    if (rpc->id == 104) continue;
    w.sender_.OweAck(w.peer_, {rpc->id, kServer, kA});
    w.sender_.Dequeue(*rpc);
    w.rpcs_.EraseClient(*rpc);
  }
  w.sender_.OweAck(w.peer_, {300, kServer, kB});  // another pair's: kept
  w.sender_.SendAcks(w.peer_, kA, kServer);
  w.tx_.Flush();
  EXPECT_EQ(w.net_.Log(), "A->B ACK 8; A->B ACK 1");
  ASSERT_EQ(w.peer_.pending_acks.size(), 1u);
  EXPECT_EQ(w.peer_.pending_acks[0].client_id, 300u);
}

TEST(Sender, SendAcks__WithNothingToAckStillSendsTheFloor) {
  SendWorld w;
  w.sender_.SendAcks(w.peer_, kA, kServer);
  w.tx_.Flush();
  EXPECT_EQ(w.net_.Log(), "A->B ACK 0");
}

}  // namespace
}  // namespace wharf::homa
