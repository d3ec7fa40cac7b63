// The mesh probe's messages: what goes in comes out, and every malformed
// input is refused with a message that says what is wrong.
#include "wire/mesh_probe.h"

#include <gtest/gtest.h>

#include <vector>

namespace wharf::wire {
namespace {

std::vector<std::byte> Probe(size_t size, const MeshProbe& probe) {
  std::vector<std::byte> bytes(size, std::byte{0xAA});
  EXPECT_TRUE(EncodeMeshProbe(probe, bytes).ok());
  return bytes;
}

std::vector<std::byte> Answer(const MeshAnswer& answer) {
  std::vector<std::byte> bytes(kMeshAnswerBytes, std::byte{0xAA});
  EXPECT_TRUE(EncodeMeshAnswer(answer, bytes).ok());
  return bytes;
}

TEST(MeshProbeTest, AProbeRoundTripsAtEverySizeAndIsPaddedWithZeros) {
  const MeshProbe in{.epoch = 0x0102030405060708, .sequence = 42, .sent_ns = UINT64_MAX};
  for (size_t size : {kMeshProbeHeaderBytes, size_t{64}, size_t{1500}, kMaxProbeBytes}) {
    std::vector<std::byte> bytes = Probe(size, in);
    for (size_t i = kMeshProbeHeaderBytes; i < size; ++i) ASSERT_EQ(bytes[i], std::byte{0}) << i;
    Result<MeshProbe> out = DecodeMeshProbe(bytes);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(out->epoch, in.epoch);
    EXPECT_EQ(out->sequence, in.sequence);
    EXPECT_EQ(out->sent_ns, in.sent_ns);
  }
}

TEST(MeshProbeTest, TheFieldsAreBigEndianAtTheirOffsets) {
  std::vector<std::byte> bytes = Probe(32, {.epoch = 1, .sequence = 2, .sent_ns = 3});
  EXPECT_EQ(bytes[0], std::byte{0x57});  // "WMSH"
  EXPECT_EQ(bytes[3], std::byte{0x48});
  EXPECT_EQ(bytes[4], std::byte{2});  // version
  EXPECT_EQ(bytes[5], std::byte{1});  // kind: probe
  EXPECT_EQ(bytes[6], std::byte{0});  // answer priority: the responder's choice
  EXPECT_EQ(bytes[7], std::byte{0});
  EXPECT_EQ(bytes[15], std::byte{1});
  EXPECT_EQ(bytes[23], std::byte{2});
  EXPECT_EQ(bytes[31], std::byte{3});
}

// Byte 6 carries the answer's priority plus one, 0 meaning "by size".
TEST(MeshProbeTest, TheAnswerPriorityRoundTripsInByteSix) {
  for (int8_t priority = kAnswerPriorityBySize; priority <= kMaxAnswerPriority; ++priority) {
    std::vector<std::byte> bytes = Probe(64, {.sequence = 1, .answer_priority = priority});
    EXPECT_EQ(bytes[6], static_cast<std::byte>(priority + 1));
    Result<MeshProbe> out = DecodeMeshProbe(bytes);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(out->answer_priority, priority);
  }
  std::vector<std::byte> room(64);
  EXPECT_FALSE(EncodeMeshProbe({.answer_priority = 8}, room).ok());
  EXPECT_FALSE(EncodeMeshProbe({.answer_priority = -2}, room).ok());
  std::vector<std::byte> bytes = Probe(64, {});
  bytes[6] = std::byte{9};
  Result<MeshProbe> out = DecodeMeshProbe(bytes);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("answer priority byte 9"), std::string::npos)
      << out.status();
}

// A version-1 probe (before byte 6 meant anything) is still answered, at
// the responder's choice; in version 1 byte 6 is reserved and must be zero.
TEST(MeshProbeTest, AVersionOneProbeIsReadWithNoPriority) {
  std::vector<std::byte> bytes = Probe(64, {.sequence = 5});
  bytes[4] = std::byte{1};
  Result<MeshProbe> out = DecodeMeshProbe(bytes);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->sequence, 5u);
  EXPECT_EQ(out->answer_priority, kAnswerPriorityBySize);
  bytes[6] = std::byte{3};
  EXPECT_NE(DecodeMeshProbe(bytes).status().message().find("reserved"), std::string::npos);
  std::vector<std::byte> answer = Answer({.sequence = 5});
  answer[4] = std::byte{1};
  EXPECT_TRUE(DecodeMeshAnswer(answer).ok());
}

TEST(MeshProbeTest, AnAnswerRoundTrips) {
  const MeshAnswer in{.epoch = 7,
                      .sequence = 1u << 20,
                      .sent_ns = 123456789,
                      .dwell_ns = 2500,
                      .dwell_source = TimestampSource::kKernelSoftware};
  Result<MeshAnswer> out = DecodeMeshAnswer(Answer(in));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->epoch, in.epoch);
  EXPECT_EQ(out->sequence, in.sequence);
  EXPECT_EQ(out->sent_ns, in.sent_ns);
  EXPECT_EQ(out->dwell_ns, in.dwell_ns);
  EXPECT_EQ(out->dwell_source, in.dwell_source);
}

TEST(MeshProbeTest, SizesOutsideTheLimitsAreRefused) {
  std::vector<std::byte> small(kMeshProbeHeaderBytes - 1);
  EXPECT_FALSE(EncodeMeshProbe({}, small).ok());
  std::vector<std::byte> big(kMaxProbeBytes + 1);
  EXPECT_FALSE(EncodeMeshProbe({}, big).ok());
  std::vector<std::byte> answer_room(kMeshAnswerBytes - 1);
  EXPECT_FALSE(EncodeMeshAnswer({}, answer_room).ok());

  const std::vector<std::byte> whole = Probe(32, {});
  Result<MeshProbe> too_short = DecodeMeshProbe(std::span(whole).first(31));
  ASSERT_FALSE(too_short.ok());
  EXPECT_NE(too_short.status().message().find("shorter than its 32-byte header"), std::string::npos)
      << too_short.status();
  std::vector<std::byte> too_long(kMaxProbeBytes + 1);
  std::vector<std::byte> head = Probe(32, {});
  std::copy(head.begin(), head.end(), too_long.begin());
  EXPECT_FALSE(DecodeMeshProbe(too_long).ok());
  std::vector<std::byte> answer = Answer({});
  answer.push_back(std::byte{0});
  EXPECT_FALSE(DecodeMeshAnswer(answer).ok());
}

TEST(MeshProbeTest, EachMalformedHeaderFieldIsNamed) {
  struct Case {
    size_t offset;
    std::byte value;
    const char* says;
  };
  for (const Case& c : {Case{0, std::byte{0}, "bad magic"}, Case{4, std::byte{3}, "version 3"},
                        Case{4, std::byte{0}, "version 0"},
                        Case{5, std::byte{2}, "kind 2"}, Case{7, std::byte{1}, "reserved"}}) {
    std::vector<std::byte> bytes = Probe(64, {});
    bytes[c.offset] = c.value;
    Result<MeshProbe> out = DecodeMeshProbe(bytes);
    ASSERT_FALSE(out.ok()) << c.says;
    EXPECT_NE(out.status().message().find(c.says), std::string::npos) << out.status();
  }
  // A probe is not an answer, nor the other way round.
  std::vector<std::byte> probe = Probe(kMeshAnswerBytes, {});
  EXPECT_FALSE(DecodeMeshAnswer(probe).ok());
  EXPECT_FALSE(DecodeMeshProbe(Answer({})).ok());
  std::vector<std::byte> answer = Answer({});
  answer[40] = std::byte{9};
  EXPECT_NE(DecodeMeshAnswer(answer).status().message().find("timestamp source 9"),
            std::string::npos);
  answer = Answer({});
  answer[47] = std::byte{1};
  EXPECT_NE(DecodeMeshAnswer(answer).status().message().find("reserved"), std::string::npos);
  answer = Answer({});
  answer[6] = std::byte{1};  // an answer has no priority byte
  EXPECT_NE(DecodeMeshAnswer(answer).status().message().find("reserved"), std::string::npos);
}

}  // namespace
}  // namespace wharf::wire
