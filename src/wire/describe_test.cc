#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "wire/packet.h"

namespace wharf::wire {
namespace {

using Bytes = std::vector<std::byte>;

CommonHeader Common(PacketType type, uint8_t flags = 0) {
  return CommonHeader{type, flags, 4000, 5000, 4};
}

Bytes Wire(const Packet& p) {
  Bytes buf(kMaxHeaderBytes + 2000);
  Result<size_t> n = Encode(p, buf);
  EXPECT_TRUE(n.ok()) << n.status();
  buf.resize(n.ok() ? *n : 0);
  return buf;
}

Bytes DataWire(uint32_t message_length, uint32_t offset, size_t payload_bytes, uint8_t flags = 0) {
  static const Bytes kPayload(2000, std::byte{0x11});
  Data d;
  d.header.message_length = message_length;
  d.header.offset = offset;
  d.header.incoming = message_length;
  d.payload = std::span(kPayload).first(payload_bytes);
  return Wire(Packet{Common(PacketType::kData, flags), d});
}

// These strings are what scenario tests' packet logs compare; keep exact.
TEST(DescribeTest, OneLinePerType) {
  EXPECT_EQ(Describe(DataWire(10000, 0, 1400)), "DATA 1400@0");
  EXPECT_EQ(Describe(DataWire(10000, 2800, 1400, kFlagRetransmit)), "DATA 1400@2800 retx");
  EXPECT_EQ(Describe(DataWire(0, 0, 0)), "DATA 0@0");
  EXPECT_EQ(Describe(Wire(Packet{Common(PacketType::kGrant), Grant{10000, 3, 0}})), "GRANT 10000");
  EXPECT_EQ(Describe(Wire(Packet{Common(PacketType::kResend), Resend{0, 1400, 7}})),
            "RESEND 1400@0");
  EXPECT_EQ(Describe(Wire(Packet{Common(PacketType::kRpcUnknown), RpcUnknown{}})), "RPC_UNKNOWN");
  EXPECT_EQ(Describe(Wire(Packet{Common(PacketType::kBusy), Busy{}})), "BUSY");
  EXPECT_EQ(Describe(Wire(Packet{Common(PacketType::kNeedAck), NeedAck{}})), "NEED_ACK");
  Cutoffs c;
  c.version = 3;
  EXPECT_EQ(Describe(Wire(Packet{Common(PacketType::kCutoffs), c})), "CUTOFFS v3");
  AckList a;
  a.count = 2;
  EXPECT_EQ(Describe(Wire(Packet{Common(PacketType::kAck), a})), "ACK 2");
}

TEST(DescribeTest, MalformedOnAnyDecodeFailure) {
  EXPECT_EQ(Describe(Bytes{}), "MALFORMED");
  EXPECT_EQ(Describe(Bytes(9)), "MALFORMED");
  Bytes wire = Wire(Packet{Common(PacketType::kGrant), Grant{1, 1, 0}});
  wire[20] = std::byte{9};  // priority 9
  EXPECT_EQ(Describe(wire), "MALFORMED");
}

TEST(DescribeVerboseTest, DataShowsEveryField) {
  Data d;
  d.header = DataHeader{.message_length = 9000,
                        .offset = 1400,
                        .incoming = 5000,
                        .cutoff_version = 2,
                        .ack = Ack{6, 4001},
                        .ack_floor = 8};
  static const Bytes kPayload(1400, std::byte{0});
  d.payload = kPayload;
  EXPECT_EQ(DescribeVerbose(Wire(Packet{Common(PacketType::kData, kFlagRetransmit), d})),
            "DATA id=4 4000->5000 len=9000 off=1400 payload=1400 incoming=5000 cutoff_v=2 "
            "ack=6@4001 ack_floor=8 flags=0x01(retx)");
}

TEST(DescribeVerboseTest, ControlPacketsShowEveryField) {
  EXPECT_EQ(DescribeVerbose(Wire(Packet{Common(PacketType::kGrant), Grant{10000, 5, 1}})),
            "GRANT id=4 4000->5000 off=10000 prio=5 grant_flags=0x01(resend_all) flags=0x00");
  EXPECT_EQ(DescribeVerbose(Wire(Packet{Common(PacketType::kResend), Resend{2800, 1400, 7}})),
            "RESEND id=4 4000->5000 off=2800 len=1400 prio=7 flags=0x00");
  EXPECT_EQ(DescribeVerbose(Wire(Packet{Common(PacketType::kBusy), Busy{}})),
            "BUSY id=4 4000->5000 flags=0x00");
  Cutoffs c;
  c.unsched_cutoffs = {0, 0, 0, 0, 1000000, 15000, 2800, 200};
  c.version = 3;
  EXPECT_EQ(DescribeVerbose(Wire(Packet{Common(PacketType::kCutoffs), c})),
            "CUTOFFS id=4 4000->5000 v=3 cutoffs=[0,0,0,0,1000000,15000,2800,200] flags=0x00");
  AckList a;
  a.count = 2;
  a.acks[0] = Ack{10, 4000};
  a.acks[1] = Ack{UINT64_MAX, 65535};
  EXPECT_EQ(DescribeVerbose(Wire(Packet{Common(PacketType::kAck), a})),
            "ACK id=4 4000->5000 count=2 acks=[10@4000,18446744073709551615@65535] flags=0x00");
}

TEST(DescribeVerboseTest, MalformedSaysWhy) {
  EXPECT_EQ(DescribeVerbose(Bytes(9)),
            "MALFORMED: packet of 9 bytes is shorter than the 16-byte common header");
}

}  // namespace
}  // namespace wharf::wire
