// MetadataCodec: what encodes decodes to the same pairs, and what encoding
// would not make (over a limit, cut short) is refused with why.
#include "client/metadata_codec.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace wharf::internal {
namespace {

std::vector<std::byte> Encoded(const Metadata& metadata) {
  std::vector<std::byte> bytes(MetadataBytes(metadata));
  EXPECT_EQ(EncodeMetadata(metadata, bytes.data()), bytes.data() + bytes.size());
  return bytes;
}

TEST(MetadataCodecTest, WhatEncodesDecodesToTheSamePairs) {
  for (const Metadata& metadata :
       {Metadata{}, Metadata{{"", ""}}, Metadata{{"trace", "t-1"}, {"tenant", std::string(300, 'x')}},
        Metadata(kMaxMetadataEntries, {"k", "v"})}) {
    ASSERT_TRUE(CheckMetadata(metadata).ok());
    std::vector<std::byte> bytes = Encoded(metadata);
    bytes.push_back(std::byte{0x7f});  // what follows (a request) is not taken
    Metadata back;
    Result<size_t> used = DecodeMetadata(bytes, &back);
    ASSERT_TRUE(used.ok()) << used.status();
    EXPECT_EQ(*used, bytes.size() - 1);
    EXPECT_EQ(back, metadata);
  }
}

TEST(MetadataCodecTest, OverALimitIsRefusedSayingWhich) {
  Status entries = CheckMetadata(Metadata(kMaxMetadataEntries + 1, {"k", "v"}));
  EXPECT_EQ(entries.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(entries.message().find("65 entries"), std::string::npos) << entries;
  Status bytes = CheckMetadata({{"k", std::string(kMaxMetadataBytes, 'v')}});
  EXPECT_EQ(bytes.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bytes.message().find("16385 bytes"), std::string::npos) << bytes;
  // The same, forged on the wire: the encoder would not make them.
  Metadata back;
  EXPECT_FALSE(DecodeMetadata(Encoded(Metadata(kMaxMetadataEntries + 1, {"k", "v"})), &back).ok());
  EXPECT_FALSE(DecodeMetadata(Encoded({{"k", std::string(kMaxMetadataBytes, 'v')}}), &back).ok());
}

TEST(MetadataCodecTest, CutShortAnywhereIsRefused) {
  const std::vector<std::byte> whole = Encoded({{"key", "value"}, {"k2", "v2"}});
  for (size_t n = 0; n < whole.size(); ++n) {
    Metadata back;
    Result<size_t> used = DecodeMetadata(std::span(whole.data(), n), &back);
    EXPECT_EQ(used.status().code(), StatusCode::kInvalidArgument) << n;
  }
}

}  // namespace
}  // namespace wharf::internal
