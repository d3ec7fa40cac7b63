// The ucx:// header: every kind round-trips, the bytes are where
// wire/ucx_header.h draws them, and every malformed header is refused with
// what is wrong.
#include "wire/ucx_header.h"

#include <gtest/gtest.h>

#include <string>

namespace wharf::wire {
namespace {

std::string Bytes(const UcxHeader& h) {
  UcxHeaderBytes b = EncodeUcxHeader(h);
  return std::string(b.data(), b.size());
}

TEST(UcxHeaderTest, EveryKindRoundTrips) {
  for (const UcxHeader& h : {UcxHeader{UcxKind::kRequest, 0, 4000, 1},
                             UcxHeader{UcxKind::kResponse, 0, 0, ~0ull},
                             UcxHeader{UcxKind::kRefused, 8, 0, 77},
                             UcxHeader{UcxKind::kCancel, 0, 4000, 5}}) {
    auto decoded = DecodeUcxHeader(Bytes(h));
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(*decoded, h);
  }
}

TEST(UcxHeaderTest, FieldsSitWhereTheLayoutSays) {
  const std::string b = Bytes({UcxKind::kRequest, 0, 0x1234, 0x0102030405060708});
  EXPECT_EQ(b, std::string("\x01\x01\x00\x00\x12\x34\x00\x00\x01\x02\x03\x04\x05\x06\x07\x08", 16));
}

TEST(UcxHeaderTest, MalformedHeadersAreRefusedSayingWhy) {
  const std::string good = Bytes({UcxKind::kRequest, 0, 9, 3});
  auto refused = [](std::string bytes, const char* why) {
    auto r = DecodeUcxHeader(bytes);
    ASSERT_FALSE(r.ok()) << why;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(why), std::string::npos) << r.status();
  };
  refused(good.substr(0, 15), "expected 16 bytes");
  refused(good + "x", "expected 16 bytes");
  refused("", "expected 16 bytes");
  std::string b = good;
  b[0] = 2;
  refused(b, "version 2");
  b = good;
  b[1] = 0;
  refused(b, "unknown kind 0");
  b[1] = 9;
  refused(b, "unknown kind 9");
  b = good;
  b[7] = 1;
  refused(b, "reserved");
  refused(Bytes({UcxKind::kRequest, 0, 9, 0}), "rpc id 0");
  refused(Bytes({UcxKind::kResponse, 3, 0, 1}), "a code on a kind");
  refused(Bytes({UcxKind::kRefused, 0, 0, 1}), "without a code");
  refused(Bytes({UcxKind::kResponse, 0, 7, 1}), "reply port");
}

}  // namespace
}  // namespace wharf::wire
