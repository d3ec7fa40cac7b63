#include "engine/frame.h"

#include <gtest/gtest.h>

namespace wharf::engine {
namespace {

TEST(FrameTest, RoundTripUsesHeadroomWithoutCopy) {
  Buffer payload = Buffer::Copy("payload");
  const std::byte* before = payload.data();
  Frame f;
  f.kind = FrameKind::kRpc;
  f.flags = kFrameOrdered;
  f.code = 77;
  f.conn_id = 0x1122334455667788ULL;
  f.seq = 9;
  f.deadline_us = 5000;
  Buffer message = WrapFrame(f, std::move(payload));
  EXPECT_EQ(message.data() + kFrameBytes, before);  // prepended in place
  EXPECT_EQ(message.size(), kFrameBytes + 7);
  Result<Frame> back = UnwrapFrame(message);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->kind, FrameKind::kRpc);
  EXPECT_EQ(back->flags, kFrameOrdered);
  EXPECT_EQ(back->code, 77u);
  EXPECT_EQ(back->conn_id, 0x1122334455667788ULL);
  EXPECT_EQ(back->seq, 9u);
  EXPECT_EQ(back->deadline_us, 5000u);
  EXPECT_EQ(message.AsStringView(), "payload");
}

TEST(FrameTest, EmptyBufferGetsCopied) {
  Frame f;
  f.kind = FrameKind::kConnect;
  Buffer message = WrapFrame(f, Buffer());
  EXPECT_EQ(message.size(), kFrameBytes);
  ASSERT_TRUE(UnwrapFrame(message).ok());
  EXPECT_TRUE(message.empty());
}

TEST(FrameTest, ShortOrUnknownIsAnError) {
  Buffer short_message = Buffer::Copy("tiny");
  auto r = UnwrapFrame(short_message);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("shorter"), std::string::npos);
  Buffer junk = Buffer::Allocate(kFrameBytes);
  std::memset(junk.data(), 0xEE, kFrameBytes);
  EXPECT_EQ(UnwrapFrame(junk).status().code(), StatusCode::kInvalidArgument);
}

TEST(FrameTest, ErrorReplyCarriesCodeAndText) {
  Buffer reply = ErrorReply(NotFoundError("no such thing"));
  auto f = UnwrapFrame(reply);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->kind, FrameKind::kReply);
  EXPECT_EQ(f->code, static_cast<uint32_t>(StatusCode::kNotFound));
  EXPECT_EQ(reply.AsStringView(), "no such thing");
}

}  // namespace
}  // namespace wharf::engine
