// shm/attach_protocol_test.cc: control-socket messages round-trip, and
// garbage decodes to an error, never a crash or an over-read.
#include "shm/attach_protocol.h"

#include <gtest/gtest.h>

#include <random>

namespace wharf::shm {
namespace {

TEST(AttachProtocolTest, HelloAndWelcomeRoundTrip) {
  HelloMsg hello{.address = "homa://0.0.0.0:0/kv",
                 .geometry = {.command_entries = 64, .completion_entries = 128, .heap_bytes = 1 << 20},
                 .program = "test"};
  Result<AttachMessage> m = DecodeAttach(EncodeHello(hello));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->type, ControlType::kHello);
  EXPECT_EQ(m->hello.address, hello.address);
  EXPECT_EQ(m->hello.geometry, hello.geometry);
  EXPECT_EQ(m->hello.program, "test");

  WelcomeMsg welcome{.status = PermissionDeniedError("uid 7 not allowed"), .app_id = 9};
  m = DecodeAttach(EncodeWelcome(welcome));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->welcome.status.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(m->welcome.status.message(), "uid 7 not allowed");
  EXPECT_EQ(m->welcome.app_id, 9u);
}

TEST(AttachProtocolTest, StatsStatusAndFaultRoundTrip) {
  Result<AttachMessage> m = DecodeAttach(EncodeStatsReply({{"a", 1}, {"b.c", 2}}));
  ASSERT_TRUE(m.ok());
  ASSERT_EQ(m->stats.size(), 2u);
  EXPECT_EQ(m->stats[1].name, "b.c");
  EXPECT_EQ(m->stats[1].value, 2u);
  m = DecodeAttach(EncodeStatusReply("{\"apps\":[]}"));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->text, "{\"apps\":[]}");
  m = DecodeAttach(EncodeFault(DataLossError("command ring: producer index went backwards")));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->fault.code(), StatusCode::kDataLoss);
  m = DecodeAttach(EncodeRequest(ControlType::kStatusRequest));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->type, ControlType::kStatusRequest);
}

TEST(AttachProtocolTest, RefusesTruncatedTrailingAndForeignMessages) {
  std::vector<std::byte> hello = EncodeHello({.address = "homa://1.2.3.4:5"});
  for (size_t n = 0; n < hello.size(); ++n) {
    EXPECT_FALSE(DecodeAttach(std::span(hello).first(n)).ok()) << n;
  }
  std::vector<std::byte> longer = hello;
  longer.push_back(std::byte{0});
  EXPECT_FALSE(DecodeAttach(longer).ok());
  std::vector<std::byte> bad_magic = hello;
  bad_magic[0] = std::byte{0};
  EXPECT_FALSE(DecodeAttach(bad_magic).ok());
  std::vector<std::byte> bad_type = EncodeRequest(static_cast<ControlType>(99));
  EXPECT_FALSE(DecodeAttach(bad_type).ok());
}

// A welcome with one byte changed or cut short: every decode is either an
// error naming the control message, or a message whose strings keep their
// limit and that encodes back to exactly the bytes it came from (the
// decoder accepts nothing the encoder would not write). Both outcomes occur.
TEST(AttachProtocolTest, RandomBytesDecodeToAnErrorOrToWhatTheyEncode) {
  std::mt19937_64 rng(7);
  std::vector<std::byte> base = EncodeWelcome({.address = "homa://127.0.0.1:4000/#3"});
  int decoded = 0;
  int refused = 0;
  for (int i = 0; i < 20000; ++i) {
    std::vector<std::byte> b = base;
    b[rng() % b.size()] = static_cast<std::byte>(rng());
    if (rng() % 4 == 0) b.resize(rng() % (b.size() + 1));
    Result<AttachMessage> m = DecodeAttach(b);
    if (!m.ok()) {
      ++refused;
      ASSERT_EQ(m.status().code(), StatusCode::kInvalidArgument) << m.status();
      ASSERT_EQ(m.status().message().rfind("control message", 0), 0u) << m.status();
      continue;
    }
    ++decoded;
    ASSERT_LE(m->welcome.address.size(), kMaxControlString);
    ASSERT_EQ(m->type, ControlType::kWelcome);  // a changed type byte is refused
    ASSERT_EQ(EncodeWelcome(m->welcome), b) << "byte-for-byte round trip, case " << i;
  }
  EXPECT_GT(decoded, 100);
  EXPECT_GT(refused, 100);
}

}  // namespace
}  // namespace wharf::shm
