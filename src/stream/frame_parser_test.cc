// Tests of FrameParser: framing across arbitrary splits, chunk reassembly,
// direct reads, the memory bound (growth with bytes received, the shared
// budget), ABORT and Discard, and one rejection per stream rule.
#include "stream/frame_parser.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "stream/testing/tcp_harness.h"

namespace wharf::stream {
namespace {

using testing::MatchesPattern;
using testing::Pattern;
using wire::StreamFrameHeader;
using wire::StreamFrameType;

constexpr uint32_t kChunk = 64 << 10;

class RecordingSink : public FrameParser::Sink {
 public:
  Status OnHello(const wire::StreamHello& hello) override {
    hellos.push_back(hello);
    return OkStatus();
  }
  Status OnFrame(const StreamFrameHeader& header) override {
    frames.push_back(header);
    return frame_error;
  }
  Result<FrameParser::Decision> OnMessageStart(const StreamFrameHeader& first) override {
    starts.push_back(first);
    if (!start_error.ok()) return start_error;
    return discard_all ? FrameParser::Decision::kDiscard : FrameParser::Decision::kAccept;
  }
  void OnMessage(StreamFrameType type, uint64_t rpc_id, Buffer message) override {
    messages.push_back({type, rpc_id, std::move(message)});
  }
  void OnMessageRefused(StreamFrameType type, uint64_t rpc_id, uint32_t length) override {
    refused.push_back({type, rpc_id, Buffer::Allocate(length > 16 ? 16 : length)});
  }

  struct Message {
    StreamFrameType type;
    uint64_t rpc_id;
    Buffer bytes;
  };
  std::vector<wire::StreamHello> hellos;
  std::vector<StreamFrameHeader> frames;
  std::vector<StreamFrameHeader> starts;
  std::vector<Message> messages;
  std::vector<Message> refused;
  bool discard_all = false;
  Status frame_error;
  Status start_error;
};

// Builds a byte stream of frames.
class Stream {
 public:
  Stream& Hello(uint64_t instance = 5) {
    Header({.type = StreamFrameType::kHello, .chunk_length = wire::kStreamHelloBytes});
    std::array<std::byte, wire::kStreamHelloBytes> body{};
    EXPECT_TRUE(wire::EncodeStreamHello({.listen_port = 1, .instance_id = instance}, body).ok());
    bytes.insert(bytes.end(), body.begin(), body.end());
    return *this;
  }
  Stream& Header(const StreamFrameHeader& h) {
    std::array<std::byte, wire::kStreamHeaderBytes> out{};
    EXPECT_TRUE(wire::EncodeStreamHeader(h, out).ok()) << wire::DescribeStreamHeader(h);
    bytes.insert(bytes.end(), out.begin(), out.end());
    return *this;
  }
  // One chunk [offset, offset + length) of `message`.
  Stream& Chunk(StreamFrameType type, uint64_t id, const Buffer& message, uint32_t offset,
                uint32_t length) {
    Header({.type = type,
            .chunk_length = length,
            .rpc_id = id,
            .message_length = static_cast<uint32_t>(message.size()),
            .chunk_offset = offset});
    bytes.insert(bytes.end(), message.data() + offset, message.data() + offset + length);
    return *this;
  }
  // The whole message in chunks of `chunk`.
  Stream& Message(StreamFrameType type, uint64_t id, const Buffer& message, uint32_t chunk = kChunk) {
    uint32_t offset = 0;
    do {
      uint32_t length = std::min<uint32_t>(chunk, static_cast<uint32_t>(message.size()) - offset);
      Chunk(type, id, message, offset, length);
      offset += length;
    } while (offset < message.size());
    return *this;
  }
  std::vector<std::byte> bytes;
};

struct Fixture {
  explicit Fixture(uint64_t budget_limit = 1ull << 30, FrameParser::Limits limits = {})
      : budget{.limit = budget_limit}, parser(limits, &budget, &sink) {}
  IncomingBudget budget;
  RecordingSink sink;
  FrameParser parser;
};

TEST(FrameParserTest, HelloThenMessagesInOneRead) {
  Fixture f;
  Buffer a = Pattern(10, 1);
  Buffer b = Pattern(0, 2);
  Stream s;
  s.Hello(77).Message(StreamFrameType::kRequest, 3, a).Message(StreamFrameType::kResponse, 4, b);
  ASSERT_TRUE(f.parser.Consume(s.bytes).ok());
  ASSERT_EQ(f.sink.hellos.size(), 1u);
  EXPECT_EQ(f.sink.hellos[0].instance_id, 77u);
  ASSERT_EQ(f.sink.messages.size(), 2u);
  EXPECT_EQ(f.sink.messages[0].type, StreamFrameType::kRequest);
  EXPECT_EQ(f.sink.messages[0].rpc_id, 3u);
  EXPECT_TRUE(MatchesPattern(f.sink.messages[0].bytes, 10, 1));
  EXPECT_EQ(f.sink.messages[1].type, StreamFrameType::kResponse);
  EXPECT_EQ(f.sink.messages[1].bytes.size(), 0u);
  EXPECT_EQ(f.parser.assemblies(), 0u);
  EXPECT_EQ(f.budget.used, 0u);
  EXPECT_TRUE(f.parser.OnEof().ok());
}

TEST(FrameParserTest, AnySplitOfTheStreamGivesTheSameMessages) {
  Buffer big = Pattern(3000, 3);
  Buffer small = Pattern(5, 4);
  Stream s;
  s.Hello();
  // Interleaved chunks of two messages, as an SRPT sender produces.
  s.Chunk(StreamFrameType::kRequest, 1, big, 0, 1000);
  s.Message(StreamFrameType::kRequest, 2, small);
  s.Chunk(StreamFrameType::kRequest, 1, big, 1000, 1000);
  s.Header({.type = StreamFrameType::kPing, .rpc_id = 9});
  s.Chunk(StreamFrameType::kRequest, 1, big, 2000, 1000);
  for (size_t piece : {size_t{1}, size_t{3}, size_t{31}, size_t{32}, size_t{33}, size_t{999}}) {
    Fixture f(1ull << 30, {.max_chunk_bytes = 1000});
    for (size_t at = 0; at < s.bytes.size(); at += piece) {
      size_t n = std::min(piece, s.bytes.size() - at);
      ASSERT_TRUE(f.parser.Consume(std::span(s.bytes).subspan(at, n)).ok()) << piece << "@" << at;
    }
    ASSERT_EQ(f.sink.messages.size(), 2u) << piece;
    EXPECT_EQ(f.sink.messages[0].rpc_id, 2u);
    EXPECT_TRUE(MatchesPattern(f.sink.messages[0].bytes, 5, 4));
    EXPECT_EQ(f.sink.messages[1].rpc_id, 1u);
    EXPECT_TRUE(MatchesPattern(f.sink.messages[1].bytes, 3000, 3));
    EXPECT_EQ(f.sink.frames.size(), 5u);  // every header after HELLO
    EXPECT_EQ(f.budget.used, 0u);
  }
}

TEST(FrameParserTest, LargePayloadsAreReadStraightIntoTheMessage) {
  Fixture f;
  Buffer message = Pattern(2 * kChunk, 5);
  Stream s;
  s.Hello().Chunk(StreamFrameType::kRequest, 1, message, 0, kChunk);
  const size_t header_end = s.bytes.size() - kChunk;
  ASSERT_TRUE(f.parser.Consume(std::span(s.bytes).first(header_end + 100)).ok());
  std::span<std::byte> target = f.parser.DirectTarget();
  ASSERT_EQ(target.size(), kChunk - 100);
  std::memcpy(target.data(), s.bytes.data() + header_end + 100, target.size());
  ASSERT_TRUE(f.parser.CommitDirect(target.size()).ok());
  EXPECT_TRUE(f.parser.DirectTarget().empty()) << "between chunks: a header comes next";
  Stream rest;
  rest.Chunk(StreamFrameType::kRequest, 1, message, kChunk, kChunk);
  ASSERT_TRUE(f.parser.Consume(std::span(rest.bytes).first(wire::kStreamHeaderBytes)).ok());
  target = f.parser.DirectTarget();
  ASSERT_EQ(target.size(), kChunk);
  std::memcpy(target.data(), rest.bytes.data() + wire::kStreamHeaderBytes, kChunk);
  ASSERT_TRUE(f.parser.CommitDirect(kChunk).ok());
  ASSERT_EQ(f.sink.messages.size(), 1u);
  EXPECT_TRUE(MatchesPattern(f.sink.messages[0].bytes, 2 * kChunk, 5));
  EXPECT_FALSE(f.parser.CommitDirect(1).ok()) << "no payload is expected now";
}

TEST(FrameParserTest, MemoryGrowsWithBytesReceivedNotWithTheClaim) {
  Fixture f;
  const uint32_t total = 64u << 20;
  Stream s;
  s.Hello();
  ASSERT_TRUE(f.parser.Consume(s.bytes).ok());
  // A 64 MiB claim and ten bytes: one chunk of room at most.
  Stream claim;
  claim.Header({.type = StreamFrameType::kRequest,
                .chunk_length = kChunk,
                .rpc_id = 1,
                .message_length = total});
  claim.bytes.resize(claim.bytes.size() + 10);
  ASSERT_TRUE(f.parser.Consume(claim.bytes).ok());
  EXPECT_LE(f.parser.buffered_bytes(), 2 * 10 + kChunk);
  EXPECT_EQ(f.budget.used, f.parser.buffered_bytes());
  // Feeding the rest chunk by chunk keeps committed <= 2 x received + chunk.
  std::vector<std::byte> zeros(kChunk);
  ASSERT_TRUE(f.parser.Consume(std::span(zeros).first(kChunk - 10)).ok());
  uint64_t received = kChunk;
  while (received < 8u * 1024 * 1024) {
    Stream chunk;
    chunk.Header({.type = StreamFrameType::kRequest,
                  .chunk_length = kChunk,
                  .rpc_id = 1,
                  .message_length = total,
                  .chunk_offset = static_cast<uint32_t>(received)});
    ASSERT_TRUE(f.parser.Consume(chunk.bytes).ok());
    EXPECT_LE(f.parser.buffered_bytes(), 2 * received + kChunk) << received;
    ASSERT_TRUE(f.parser.Consume(zeros).ok());
    received += kChunk;
  }
  EXPECT_LE(f.parser.buffered_bytes(), 2 * received);
}

TEST(FrameParserTest, AMessageUpToTheWholeLimitGetsItsBufferAtOnceAndIsNeverCopied) {
  Fixture f;
  const uint32_t total = 16 * kChunk;  // 1 MiB
  Buffer message = Pattern(total, 3);
  Stream s;
  s.Hello();
  ASSERT_TRUE(f.parser.Consume(s.bytes).ok());
  std::byte* start = nullptr;
  for (uint32_t offset = 0; offset < total; offset += kChunk) {
    Stream chunk;
    chunk.Chunk(StreamFrameType::kRequest, 1, message, offset, kChunk);
    // The header alone, then the payload straight into place.
    ASSERT_TRUE(f.parser.Consume(std::span(chunk.bytes).first(wire::kStreamHeaderBytes)).ok());
    if (offset == 0) {
      EXPECT_EQ(f.parser.buffered_bytes(), total) << "the whole message, at its first chunk";
      EXPECT_EQ(f.budget.used, total);
      EXPECT_EQ(f.budget.whole_used, total);
    }
    std::span<std::byte> target = f.parser.DirectTarget();
    ASSERT_EQ(target.size(), kChunk);
    if (offset == 0) start = target.data();
    EXPECT_EQ(target.data(), start + offset) << "the buffer never moves (no growth, no copy)";
    std::memcpy(target.data(), chunk.bytes.data() + wire::kStreamHeaderBytes, kChunk);
    ASSERT_TRUE(f.parser.CommitDirect(kChunk).ok());
  }
  ASSERT_EQ(f.sink.messages.size(), 1u);
  EXPECT_EQ(f.sink.messages[0].bytes.data(), start);
  EXPECT_TRUE(MatchesPattern(f.sink.messages[0].bytes, total, 3));
  EXPECT_EQ(f.budget.used, 0u);
  EXPECT_EQ(f.budget.whole_used, 0u);
}

TEST(FrameParserTest, WholeBuffersHoldAtMostHalfTheBudgetAndLongerMessagesGrow) {
  const uint32_t claim = 3u << 19;  // 1.5 MiB: half the budget (2.5 MiB) holds one
  FrameParser::Limits limits;
  limits.max_whole_bytes = claim;
  Fixture f(/*budget_limit=*/5u << 20, limits);
  Buffer first = Pattern(claim, 1);
  Buffer second = Pattern(claim, 2);
  Buffer longer = Pattern(claim + 1, 3);  // over max_whole_bytes
  Stream s;
  s.Hello()
      .Chunk(StreamFrameType::kRequest, 1, first, 0, kChunk)
      .Chunk(StreamFrameType::kRequest, 2, second, 0, kChunk)
      .Chunk(StreamFrameType::kResponse, 3, longer, 0, kChunk);
  ASSERT_TRUE(f.parser.Consume(s.bytes).ok());
  EXPECT_EQ(f.budget.whole_used, claim) << "the second would pass half the budget";
  EXPECT_LE(f.budget.used, claim + 2 * kChunk) << "the others grow with their bytes";
  // The rest, interleaved: all three arrive whole and intact.
  Stream rest;
  for (uint32_t offset = kChunk; offset < longer.size(); offset += kChunk) {
    if (offset < claim) {
      rest.Chunk(StreamFrameType::kRequest, 2, second, offset, kChunk);
      rest.Chunk(StreamFrameType::kRequest, 1, first, offset, kChunk);
    }
    rest.Chunk(StreamFrameType::kResponse, 3, longer, offset,
               std::min<uint32_t>(kChunk, static_cast<uint32_t>(longer.size()) - offset));
  }
  ASSERT_TRUE(f.parser.Consume(rest.bytes).ok());
  ASSERT_EQ(f.sink.messages.size(), 3u);
  ASSERT_TRUE(f.sink.refused.empty());
  for (const auto& m : f.sink.messages) {
    const uint8_t seed = static_cast<uint8_t>(m.type == StreamFrameType::kResponse ? 3 : m.rpc_id);
    EXPECT_TRUE(MatchesPattern(m.bytes, seed == 3 ? longer.size() : claim, seed)) << m.rpc_id;
  }
  EXPECT_EQ(f.budget.used, 0u);
  EXPECT_EQ(f.budget.whole_used, 0u);
  EXPECT_LE(f.budget.peak, 5u << 20);
}

TEST(FrameParserTest, LargeWholeBuffersComeFromThePoolAndGoBackToIt) {
  auto pool = transport::LargeBufferPool::Create({});
  IncomingBudget budget{.limit = 1ull << 30};
  RecordingSink sink;
  FrameParser parser({}, &budget, &sink, pool.get());
  Stream s;
  s.Hello().Message(StreamFrameType::kRequest, 1, Pattern(1u << 20, 1));
  ASSERT_TRUE(parser.Consume(s.bytes).ok());
  ASSERT_EQ(sink.messages.size(), 1u);
  EXPECT_EQ(sink.messages[0].bytes.owner(), pool.get());
  const std::byte* block = sink.messages[0].bytes.data();
  sink.messages.clear();  // the application lets go
  Stream next;
  next.Message(StreamFrameType::kRequest, 2, Pattern(1u << 20, 2))
      .Message(StreamFrameType::kRequest, 3, Pattern(1000, 3));
  ASSERT_TRUE(parser.Consume(next.bytes).ok());
  ASSERT_EQ(sink.messages.size(), 2u);
  EXPECT_EQ(sink.messages[0].bytes.data(), block) << "the kept block, no new pages";
  EXPECT_TRUE(MatchesPattern(sink.messages[0].bytes, 1u << 20, 2));
  EXPECT_EQ(pool->stats().reused, 1u);
  EXPECT_EQ(sink.messages[1].bytes.owner(), nullptr) << "small messages use the heap";
  EXPECT_TRUE(MatchesPattern(sink.messages[1].bytes, 1000, 3));
}

TEST(FrameParserTest, ScratchLimitBoundsReadsOnlyWhileABulkMessageArrives) {
  Fixture f;
  EXPECT_EQ(f.parser.ScratchLimit(), SIZE_MAX);
  Stream s;
  s.Hello().Message(StreamFrameType::kRequest, 1, Pattern(1000, 1));
  ASSERT_TRUE(f.parser.Consume(s.bytes).ok());
  EXPECT_EQ(f.parser.ScratchLimit(), SIZE_MAX) << "small messages: read as much as comes";
  Buffer big = Pattern(4 * kChunk, 2);
  Stream chunk;
  chunk.Chunk(StreamFrameType::kRequest, 2, big, 0, kChunk);
  ASSERT_TRUE(f.parser.Consume(std::span(chunk.bytes).first(chunk.bytes.size() - 100)).ok());
  EXPECT_EQ(f.parser.ScratchLimit(), 100 + wire::kStreamHeaderBytes + FrameParser::kMinDirectBytes)
      << "the rest of the chunk, the next header, a little of the next payload";
  ASSERT_TRUE(f.parser.Consume(std::span(chunk.bytes).last(100)).ok());
  EXPECT_EQ(f.parser.ScratchLimit(), wire::kStreamHeaderBytes + FrameParser::kMinDirectBytes);
  Stream next;
  next.Chunk(StreamFrameType::kRequest, 2, big, kChunk, kChunk);
  ASSERT_TRUE(f.parser.Consume(std::span(next.bytes).first(10)).ok());
  EXPECT_EQ(f.parser.ScratchLimit(), wire::kStreamHeaderBytes - 10 + FrameParser::kMinDirectBytes);
  ASSERT_TRUE(f.parser.Consume(std::span(next.bytes).subspan(10)).ok());
  f.parser.Discard(StreamFrameType::kRequest, 2);
  EXPECT_EQ(f.parser.ScratchLimit(), SIZE_MAX) << "a discarded message has no target to protect";
}

TEST(FrameParserTest, OverBudgetMessageIsRefusedAndItsBytesDropped) {
  Fixture f(/*budget_limit=*/100'000);
  Buffer big = Pattern(1'000'000, 6);
  Buffer after = Pattern(50'000, 7);
  Stream s;
  s.Hello().Message(StreamFrameType::kRequest, 1, big).Message(StreamFrameType::kRequest, 2, after);
  ASSERT_TRUE(f.parser.Consume(s.bytes).ok());
  ASSERT_EQ(f.sink.refused.size(), 1u);
  EXPECT_EQ(f.sink.refused[0].rpc_id, 1u);
  ASSERT_EQ(f.sink.messages.size(), 1u);
  EXPECT_EQ(f.sink.messages[0].rpc_id, 2u);
  EXPECT_TRUE(MatchesPattern(f.sink.messages[0].bytes, 50'000, 7));
  EXPECT_LE(f.budget.peak, 100'000u);
  EXPECT_EQ(f.budget.used, 0u);
}

TEST(FrameParserTest, DiscardedMessagesAreConsumedButNotDelivered) {
  Fixture f;
  f.sink.discard_all = true;
  Stream s;
  s.Hello().Message(StreamFrameType::kResponse, 1, Pattern(200'000, 1));
  ASSERT_TRUE(f.parser.Consume(s.bytes).ok());
  EXPECT_EQ(f.sink.starts.size(), 1u);
  EXPECT_TRUE(f.sink.messages.empty());
  EXPECT_EQ(f.budget.peak, 0u);
  EXPECT_EQ(f.parser.assemblies(), 0u);
}

TEST(FrameParserTest, AbortAndDiscardFreeAPartialMessage) {
  Fixture f;
  Buffer request = Pattern(3 * kChunk, 1);
  Buffer response = Pattern(3 * kChunk, 2);
  Stream s;
  s.Hello()
      .Chunk(StreamFrameType::kRequest, 1, request, 0, kChunk)
      .Chunk(StreamFrameType::kResponse, 1, response, 0, kChunk);
  ASSERT_TRUE(f.parser.Consume(s.bytes).ok());
  EXPECT_EQ(f.parser.assemblies(), 2u);
  EXPECT_GT(f.budget.used, 0u);
  // ABORT names the sender's REQUEST; with the flag, its RESPONSE.
  Stream abort;
  abort.Header({.type = StreamFrameType::kAbort, .rpc_id = 1});
  ASSERT_TRUE(f.parser.Consume(abort.bytes).ok());
  EXPECT_EQ(f.parser.assemblies(), 1u);
  // Discard keeps counting the response's chunks but frees its memory.
  f.parser.Discard(StreamFrameType::kResponse, 1);
  EXPECT_EQ(f.budget.used, 0u);
  Stream more;
  more.Chunk(StreamFrameType::kResponse, 1, response, kChunk, kChunk)
      .Chunk(StreamFrameType::kResponse, 1, response, 2 * kChunk, kChunk);
  ASSERT_TRUE(f.parser.Consume(more.bytes).ok());
  EXPECT_TRUE(f.sink.messages.empty());
  EXPECT_EQ(f.parser.assemblies(), 0u);
  Stream abort_response;
  abort_response.Header(
      {.type = StreamFrameType::kAbort, .flags = wire::kStreamFlagAbortResponse, .rpc_id = 42});
  EXPECT_TRUE(f.parser.Consume(abort_response.bytes).ok()) << "ABORT of nothing is harmless";
}

TEST(FrameParserTest, DestroyingTheParserReturnsItsMemory) {
  IncomingBudget budget{.limit = 1 << 30};
  RecordingSink sink;
  {
    FrameParser parser({}, &budget, &sink);
    Buffer m = Pattern(3 * kChunk, 1);
    Stream s;
    s.Hello().Chunk(StreamFrameType::kRequest, 1, m, 0, kChunk);
    ASSERT_TRUE(parser.Consume(s.bytes).ok());
    EXPECT_GT(budget.used, 0u);
  }
  EXPECT_EQ(budget.used, 0u);
}

// Each of these streams (after a good HELLO unless noted) is malformed.
TEST(FrameParserTest, MalformedStreamsAreErrors) {
  Buffer m = Pattern(2000, 1);
  struct Case {
    const char* name;
    std::function<void(Stream&)> build;
    const char* message;
  };
  std::vector<Case> cases = {
      {"request before HELLO",
       [&](Stream& s) { s.Message(StreamFrameType::kRequest, 1, m, 1000); }, "expected HELLO"},
      {"second HELLO", [&](Stream& s) { s.Hello().Hello(); }, "second HELLO"},
      {"offset gap",
       [&](Stream& s) {
         s.Hello().Chunk(StreamFrameType::kRequest, 1, m, 0, 500).Chunk(StreamFrameType::kRequest, 1, m, 600, 500);
       },
       "expected offset 500"},
      {"started twice",
       [&](Stream& s) {
         s.Hello().Chunk(StreamFrameType::kRequest, 1, m, 0, 500).Chunk(StreamFrameType::kRequest, 1, m, 0, 500);
       },
       "started again"},
      {"never started",
       [&](Stream& s) { s.Hello().Chunk(StreamFrameType::kRequest, 1, m, 500, 500); },
       "never started"},
      {"length changed",
       [&](Stream& s) {
         Buffer other = Pattern(3000, 1);
         s.Hello().Chunk(StreamFrameType::kRequest, 1, m, 0, 500).Chunk(StreamFrameType::kRequest, 1, other, 500, 500);
       },
       "message_length changed"},
      {"chunk over the limit",
       [&](Stream& s) { s.Hello().Chunk(StreamFrameType::kRequest, 1, m, 0, 1500); }, "chunk limit"},
  };
  for (const Case& c : cases) {
    Fixture f(1 << 30, {.max_chunk_bytes = 1000});
    Stream s;
    c.build(s);
    Status st = f.parser.Consume(s.bytes);
    ASSERT_FALSE(st.ok()) << c.name;
    EXPECT_NE(st.message().find(c.message), std::string::npos) << c.name << ": " << st;
  }
}

TEST(FrameParserTest, TooManyUnfinishedMessagesIsAnError) {
  Fixture f(1 << 30, {.max_chunk_bytes = kChunk, .max_assemblies = 3});
  Buffer m = Pattern(100, 1);
  Stream s;
  s.Hello();
  for (uint64_t id = 1; id <= 4; ++id) s.Chunk(StreamFrameType::kRequest, id, m, 0, 10);
  Status st = f.parser.Consume(s.bytes);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("more than 3"), std::string::npos) << st;
}

TEST(FrameParserTest, EndOfStreamInsideAFrameIsAnError) {
  Buffer m = Pattern(100, 1);
  Stream s;
  s.Hello().Message(StreamFrameType::kRequest, 1, m);
  const size_t hello = wire::kStreamHeaderBytes + wire::kStreamHelloBytes;
  for (size_t cut : {size_t{5}, size_t{40}, hello + 10, hello + 32 + 50}) {
    Fixture f;
    ASSERT_TRUE(f.parser.Consume(std::span(s.bytes).first(cut)).ok());
    EXPECT_FALSE(f.parser.OnEof().ok()) << cut;
  }
  Fixture f;
  ASSERT_TRUE(f.parser.Consume(s.bytes).ok());
  EXPECT_TRUE(f.parser.OnEof().ok());
}

TEST(FrameParserTest, SinkErrorsStopTheParse) {
  Fixture f;
  f.sink.start_error = InvalidArgumentError("no thanks");
  Stream s;
  s.Hello().Message(StreamFrameType::kRequest, 1, Pattern(10, 1));
  EXPECT_EQ(f.parser.Consume(s.bytes).message(), "no thanks");
  Fixture g;
  g.sink.frame_error = InvalidArgumentError("bad frame");
  EXPECT_EQ(g.parser.Consume(s.bytes).message(), "bad frame");
  EXPECT_TRUE(g.sink.messages.empty());
}

}  // namespace
}  // namespace wharf::stream
