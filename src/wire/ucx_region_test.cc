// ucx://'s remote-memory bodies: each round-trips, and every malformed one
// is refused saying why.
#include "wire/ucx_region.h"

#include <gtest/gtest.h>

#include <string>

namespace wharf::wire {
namespace {

void Refused(const Status& s, const char* why) {
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << why;
  EXPECT_NE(s.message().find(why), std::string::npos) << s;
}

TEST(UcxRegionTest, EveryBodyRoundTrips) {
  const RegionAsk ask{.size = 1 << 20, .alignment = 64, .access = kRegionRead, .lifetime_ms = 5};
  EXPECT_EQ(*DecodeRegionAsk(EncodeRegionAsk(ask)), ask);
  const RegionGrant grant{7, 0x7f0000001000, 4096, kRegionAllAccess, 60'000, "key bytes"};
  EXPECT_EQ(*DecodeRegionGrant(EncodeRegionGrant(grant)), grant);
  EXPECT_EQ(*DecodeRegionRelease(EncodeRegionRelease(9)), 9u);
  const RegionImmediate imm{3, 16, 4096, 0xfeed};
  EXPECT_EQ(*DecodeRegionImmediate(EncodeRegionImmediate(imm)), imm);
}

TEST(UcxRegionTest, MalformedBodiesAreRefusedSayingWhy) {
  const std::string ask = EncodeRegionAsk({.size = 64});
  Refused(DecodeRegionAsk(ask.substr(1)).status(), "expected 20 bytes");
  Refused(DecodeRegionAsk(EncodeRegionAsk({.size = 0})).status(), "size 0");
  Refused(DecodeRegionAsk(EncodeRegionAsk({.size = 8, .alignment = 12})).status(),
          "not a power of two");
  Refused(DecodeRegionAsk(EncodeRegionAsk({.size = 8, .access = 0})).status(), "access bits 0");
  Refused(DecodeRegionAsk(EncodeRegionAsk({.size = 8, .access = 8})).status(), "access bits 8");
  std::string reserved = ask;
  reserved[13] = 1;
  Refused(DecodeRegionAsk(reserved).status(), "reserved");

  const std::string grant = EncodeRegionGrant({1, 4096, 64, kRegionRead, 10, "k"});
  Refused(DecodeRegionGrant(grant.substr(0, 10)).status(), "shorter than its fixed part");
  Refused(DecodeRegionGrant(grant + "x").status(), "expected 37 bytes");
  Refused(DecodeRegionGrant(EncodeRegionGrant({1, 4096, 64, kRegionRead, 10, ""})).status(),
          "key of 0 bytes");
  Refused(DecodeRegionGrant(
              EncodeRegionGrant({1, 4096, 64, kRegionRead, 10, std::string(kMaxRegionKeyBytes + 1, 'k')}))
              .status(),
          "key of 4097 bytes");
  Refused(DecodeRegionGrant(EncodeRegionGrant({0, 4096, 64, kRegionRead, 10, "k"})).status(),
          "region or size 0");
  Refused(DecodeRegionGrant(EncodeRegionGrant({1, ~0ull - 8, 64, kRegionRead, 10, "k"})).status(),
          "wraps around");

  Refused(DecodeRegionRelease("1234567").status(), "expected 8 bytes");
  Refused(DecodeRegionRelease(EncodeRegionRelease(0)).status(), "region 0");
  Refused(DecodeRegionImmediate(EncodeRegionImmediate({0, 0, 0, 0})).status(), "region 0");
  Refused(DecodeRegionImmediate("").status(), "expected 32 bytes");
}

}  // namespace
}  // namespace wharf::wire
