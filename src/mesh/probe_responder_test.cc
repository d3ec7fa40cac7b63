// MeshResponder: answers what is a probe, with its fields echoed and the
// dwell measured, and refuses what is not.
#include "mesh/probe_responder.h"

#include <gtest/gtest.h>

#include <vector>

#include "wire/mesh_probe.h"

namespace wharf::mesh {
namespace {

TEST(MeshResponderTest, AnAnswerEchoesTheProbeAndCarriesTheDwell) {
  std::vector<std::byte> request(100);
  ASSERT_TRUE(wire::EncodeMeshProbe({.epoch = 9, .sequence = 5, .sent_ns = 777}, request).ok());
  MeshResponder responder;
  Result<ProbeAnswer> answer = responder.Answer(request, 1000, 1250);
  ASSERT_TRUE(answer.ok()) << answer.status();
  Result<wire::MeshAnswer> decoded = wire::DecodeMeshAnswer(answer->message.span());
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->epoch, 9u);
  EXPECT_EQ(decoded->sequence, 5u);
  EXPECT_EQ(decoded->sent_ns, 777u);
  EXPECT_EQ(decoded->dwell_ns, 250u);
  EXPECT_EQ(decoded->dwell_source, wire::TimestampSource::kMonotonic);
  EXPECT_EQ(responder.counters().answered, 1u);
  // The probe asked for no priority: the transport chooses the answer's.
  EXPECT_EQ(answer->priority, transport::kPriorityBySize);
}

// The answer goes back in the probe's class: at the priority it asks for.
TEST(MeshResponderTest, TheAnswerGoesAtThePriorityTheProbeAsksFor) {
  MeshResponder responder;
  for (int8_t priority : {0, 3, 7}) {
    std::vector<std::byte> request(64);
    ASSERT_TRUE(wire::EncodeMeshProbe({.epoch = 1, .sequence = 1, .answer_priority = priority},
                                      request)
                    .ok());
    Result<ProbeAnswer> answer = responder.Answer(request, 0, 0);
    ASSERT_TRUE(answer.ok()) << answer.status();
    EXPECT_EQ(answer->priority, priority);
  }
}

TEST(MeshResponderTest, WhatIsNoProbeIsRefusedAndCounted) {
  MeshResponder responder;
  std::vector<std::byte> garbage(40, std::byte{0x55});
  Result<ProbeAnswer> answer = responder.Answer(garbage, 0, 0);
  ASSERT_FALSE(answer.ok());
  EXPECT_EQ(answer.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(responder.counters().malformed, 1u);
  EXPECT_EQ(responder.counters().answered, 0u);
}

TEST(MeshResponderTest, AClockThatWentBackGivesZeroDwellNotAHugeOne) {
  std::vector<std::byte> request(32);
  ASSERT_TRUE(wire::EncodeMeshProbe({.epoch = 1, .sequence = 1, .sent_ns = 1}, request).ok());
  MeshResponder responder;
  Result<ProbeAnswer> answer = responder.Answer(request, 2000, 1000);
  ASSERT_TRUE(answer.ok());
  EXPECT_EQ(wire::DecodeMeshAnswer(answer->message.span())->dwell_ns, 0u);
}

}  // namespace
}  // namespace wharf::mesh
