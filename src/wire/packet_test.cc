#include "wire/packet.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace wharf::wire {
namespace {

using Bytes = std::vector<std::byte>;

Bytes B(std::initializer_list<int> values) {
  Bytes out;
  for (int v : values) out.push_back(static_cast<std::byte>(v));
  return out;
}

// The first n bytes of a fixed, position-dependent pattern (so that a
// misplaced copy shows); n <= 65536.
std::span<const std::byte> PayloadSpan(size_t n) {
  static const Bytes kPattern = [] {
    Bytes b(65536);
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::byte>((i * 7 + 3) & 0xff);
    return b;
  }();
  return std::span(kPattern).first(n);
}

CommonHeader Common(PacketType type, uint8_t flags = 0) {
  CommonHeader c;
  c.type = type;
  c.flags = flags;
  c.sport = 4000;
  c.dport = 5000;
  c.rpc_id = 0x1122334455667788;
  return c;
}

Packet DataPacket(uint32_t message_length, uint32_t offset, size_t payload_bytes,
                  uint8_t flags = 0) {
  Data d;
  d.header.message_length = message_length;
  d.header.offset = offset;
  d.header.incoming = std::min<uint32_t>(message_length, 60000);
  d.header.cutoff_version = 3;
  d.header.ack = Ack{.client_id = 0x40, .server_port = 4001};
  d.header.ack_floor = 0x38;
  d.payload = PayloadSpan(payload_bytes);
  return Packet{Common(PacketType::kData, flags), d};
}

Packet GrantPacket(uint32_t offset, uint8_t priority, uint8_t flags = 0) {
  return Packet{Common(PacketType::kGrant), Grant{offset, priority, flags}};
}

Packet ResendPacket(uint32_t offset, uint32_t length, uint8_t priority) {
  return Packet{Common(PacketType::kResend), Resend{offset, length, priority}};
}

Packet CutoffsPacket(uint16_t version) {
  Cutoffs c;
  c.unsched_cutoffs = {0, 0, 0, 0, 1000000, 15000, 2800, 200};
  c.version = version;
  return Packet{Common(PacketType::kCutoffs), c};
}

Packet AckPacket(uint16_t count) {
  AckList a;
  a.count = count;
  for (uint16_t i = 0; i < count; ++i) {
    a.acks[i] = Ack{.client_id = 0x1000 + 2u * i, .server_port = static_cast<uint16_t>(4000 + i)};
  }
  return Packet{Common(PacketType::kAck), a};
}

// One valid packet of every type (and the size variants of DATA and ACK).
std::vector<std::pair<std::string, Packet>> ValidSamples() {
  std::vector<std::pair<std::string, Packet>> out = {
      {"data_first", DataPacket(10000, 0, 1400)},
      {"data_middle_retx", DataPacket(10000, 2800, 1400, kFlagRetransmit)},
      {"data_last", DataPacket(10000, 9800, 200)},
      {"data_one_byte", DataPacket(1, 0, 1)},
      {"data_zero_length_message", DataPacket(0, 0, 0)},
      {"grant", GrantPacket(120000, 5)},
      {"grant_resend_all", GrantPacket(30000, 0, kGrantResendAll)},
      {"resend", ResendPacket(1400, 2800, 7)},
      {"rpc_unknown", Packet{Common(PacketType::kRpcUnknown), RpcUnknown{}}},
      {"busy", Packet{Common(PacketType::kBusy), Busy{}}},
      {"need_ack", Packet{Common(PacketType::kNeedAck), NeedAck{}}},
      {"cutoffs", CutoffsPacket(9)},
  };
  for (uint16_t n = 0; n <= kMaxAcksPerPacket; ++n) {
    out.emplace_back("ack_" + std::to_string(n), AckPacket(n));
  }
  return out;
}

Bytes EncodeOrFail(const Packet& p) {
  Bytes buf(kMaxHeaderBytes + 65536);
  Result<size_t> n = Encode(p, buf);
  EXPECT_TRUE(n.ok()) << n.status();
  buf.resize(n.ok() ? *n : 0);
  return buf;
}

// Field-by-field equality, so that a failure names the field.
void ExpectSamePacket(const Packet& want, const Packet& got) {
  EXPECT_EQ(want.common.type, got.common.type);
  EXPECT_EQ(want.common.flags, got.common.flags);
  EXPECT_EQ(want.common.sport, got.common.sport);
  EXPECT_EQ(want.common.dport, got.common.dport);
  EXPECT_EQ(want.common.rpc_id, got.common.rpc_id);
  ASSERT_EQ(want.body.index(), got.body.index());
  if (const auto* w = std::get_if<Data>(&want.body)) {
    const auto& g = std::get<Data>(got.body);
    EXPECT_EQ(w->header.message_length, g.header.message_length);
    EXPECT_EQ(w->header.offset, g.header.offset);
    EXPECT_EQ(w->header.incoming, g.header.incoming);
    EXPECT_EQ(w->header.cutoff_version, g.header.cutoff_version);
    EXPECT_EQ(w->header.ack, g.header.ack);
    EXPECT_EQ(w->header.ack_floor, g.header.ack_floor);
    EXPECT_TRUE(std::ranges::equal(w->payload, g.payload)) << "payload differs";
  } else if (const auto* w = std::get_if<Grant>(&want.body)) {
    const auto& g = std::get<Grant>(got.body);
    EXPECT_EQ(w->offset, g.offset);
    EXPECT_EQ(w->priority, g.priority);
    EXPECT_EQ(w->flags, g.flags);
  } else if (const auto* w = std::get_if<Resend>(&want.body)) {
    const auto& g = std::get<Resend>(got.body);
    EXPECT_EQ(w->offset, g.offset);
    EXPECT_EQ(w->length, g.length);
    EXPECT_EQ(w->priority, g.priority);
  } else if (const auto* w = std::get_if<Cutoffs>(&want.body)) {
    const auto& g = std::get<Cutoffs>(got.body);
    EXPECT_EQ(w->unsched_cutoffs, g.unsched_cutoffs);
    EXPECT_EQ(w->version, g.version);
  } else if (const auto* w = std::get_if<AckList>(&want.body)) {
    const auto& g = std::get<AckList>(got.body);
    ASSERT_EQ(w->count, g.count);
    for (size_t i = 0; i < w->count; ++i) EXPECT_EQ(w->acks[i], g.acks[i]) << "ack " << i;
  }
}

void ExpectRoundTrip(const Packet& p) {
  Bytes wire = EncodeOrFail(p);
  Result<Packet> back = Decode(wire);
  ASSERT_TRUE(back.ok()) << back.status();
  ExpectSamePacket(p, *back);
}

// Decode must fail with InvalidArgument and a message containing `want`.
void ExpectRejected(const Bytes& bytes, std::string_view want) {
  Result<Packet> p = Decode(bytes);
  ASSERT_FALSE(p.ok()) << "decoded, expected error containing: " << want;
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find(want), std::string::npos)
      << "message: " << p.status().message() << "\nwanted: " << want;
}

// --- PacketTypeName ---

TEST(PacketTypeNameTest, NamesEveryType) {
  EXPECT_EQ(PacketTypeName(PacketType::kData), "DATA");
  EXPECT_EQ(PacketTypeName(PacketType::kGrant), "GRANT");
  EXPECT_EQ(PacketTypeName(PacketType::kResend), "RESEND");
  EXPECT_EQ(PacketTypeName(PacketType::kRpcUnknown), "RPC_UNKNOWN");
  EXPECT_EQ(PacketTypeName(PacketType::kBusy), "BUSY");
  EXPECT_EQ(PacketTypeName(PacketType::kCutoffs), "CUTOFFS");
  EXPECT_EQ(PacketTypeName(PacketType::kNeedAck), "NEED_ACK");
  EXPECT_EQ(PacketTypeName(PacketType::kAck), "ACK");
  EXPECT_EQ(PacketTypeName(static_cast<PacketType>(0x16)), "UNKNOWN");
  EXPECT_EQ(PacketTypeName(static_cast<PacketType>(0)), "UNKNOWN");
}

// --- DecodeCommonHeader ---

TEST(DecodeCommonHeaderTest, ReadsEveryField) {
  Bytes wire = EncodeOrFail(DataPacket(10000, 1400, 1400, kFlagRetransmit));
  Result<CommonHeader> c = DecodeCommonHeader(wire);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->type, PacketType::kData);
  EXPECT_EQ(c->flags, kFlagRetransmit);
  EXPECT_EQ(c->sport, 4000);
  EXPECT_EQ(c->dport, 5000);
  EXPECT_EQ(c->rpc_id, 0x1122334455667788u);
}

// Demultiplexing looks at 16 bytes only; the body is Decode's business.
TEST(DecodeCommonHeaderTest, DoesNotNeedTheBody) {
  Bytes wire = EncodeOrFail(GrantPacket(1, 1));
  wire.resize(kCommonHeaderBytes);
  EXPECT_TRUE(DecodeCommonHeader(wire).ok());
  EXPECT_FALSE(Decode(wire).ok());
}

TEST(DecodeCommonHeaderTest, RejectsBadCommonFields) {
  Bytes wire = EncodeOrFail(GrantPacket(1, 1));
  EXPECT_NE(DecodeCommonHeader(std::span(wire).first(15)).status().message().find("15 bytes"),
            std::string::npos);
  Bytes bad = wire;
  bad[0] = std::byte{1};  // before endpoint ids (sport/dport were UDP ports)
  EXPECT_NE(DecodeCommonHeader(bad).status().message().find("version 1"), std::string::npos);
  bad = wire;
  bad[1] = std::byte{0x16};
  EXPECT_NE(DecodeCommonHeader(bad).status().message().find("type 0x16"), std::string::npos);
  bad = wire;
  bad[2] = std::byte{0x40};
  EXPECT_NE(DecodeCommonHeader(bad).status().message().find("flag bits 0x40"), std::string::npos);
}

// --- Decode / Encode round trips ---

TEST(RoundTripTest, EverySampleOfEveryType) {
  for (const auto& [name, packet] : ValidSamples()) {
    SCOPED_TRACE(name);
    ExpectRoundTrip(packet);
  }
}

TEST(RoundTripTest, ExtremeValues) {
  CommonHeader max_common{PacketType::kData, kKnownFlags, UINT16_MAX, UINT16_MAX, UINT64_MAX};
  Data d;
  d.header = DataHeader{.message_length = UINT32_MAX,
                        .offset = UINT32_MAX - 1400,
                        .incoming = UINT32_MAX,
                        .cutoff_version = UINT16_MAX,
                        .ack = Ack{UINT64_MAX, UINT16_MAX},
                        .ack_floor = UINT64_MAX};
  d.payload = PayloadSpan(1400);
  ExpectRoundTrip(Packet{max_common, d});

  max_common.type = PacketType::kGrant;
  ExpectRoundTrip(Packet{max_common, Grant{UINT32_MAX, 7, kGrantResendAll}});
  max_common.type = PacketType::kResend;
  ExpectRoundTrip(Packet{max_common, Resend{UINT32_MAX, UINT32_MAX, 7}});
  max_common.type = PacketType::kCutoffs;
  Cutoffs c;
  c.unsched_cutoffs.fill(UINT32_MAX);
  c.version = UINT16_MAX;
  ExpectRoundTrip(Packet{max_common, c});
  max_common.type = PacketType::kAck;
  AckList a;
  a.count = kMaxAcksPerPacket;
  a.acks.fill(Ack{UINT64_MAX, UINT16_MAX});
  ExpectRoundTrip(Packet{max_common, a});

  // And the all-zero packet of each fixed type.
  CommonHeader zero{PacketType::kGrant, 0, 0, 0, 0};
  ExpectRoundTrip(Packet{zero, Grant{}});
  zero.type = PacketType::kResend;
  ExpectRoundTrip(Packet{zero, Resend{}});
  zero.type = PacketType::kCutoffs;
  ExpectRoundTrip(Packet{zero, Cutoffs{}});
}

TEST(RoundTripTest, EncodedSizeIsTheWireSize) {
  EXPECT_EQ(EncodeOrFail(DataPacket(10000, 0, 1400)).size(), kDataHeaderBytes + 1400);
  EXPECT_EQ(EncodeOrFail(DataPacket(0, 0, 0)).size(), kDataHeaderBytes);
  EXPECT_EQ(EncodeOrFail(GrantPacket(1, 1)).size(), kGrantBytes);
  EXPECT_EQ(EncodeOrFail(ResendPacket(1, 1, 1)).size(), kResendBytes);
  EXPECT_EQ(EncodeOrFail(CutoffsPacket(1)).size(), kCutoffsBytes);
  EXPECT_EQ(EncodeOrFail(Packet{Common(PacketType::kBusy), Busy{}}).size(), kCommonHeaderBytes);
  EXPECT_EQ(EncodeOrFail(AckPacket(0)).size(), kAckHeaderBytes);
  EXPECT_EQ(EncodeOrFail(AckPacket(8)).size(), kMaxAckBytes);
}

TEST(RoundTripTest, DecodedPayloadPointsIntoTheInput) {
  Bytes wire = EncodeOrFail(DataPacket(10000, 0, 1400));
  Result<Packet> p = Decode(wire);
  ASSERT_TRUE(p.ok()) << p.status();
  const Data& d = std::get<Data>(p->body);
  EXPECT_EQ(d.payload.data(), wire.data() + kDataHeaderBytes);
  EXPECT_EQ(d.payload.size(), 1400u);
}

// Random valid packets of random types, fixed seed: a wider net than the
// hand-picked samples, still deterministic.
TEST(RoundTripTest, RandomValidPackets) {
  std::mt19937_64 rng(0x5eed);
  auto u = [&](uint64_t max) { return std::uniform_int_distribution<uint64_t>(0, max)(rng); };
  for (int i = 0; i < 20000; ++i) {
    CommonHeader c{PacketType::kData, static_cast<uint8_t>(u(1)), static_cast<uint16_t>(u(65535)),
                   static_cast<uint16_t>(u(65535)), u(UINT64_MAX)};
    Body body;
    switch (u(7)) {
      case 0: {
        Data d;
        d.header.message_length = static_cast<uint32_t>(u(UINT32_MAX));
        const size_t payload = std::min<uint64_t>(d.header.message_length, u(3000));
        d.header.offset = static_cast<uint32_t>(u(d.header.message_length - payload));
        d.header.incoming = static_cast<uint32_t>(u(d.header.message_length));
        d.header.cutoff_version = static_cast<uint16_t>(u(65535));
        d.header.ack = Ack{u(UINT64_MAX), static_cast<uint16_t>(u(65535))};
        d.header.ack_floor = u(UINT64_MAX);
        d.payload = PayloadSpan(payload);
        body = d;
        break;
      }
      case 1:
        body = Grant{static_cast<uint32_t>(u(UINT32_MAX)), static_cast<uint8_t>(u(7)),
                     static_cast<uint8_t>(u(1))};
        break;
      case 2:
        body = Resend{static_cast<uint32_t>(u(UINT32_MAX)), static_cast<uint32_t>(u(UINT32_MAX)),
                      static_cast<uint8_t>(u(7))};
        break;
      case 3:
        body = RpcUnknown{};
        break;
      case 4:
        body = Busy{};
        break;
      case 5: {
        Cutoffs cut;
        for (auto& v : cut.unsched_cutoffs) v = static_cast<uint32_t>(u(UINT32_MAX));
        cut.version = static_cast<uint16_t>(u(65535));
        body = cut;
        break;
      }
      case 6:
        body = NeedAck{};
        break;
      default: {
        AckList a;
        a.count = static_cast<uint16_t>(u(kMaxAcksPerPacket));
        for (size_t k = 0; k < a.count; ++k) {
          a.acks[k] = Ack{u(UINT64_MAX), static_cast<uint16_t>(u(65535))};
        }
        body = a;
        break;
      }
    }
    constexpr PacketType kTypes[] = {
        PacketType::kData, PacketType::kGrant,   PacketType::kResend,  PacketType::kRpcUnknown,
        PacketType::kBusy, PacketType::kCutoffs, PacketType::kNeedAck, PacketType::kAck};
    c.type = kTypes[body.index()];
    ExpectRoundTrip(Packet{c, body});
    if (testing::Test::HasFailure()) {
      ADD_FAILURE() << "iteration " << i;
      return;
    }
  }
}

// --- Golden bytes: these pin the big-endian layout drawn in packet.h ---

TEST(GoldenTest, DataHeader) {
  Data d;
  d.header = DataHeader{.message_length = 10000,
                        .offset = 1400,
                        .incoming = 8000,
                        .cutoff_version = 0x0203,
                        .ack = Ack{0xA1A2A3A4A5A6A7A8, 4001},
                        .ack_floor = 0xB1B2B3B4B5B6B7B8};
  const Bytes payload = B({0xDE, 0xAD});
  d.payload = payload;
  Bytes wire = EncodeOrFail(Packet{Common(PacketType::kData, kFlagRetransmit), d});
  const Bytes want = B({
      0x02, 0x10, 0x01, 0x00,                          // version, type, flags, reserved
      0x0F, 0xA0, 0x13, 0x88,                          // sport endpoint 4000, dport 5000
      0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,  // rpc_id
      0x00, 0x00, 0x27, 0x10,                          // message_length 10000
      0x00, 0x00, 0x05, 0x78,                          // offset 1400
      0x00, 0x00, 0x1F, 0x40,                          // incoming 8000
      0x02, 0x03, 0x0F, 0xA1,                          // cutoff_version, ack_server_port 4001
      0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7, 0xA8,  // ack_client_id
      0xB1, 0xB2, 0xB3, 0xB4, 0xB5, 0xB6, 0xB7, 0xB8,  // ack_floor
      0xDE, 0xAD,                                      // payload
  });
  EXPECT_EQ(wire, want);
}

TEST(GoldenTest, Grant) {
  CommonHeader c{PacketType::kGrant, 0, 5000, 4000, 0x1122334455667789};
  Bytes wire = EncodeOrFail(Packet{c, Grant{120000, 5, kGrantResendAll}});
  const Bytes want = B({
      0x02, 0x11, 0x00, 0x00,                          // version, type, flags, reserved
      0x13, 0x88, 0x0F, 0xA0,                          // sport 5000, dport 4000
      0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x89,  // rpc_id (server side: odd)
      0x00, 0x01, 0xD4, 0xC0,                          // offset 120000
      0x05, 0x01, 0x00, 0x00,                          // priority, flags, pad
  });
  EXPECT_EQ(wire, want);
}

TEST(GoldenTest, Resend) {
  Bytes wire = EncodeOrFail(ResendPacket(1400, 2800, 7));
  const Bytes want = B({
      0x02, 0x12, 0x00, 0x00, 0x0F, 0xA0, 0x13, 0x88,  // common
      0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,  //
      0x00, 0x00, 0x05, 0x78,                          // offset 1400
      0x00, 0x00, 0x0A, 0xF0,                          // length 2800
      0x07, 0x00, 0x00, 0x00,                          // priority, pad
  });
  EXPECT_EQ(wire, want);
}

TEST(GoldenTest, Cutoffs) {
  Bytes wire = EncodeOrFail(CutoffsPacket(0x0102));
  const Bytes want = B({
      0x02, 0x15, 0x00, 0x00, 0x0F, 0xA0, 0x13, 0x88,  // common
      0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,  //
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // cutoffs[0], [1]
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // cutoffs[2], [3]
      0x00, 0x0F, 0x42, 0x40, 0x00, 0x00, 0x3A, 0x98,  // 1000000, 15000
      0x00, 0x00, 0x0A, 0xF0, 0x00, 0x00, 0x00, 0xC8,  // 2800, 200
      0x01, 0x02, 0x00, 0x00,                          // version, pad
  });
  EXPECT_EQ(wire, want);
}

TEST(GoldenTest, Ack) {
  Bytes wire = EncodeOrFail(AckPacket(2));
  const Bytes want = B({
      0x02, 0x18, 0x00, 0x00, 0x0F, 0xA0, 0x13, 0x88,  // common
      0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,  //
      0x00, 0x02, 0x00, 0x00,                          // count 2, pad
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00,  // client_id 0x1000
      0x0F, 0xA0, 0x00, 0x00,                          // server_port 4000, pad
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x02,  // client_id 0x1002
      0x0F, 0xA1, 0x00, 0x00,                          // server_port 4001, pad
  });
  EXPECT_EQ(wire, want);
}

// --- Reserved and pad bytes: written as zero, ignored on read ---

TEST(PadBytesTest, EncodeZeroesPadsInADirtyBuffer) {
  for (const auto& [name, packet] : ValidSamples()) {
    SCOPED_TRACE(name);
    Bytes clean = EncodeOrFail(packet);
    Bytes dirty(clean.size(), std::byte{0xAA});
    Result<size_t> n = Encode(packet, dirty);
    ASSERT_TRUE(n.ok()) << n.status();
    EXPECT_EQ(dirty, clean);
  }
}

TEST(PadBytesTest, DecodeIgnoresNonZeroPads) {
  struct Case {
    Packet packet;
    std::vector<size_t> pad_offsets;
  };
  const Case cases[] = {
      {DataPacket(10000, 0, 1400), {3}},           {GrantPacket(10000, 3), {3, 22, 23}},
      {ResendPacket(0, 1400, 7), {3, 25, 26, 27}}, {CutoffsPacket(1), {3, 50, 51}},
      {AckPacket(2), {3, 18, 19, 30, 31, 42, 43}},
  };
  for (const Case& c : cases) {
    Bytes wire = EncodeOrFail(c.packet);
    for (size_t at : c.pad_offsets) wire.at(at) = std::byte{0xFF};
    Result<Packet> back = Decode(wire);
    ASSERT_TRUE(back.ok()) << back.status();
    ExpectSamePacket(c.packet, *back);
  }
}

// --- Malformed input: every rule, with the error naming type, field and why ---

TEST(DecodeRejectsTest, ShorterThanCommonHeader) {
  ExpectRejected(Bytes(9), "packet of 9 bytes is shorter than the 16-byte common header");
  ExpectRejected(Bytes{}, "packet of 0 bytes");
}

TEST(DecodeRejectsTest, WrongVersion) {
  for (int v : {0, 1, 3, 255}) {
    Bytes wire = EncodeOrFail(GrantPacket(1, 1));
    wire[0] = static_cast<std::byte>(v);
    ExpectRejected(wire, "unsupported protocol version " + std::to_string(v) + " (expected 2)");
  }
}

TEST(DecodeRejectsTest, UnknownType) {
  for (int t : {0x00, 0x0F, 0x16, 0x19, 0xFF}) {
    Bytes wire = EncodeOrFail(Packet{Common(PacketType::kBusy), Busy{}});
    wire[1] = static_cast<std::byte>(t);
    char want[32];
    std::snprintf(want, sizeof(want), "unknown packet type 0x%02x", t);
    ExpectRejected(wire, want);
  }
}

TEST(DecodeRejectsTest, UnknownFlagBits) {
  Bytes wire = EncodeOrFail(DataPacket(10000, 0, 1400));
  wire[2] = std::byte{0x03};
  ExpectRejected(wire, "DATA: unknown flag bits 0x02 in flags 0x03");
  wire = EncodeOrFail(GrantPacket(1, 1));
  wire[2] = std::byte{0x80};
  ExpectRejected(wire, "GRANT: unknown flag bits 0x80");
}

TEST(DecodeRejectsTest, ShorterThanTypeHeader) {
  struct Case {
    Packet packet;
    size_t cut_to;
    std::string want;
  };
  const Case cases[] = {
      {DataPacket(0, 0, 0), 47, "DATA: packet of 47 bytes is shorter than the 48-byte DATA header"},
      {GrantPacket(1, 1), 20, "GRANT: packet of 20 bytes is shorter than the 24-byte GRANT"},
      {ResendPacket(1, 1, 1), 27, "RESEND: packet of 27 bytes is shorter than the 28-byte"},
      {CutoffsPacket(1), 16, "CUTOFFS: packet of 16 bytes is shorter than the 52-byte"},
      {AckPacket(0), 19, "ACK: packet of 19 bytes is shorter than the 20-byte ACK header"},
  };
  for (const Case& c : cases) {
    Bytes wire = EncodeOrFail(c.packet);
    wire.resize(c.cut_to);
    ExpectRejected(wire, c.want);
  }
}

TEST(DecodeRejectsTest, TrailingBytesAfterFixedSizePackets) {
  struct Case {
    Packet packet;
    size_t extra;
    std::string want;
  };
  const Case cases[] = {
      {GrantPacket(1, 1), 3, "GRANT: 3 trailing bytes"},
      {ResendPacket(1, 1, 1), 1, "RESEND: 1 trailing bytes"},
      {CutoffsPacket(1), 4, "CUTOFFS: 4 trailing bytes"},
      {Packet{Common(PacketType::kRpcUnknown), RpcUnknown{}}, 1, "RPC_UNKNOWN: 1 trailing bytes"},
      {Packet{Common(PacketType::kBusy), Busy{}}, 100, "BUSY: 100 trailing bytes"},
      {Packet{Common(PacketType::kNeedAck), NeedAck{}}, 8, "NEED_ACK: 8 trailing bytes"},
  };
  for (const Case& c : cases) {
    Bytes wire = EncodeOrFail(c.packet);
    wire.resize(wire.size() + c.extra);
    ExpectRejected(wire, c.want);
  }
}

TEST(DecodeRejectsTest, AckCountAboveMax) {
  Bytes wire = EncodeOrFail(AckPacket(8));
  wire[17] = std::byte{9};
  ExpectRejected(wire, "ACK: count 9 exceeds 8");
  wire[16] = std::byte{0xFF};
  wire[17] = std::byte{0xFF};
  ExpectRejected(wire, "ACK: count 65535 exceeds 8");
}

TEST(DecodeRejectsTest, AckSizeMustMatchCountExactly) {
  Bytes wire = EncodeOrFail(AckPacket(2));
  wire.resize(wire.size() - kAckEntryBytes);
  ExpectRejected(wire, "ACK: packet of 32 bytes, expected 44 for count 2");
  wire = EncodeOrFail(AckPacket(1));
  wire.resize(wire.size() + kAckEntryBytes);
  ExpectRejected(wire, "ACK: packet of 44 bytes, expected 32 for count 1");
  wire = EncodeOrFail(AckPacket(0));
  wire.push_back(std::byte{0});
  ExpectRejected(wire, "ACK: packet of 21 bytes, expected 20 for count 0");
}

// Builds DATA bytes directly so that invalid headers can reach Decode
// (Encode refuses them).
Bytes RawData(uint32_t message_length, uint32_t offset, uint32_t incoming, size_t payload_bytes) {
  Bytes wire = EncodeOrFail(DataPacket(0, 0, 0));
  auto put32 = [&](size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) wire[at + i] = static_cast<std::byte>(v >> (24 - 8 * i));
  };
  put32(16, message_length);
  put32(20, offset);
  put32(24, incoming);
  wire.resize(kDataHeaderBytes + payload_bytes, std::byte{0x5A});
  return wire;
}

TEST(DecodeRejectsTest, DataPayloadPastMessageEnd) {
  ExpectRejected(RawData(10000, 9000, 10000, 1400),
                 "DATA: offset 9000 + payload 1400 exceeds message_length 10000");
  ExpectRejected(RawData(1000, 0, 1000, 1001), "offset 0 + payload 1001 exceeds");
  // Would wrap to 1400 in 32-bit arithmetic.
  ExpectRejected(RawData(UINT32_MAX, UINT32_MAX, 0, 1401),
                 "offset 4294967295 + payload 1401 exceeds message_length 4294967295");
  ExpectRejected(RawData(UINT32_MAX, UINT32_MAX, 0, 1), "offset 4294967295 + payload 1 exceeds");
  // Zero-length message: only offset 0 with an empty payload.
  ExpectRejected(RawData(0, 1, 0, 0), "offset 1 + payload 0 exceeds message_length 0");
  EXPECT_TRUE(Decode(RawData(10000, 8600, 10000, 1400)).ok());
  EXPECT_TRUE(Decode(RawData(UINT32_MAX, UINT32_MAX - 1, UINT32_MAX, 1)).ok());
}

TEST(DecodeRejectsTest, DataIncomingPastMessageEnd) {
  ExpectRejected(RawData(10000, 0, 10001, 1400),
                 "DATA: incoming 10001 exceeds message_length 10000");
  ExpectRejected(RawData(0, 0, 1, 0), "DATA: incoming 1 exceeds message_length 0");
}

TEST(DecodeRejectsTest, DataEmptyPayloadOnlyForZeroLengthMessage) {
  ExpectRejected(RawData(10000, 1400, 10000, 0),
                 "DATA: empty payload at offset 1400 of a 10000-byte message");
  ExpectRejected(RawData(1, 0, 1, 0), "DATA: empty payload at offset 0 of a 1-byte message");
  Result<Packet> zero = Decode(RawData(0, 0, 0, 0));
  ASSERT_TRUE(zero.ok()) << zero.status();
  EXPECT_TRUE(std::get<Data>(zero->body).payload.empty());
}

TEST(DecodeRejectsTest, PriorityAboveSeven) {
  Bytes wire = EncodeOrFail(GrantPacket(1, 7));
  wire[20] = std::byte{8};
  ExpectRejected(wire, "GRANT: priority 8 exceeds 7");
  wire = EncodeOrFail(ResendPacket(1, 1, 7));
  wire[24] = std::byte{255};
  ExpectRejected(wire, "RESEND: priority 255 exceeds 7");
}

TEST(DecodeRejectsTest, UnknownGrantFlagBits) {
  Bytes wire = EncodeOrFail(GrantPacket(1, 1));
  wire[21] = std::byte{0x03};
  ExpectRejected(wire, "GRANT: unknown grant flag bits 0x02 in flags 0x03");
}

// Every prefix of every valid packet: rejected, never read past its end (each
// prefix is its own exact-size heap allocation, so ASan sees any over-read).
// DATA is the one exception by design: its payload length is the datagram
// length minus the header (UDP keeps datagrams whole and checksums them), so a
// prefix that still holds the header and at least one payload byte is a
// valid, shorter DATA. Those must decode to exactly the bytes present.
TEST(DecodeTruncationTest, EveryPrefixOfEveryValidPacket) {
  for (const auto& [name, packet] : ValidSamples()) {
    SCOPED_TRACE(name);
    const Bytes wire = EncodeOrFail(packet);
    ASSERT_TRUE(Decode(wire).ok());
    for (size_t n = 0; n < wire.size(); ++n) {
      const Bytes prefix(wire.begin(), wire.begin() + static_cast<ptrdiff_t>(n));
      Result<Packet> p = Decode(prefix);
      if (packet.common.type == PacketType::kData && n > kDataHeaderBytes) {
        ASSERT_TRUE(p.ok()) << "prefix " << n << ": " << p.status();
        EXPECT_EQ(std::get<Data>(p->body).payload.size(), n - kDataHeaderBytes);
        continue;
      }
      ASSERT_FALSE(p.ok()) << "prefix of " << n << " bytes decoded";
      EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
    }
  }
}

// --- Encode ---

TEST(EncodeTest, TooSmallBufferFailsWithoutWriting) {
  for (const auto& [name, packet] : ValidSamples()) {
    SCOPED_TRACE(name);
    const size_t size = EncodeOrFail(packet).size();
    Bytes buf(size - 1, std::byte{0xAA});
    Result<size_t> n = Encode(packet, buf);
    ASSERT_FALSE(n.ok());
    EXPECT_EQ(n.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(n.status().message().find("output buffer of " + std::to_string(size - 1) +
                                        " bytes is smaller than the " + std::to_string(size)),
              std::string::npos)
        << n.status();
    EXPECT_EQ(buf, Bytes(size - 1, std::byte{0xAA}));
  }
  Result<size_t> none = Encode(GrantPacket(1, 1), std::span<std::byte>());
  EXPECT_FALSE(none.ok());
}

void ExpectEncodeRejects(const Packet& p, std::string_view want) {
  Bytes buf(kMaxHeaderBytes + 65536);
  Result<size_t> n = Encode(p, buf);
  ASSERT_FALSE(n.ok()) << "encoded, expected error containing: " << want;
  EXPECT_EQ(n.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(n.status().message().find(want), std::string::npos) << n.status();
}

// Encode refuses exactly what Decode would refuse, so it never emits a packet
// the peer drops as malformed.
TEST(EncodeTest, RejectsOutOfRangeFields) {
  ExpectEncodeRejects(GrantPacket(1, 8), "GRANT: priority 8 exceeds 7");
  ExpectEncodeRejects(GrantPacket(1, 1, 0x04), "GRANT: unknown grant flag bits 0x04");
  ExpectEncodeRejects(ResendPacket(1, 1, 9), "RESEND: priority 9 exceeds 7");
}

TEST(EncodeTest, RejectsAckCountAboveMax) {
  Packet p = AckPacket(8);
  std::get<AckList>(p.body).count = 9;
  ExpectEncodeRejects(p, "ACK: count 9 exceeds 8");
}

TEST(EncodeTest, RejectsInvalidData) {
  ExpectEncodeRejects(DataPacket(10000, 9000, 1400),
                      "DATA: offset 9000 + payload 1400 exceeds message_length 10000");
  ExpectEncodeRejects(DataPacket(10000, 1400, 0), "DATA: empty payload at offset 1400");
  Packet p = DataPacket(10000, 0, 1400);
  std::get<Data>(p.body).header.incoming = 10001;
  ExpectEncodeRejects(p, "DATA: incoming 10001 exceeds message_length 10000");
}

TEST(EncodeTest, RejectsUnknownFlagsAndTypeMismatch) {
  ExpectEncodeRejects(DataPacket(10000, 0, 1400, 0x02), "DATA: unknown flag bits 0x02");
  Packet p = GrantPacket(1, 1);
  p.common.type = PacketType::kResend;
  ExpectEncodeRejects(p, "common.type RESEND does not match the GRANT body");
}

// The sender may build the payload in place right after the header.
TEST(EncodeTest, PayloadAlreadyInPlace) {
  Bytes buf(kDataHeaderBytes + 1400);
  std::ranges::copy(PayloadSpan(1400), buf.begin() + kDataHeaderBytes);
  Packet p = DataPacket(10000, 0, 1400);
  std::get<Data>(p.body).payload = std::span(buf).subspan(kDataHeaderBytes);
  Result<size_t> n = Encode(p, buf);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(buf, EncodeOrFail(DataPacket(10000, 0, 1400)));
}

// --- EncodeDataHeader ---

TEST(EncodeDataHeaderTest, MatchesEncodeAndDecodesWithPayload) {
  const Packet p = DataPacket(10000, 2800, 1400, kFlagRetransmit);
  const Data& d = std::get<Data>(p.body);
  Bytes buf(kDataHeaderBytes + 1400, std::byte{0xAA});
  ASSERT_TRUE(EncodeDataHeader(p.common, d.header, buf).ok());
  std::ranges::copy(d.payload, buf.begin() + kDataHeaderBytes);
  EXPECT_EQ(buf, EncodeOrFail(p));
}

TEST(EncodeDataHeaderTest, WritesOnlyTheHeader) {
  const Packet p = DataPacket(10000, 0, 1400);
  Bytes buf(kDataHeaderBytes + 8, std::byte{0xAA});
  ASSERT_TRUE(EncodeDataHeader(p.common, std::get<Data>(p.body).header, buf).ok());
  EXPECT_EQ(Bytes(buf.begin() + kDataHeaderBytes, buf.end()), Bytes(8, std::byte{0xAA}));
}

TEST(EncodeDataHeaderTest, RejectsBadInput) {
  const Packet p = DataPacket(10000, 0, 1400);
  DataHeader h = std::get<Data>(p.body).header;
  Bytes small(kDataHeaderBytes - 1);
  Status s = EncodeDataHeader(p.common, h, small);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("output buffer of 47 bytes"), std::string::npos) << s;

  Bytes buf(kDataHeaderBytes);
  CommonHeader grant = p.common;
  grant.type = PacketType::kGrant;
  EXPECT_NE(EncodeDataHeader(grant, h, buf).message().find("GRANT, not DATA"), std::string::npos);
  CommonHeader flagged = p.common;
  flagged.flags = 0x10;
  EXPECT_NE(EncodeDataHeader(flagged, h, buf).message().find("flag bits 0x10"), std::string::npos);
  DataHeader past = h;
  past.offset = 10001;
  EXPECT_NE(EncodeDataHeader(p.common, past, buf).message().find("offset 10001 exceeds"),
            std::string::npos);
  past = h;
  past.incoming = 10001;
  EXPECT_NE(EncodeDataHeader(p.common, past, buf).message().find("incoming 10001 exceeds"),
            std::string::npos);
}

}  // namespace
}  // namespace wharf::wire
