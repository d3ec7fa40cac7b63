// Tests of the TCP stream frame codec: exact bytes of each type, round trips,
// and one rejection per rule of stream_frame.h.
#include "wire/stream_frame.h"

#include <gtest/gtest.h>

#include <array>
#include <vector>

namespace wharf::wire {
namespace {

constexpr uint32_t kChunkLimit = 64 << 10;

std::array<std::byte, kStreamHeaderBytes> Encoded(const StreamFrameHeader& h) {
  std::array<std::byte, kStreamHeaderBytes> out{};
  Status s = EncodeStreamHeader(h, out);
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

std::vector<uint8_t> AsBytes(std::span<const std::byte> b) {
  std::vector<uint8_t> out;
  for (std::byte x : b) out.push_back(static_cast<uint8_t>(x));
  return out;
}

StreamFrameHeader Request(uint32_t length, uint32_t offset, uint32_t chunk) {
  return {.type = StreamFrameType::kRequest,
          .chunk_length = chunk,
          .rpc_id = 7,
          .message_length = length,
          .chunk_offset = offset};
}

// Decodes `h` after changing byte `at` to `value`; returns the status.
Status DecodeWithByte(const StreamFrameHeader& h, size_t at, uint8_t value) {
  auto bytes = Encoded(h);
  bytes[at] = std::byte{value};
  return DecodeStreamHeader(bytes, kChunkLimit).status();
}

TEST(StreamFrameTest, RequestHeaderBytesAreBigEndianAsDrawn) {
  StreamFrameHeader h = Request(0x01020304, 0x0000AABB, 0x100);
  h.rpc_id = 0x1122334455667788ULL;
  h.ack_floor = 0x99;
  h.message_length = 0x01020304;
  auto bytes = Encoded(h);
  EXPECT_EQ(AsBytes(bytes),
            (std::vector<uint8_t>{1, 2, 0, 0,                                //
                                  0, 0, 1, 0,                                // chunk_length
                                  0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,  // rpc_id
                                  1, 2, 3, 4,                                // message_length
                                  0, 0, 0xAA, 0xBB,                          // chunk_offset
                                  0, 0, 0, 0, 0, 0, 0, 0x99}));              // ack_floor
  auto back = DecodeStreamHeader(bytes, kChunkLimit);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, h);
}

TEST(StreamFrameTest, EveryTypeRoundTrips) {
  std::vector<StreamFrameHeader> frames = {
      {.type = StreamFrameType::kHello, .chunk_length = kStreamHelloBytes},
      Request(100, 0, 100),
      Request(0, 0, 0),
      {.type = StreamFrameType::kResponse, .chunk_length = 10, .rpc_id = 3,
       .message_length = 20, .chunk_offset = 10},
      {.type = StreamFrameType::kResponse, .flags = kStreamFlagLost, .rpc_id = 3},
      {.type = StreamFrameType::kAck, .ack_floor = 12},
      {.type = StreamFrameType::kPing, .rpc_id = 99},
      {.type = StreamFrameType::kPong, .rpc_id = 0},
      {.type = StreamFrameType::kAbort, .rpc_id = 5},
      {.type = StreamFrameType::kAbort, .flags = kStreamFlagAbortResponse, .rpc_id = 5},
  };
  for (const auto& h : frames) {
    auto back = DecodeStreamHeader(Encoded(h), kChunkLimit);
    ASSERT_TRUE(back.ok()) << DescribeStreamHeader(h) << ": " << back.status();
    EXPECT_EQ(*back, h) << DescribeStreamHeader(h);
  }
}

TEST(StreamFrameTest, HelloBodyRoundTripsAndChecksMagic) {
  std::array<std::byte, kStreamHelloBytes> body{};
  ASSERT_TRUE(EncodeStreamHello({.listen_port = 4000, .instance_id = 0xABCDEF}, body).ok());
  EXPECT_EQ(AsBytes(std::span(body).first(8)), (std::vector<uint8_t>{'W', 'H', 'R', 'F', 0x0F, 0xA0, 0, 0}));
  auto hello = DecodeStreamHello(body);
  ASSERT_TRUE(hello.ok()) << hello.status();
  EXPECT_EQ(hello->listen_port, 4000);
  EXPECT_EQ(hello->instance_id, 0xABCDEFu);

  auto bad = body;
  bad[0] = std::byte{'G'};  // "GET /" from an HTTP client
  EXPECT_NE(DecodeStreamHello(bad).status().message().find("magic"), std::string::npos);
  bad = body;
  bad[6] = std::byte{1};
  EXPECT_FALSE(DecodeStreamHello(bad).ok());
  EXPECT_FALSE(DecodeStreamHello(std::span(body).first(15)).ok());
  std::array<std::byte, kStreamHelloBytes> zero_instance{};
  ASSERT_FALSE(EncodeStreamHello({.listen_port = 1, .instance_id = 0}, zero_instance).ok());
  body[15] = std::byte{0};
  body[14] = std::byte{0};
  body[13] = std::byte{0};
  EXPECT_FALSE(DecodeStreamHello(body).ok());
}

TEST(StreamFrameTest, ShortInputIsRejected) {
  auto bytes = Encoded(Request(1, 0, 1));
  EXPECT_FALSE(DecodeStreamHeader(std::span(bytes).first(31), kChunkLimit).ok());
  EXPECT_FALSE(DecodeStreamHeader({}, kChunkLimit).ok());
  std::array<std::byte, 31> small{};
  EXPECT_FALSE(EncodeStreamHeader(Request(1, 0, 1), small).ok());
}

TEST(StreamFrameTest, WrongVersionUnknownTypeFlagsAndReservedAreRejected) {
  StreamFrameHeader h = Request(10, 0, 10);
  EXPECT_NE(DecodeWithByte(h, 0, 2).message().find("version 2"), std::string::npos);
  EXPECT_NE(DecodeWithByte(h, 1, 0).message().find("unknown type 0"), std::string::npos);
  EXPECT_NE(DecodeWithByte(h, 1, 8).message().find("unknown type 8"), std::string::npos);
  EXPECT_NE(DecodeWithByte(h, 2, 1).message().find("flags"), std::string::npos);
  EXPECT_NE(DecodeWithByte(h, 3, 1).message().find("reserved"), std::string::npos);
  StreamFrameHeader ping{.type = StreamFrameType::kPing};
  EXPECT_FALSE(DecodeWithByte(ping, 2, kStreamFlagLost).ok());
  // Each flag belongs to one type.
  EXPECT_FALSE(DecodeWithByte(h, 2, kStreamFlagAbortResponse).ok());
  EXPECT_FALSE(DecodeWithByte({.type = StreamFrameType::kAbort, .rpc_id = 1}, 2, kStreamFlagLost).ok());
}

TEST(StreamFrameTest, AbsurdChunksAreRejected) {
  // Over the receiver's chunk limit, even though the message is large enough.
  auto over = Encoded(Request(1 << 20, 0, kChunkLimit + 1));
  EXPECT_NE(DecodeStreamHeader(over, kChunkLimit).status().message().find("chunk limit"),
            std::string::npos);
  // The same header is fine for a receiver with a larger limit.
  EXPECT_TRUE(DecodeStreamHeader(over, kChunkLimit * 2).ok());
  // Ends past the message (offset beyond total, and u32 wrap-around).
  StreamFrameHeader past = Request(100, 90, 20);
  std::array<std::byte, kStreamHeaderBytes> out{};
  EXPECT_FALSE(EncodeStreamHeader(past, out).ok());
  auto bytes = Encoded(Request(100, 80, 20));
  bytes[23] = std::byte{81};  // offset 81 + 20 > 100
  EXPECT_NE(DecodeStreamHeader(bytes, kChunkLimit).status().message().find("past message_length"),
            std::string::npos);
  bytes = Encoded(Request(0xFFFFFFFF, 0, 16));
  bytes[20] = bytes[21] = bytes[22] = bytes[23] = std::byte{0xFF};  // offset 2^32-1 + 16 wraps
  EXPECT_FALSE(DecodeStreamHeader(bytes, kChunkLimit).ok());
  // An empty chunk of a non-empty message would let a peer spin us for free.
  bytes = Encoded(Request(100, 0, 1));
  bytes[7] = std::byte{0};
  EXPECT_NE(DecodeStreamHeader(bytes, kChunkLimit).status().message().find("empty chunk"),
            std::string::npos);
  // rpc id 0.
  bytes = Encoded(Request(1, 0, 1));
  for (size_t i = 8; i < 16; ++i) bytes[i] = std::byte{0};
  EXPECT_FALSE(DecodeStreamHeader(bytes, kChunkLimit).ok());
}

TEST(StreamFrameTest, UnusedFieldsMustBeZero) {
  // ack_floor on a RESPONSE, message_length on a PING, chunk on an ACK,
  // a HELLO whose length is not its body, an ABORT without an id.
  EXPECT_FALSE(DecodeWithByte({.type = StreamFrameType::kResponse, .chunk_length = 1, .rpc_id = 1,
                               .message_length = 1},
                              31, 1)
                   .ok());
  EXPECT_FALSE(DecodeWithByte({.type = StreamFrameType::kPing}, 19, 1).ok());
  EXPECT_FALSE(DecodeWithByte({.type = StreamFrameType::kAck, .ack_floor = 1}, 7, 1).ok());
  EXPECT_FALSE(DecodeWithByte({.type = StreamFrameType::kAck, .ack_floor = 1}, 31, 0).ok());
  EXPECT_FALSE(
      DecodeWithByte({.type = StreamFrameType::kHello, .chunk_length = kStreamHelloBytes}, 7, 17)
          .ok());
  EXPECT_FALSE(
      DecodeWithByte({.type = StreamFrameType::kHello, .chunk_length = kStreamHelloBytes}, 23, 1)
          .ok());
  EXPECT_FALSE(DecodeWithByte({.type = StreamFrameType::kAbort, .rpc_id = 1}, 15, 0).ok());
  // A lost response carries no message.
  std::array<std::byte, kStreamHeaderBytes> out{};
  EXPECT_FALSE(EncodeStreamHeader({.type = StreamFrameType::kResponse, .flags = kStreamFlagLost,
                                   .chunk_length = 1, .rpc_id = 1, .message_length = 1},
                                  out)
                   .ok());
}

TEST(StreamFrameTest, DescribeNamesTheFields) {
  StreamFrameHeader h = Request(9000, 1400, 1400);
  h.ack_floor = 5;
  EXPECT_EQ(DescribeStreamHeader(h), "REQUEST id=7 1400@1400/9000 floor=5");
  EXPECT_EQ(DescribeStreamHeader({.type = StreamFrameType::kPong, .rpc_id = 3}), "PONG nonce=3");
  EXPECT_EQ(StreamFrameTypeName(static_cast<StreamFrameType>(42)), "UNKNOWN");
}

}  // namespace
}  // namespace wharf::wire
