// Tests of Connection::Read against a scripted socket (TcpSyscalls): however
// the stream is cut into reads (1-byte segments, random short reads, a header
// alone), every message arrives whole and intact, and the bytes of a bulk
// message go straight into its buffer (few pass through the read buffer).
#include "stream/connection.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>
#include <vector>

#include "stream/testing/tcp_harness.h"

namespace wharf::stream {
namespace {

using testing::MatchesPattern;
using testing::Pattern;
using wire::StreamFrameType;

constexpr uint32_t kChunk = 64 << 10;

// Serves `stream` to Readv like the kernel would, at most segments[i] bytes
// on call i (cycled; none: as much as offered), then EAGAIN. Records how many
// bytes went into the read buffer (`scratch`) and elsewhere (a message).
class ScriptedSocket final : public transport::tcp::TcpSyscalls {
 public:
  ssize_t Writev(int, const iovec*, int) override {
    errno = EAGAIN;
    return -1;
  }
  ssize_t Readv(int, const iovec* iov, int count) override {
    if (pos == stream.size()) {
      errno = EAGAIN;
      return -1;
    }
    size_t limit = segments.empty() ? SIZE_MAX : segments[calls % segments.size()];
    ++calls;
    calls_iov.emplace_back();
    size_t done = 0;
    for (int i = 0; i < count; ++i) {
      calls_iov.back().push_back(iov[i].iov_len);
      const size_t n = std::min({iov[i].iov_len, limit - done, stream.size() - pos});
      std::memcpy(iov[i].iov_base, stream.data() + pos, n);
      const auto* base = static_cast<const std::byte*>(iov[i].iov_base);
      const bool into_scratch = base >= scratch.data() && base < scratch.data() + scratch.size();
      (into_scratch ? scratch_bytes : direct_bytes) += n;
      done += n;
      pos += n;
      if (n < iov[i].iov_len) break;
    }
    return static_cast<ssize_t>(done);
  }

  std::vector<std::byte> stream;
  size_t pos = 0;
  std::vector<size_t> segments;
  size_t calls = 0;
  std::vector<std::vector<size_t>> calls_iov;  // iovec lengths offered, per call
  std::span<const std::byte> scratch;
  size_t scratch_bytes = 0;
  size_t direct_bytes = 0;
};

class AcceptAll final : public ConnectionHandler {
 public:
  Status OnHello(Connection&, const wire::StreamHello&) override { return OkStatus(); }
  Status OnFrame(Connection&, const wire::StreamFrameHeader&) override { return OkStatus(); }
  Result<FrameParser::Decision> OnMessageStart(Connection&,
                                               const wire::StreamFrameHeader&) override {
    return FrameParser::Decision::kAccept;
  }
  void OnMessage(Connection&, StreamFrameType, uint64_t rpc_id, Buffer message) override {
    messages.emplace_back(rpc_id, std::move(message));
  }
  void OnMessageRefused(Connection&, StreamFrameType, uint64_t, uint32_t) override { ++refused; }

  std::vector<std::pair<uint64_t, Buffer>> messages;
  int refused = 0;
};

void AppendHeader(std::vector<std::byte>& out, const wire::StreamFrameHeader& h) {
  std::array<std::byte, wire::kStreamHeaderBytes> bytes{};
  ASSERT_TRUE(wire::EncodeStreamHeader(h, bytes).ok());
  out.insert(out.end(), bytes.begin(), bytes.end());
}

void AppendHello(std::vector<std::byte>& out) {
  AppendHeader(out, {.type = StreamFrameType::kHello, .chunk_length = wire::kStreamHelloBytes});
  std::array<std::byte, wire::kStreamHelloBytes> body{};
  ASSERT_TRUE(wire::EncodeStreamHello({.listen_port = 1, .instance_id = 9}, body).ok());
  out.insert(out.end(), body.begin(), body.end());
}

// `message` as REQUEST `id`, in chunks of `chunk`.
void AppendMessage(std::vector<std::byte>& out, uint64_t id, const Buffer& message,
                   uint32_t chunk = kChunk) {
  const auto total = static_cast<uint32_t>(message.size());
  uint32_t offset = 0;
  do {
    const uint32_t length = std::min(chunk, total - offset);
    AppendHeader(out, {.type = StreamFrameType::kRequest,
                       .chunk_length = length,
                       .rpc_id = id,
                       .message_length = total,
                       .chunk_offset = offset});
    out.insert(out.end(), message.data() + offset, message.data() + offset + length);
    offset += length;
  } while (offset < total);
}

struct Fixture {
  Fixture()
      : conn(1, -1, /*outbound=*/false, testing::Loopback4(1000), Connection::State::kHandshake,
             kChunk, FrameParser::Limits{}, &budget, nullptr, &handler, &socket) {
    socket.scratch = scratch;
  }
  // Reads until the script is used up; false on an error.
  bool ReadAll() {
    for (int i = 0; i < 10'000'000 && socket.pos < socket.stream.size(); ++i) {
      Connection::IoResult r = conn.Read(scratch, scratch.size());
      if (r.io != Connection::Io::kOk) {
        ADD_FAILURE() << r.error.ToString();
        return false;
      }
    }
    return socket.pos == socket.stream.size();
  }

  IncomingBudget budget{.limit = 1ull << 30};
  AcceptAll handler;
  ScriptedSocket socket;
  std::vector<std::byte> scratch = std::vector<std::byte>(64 << 10);
  Connection conn;
};

TEST(ConnectionReadTest, ABulkMessageIsReadStraightIntoItsBuffer) {
  Fixture f;
  const Buffer message = Pattern(1u << 20, 1);
  AppendHello(f.socket.stream);
  AppendMessage(f.socket.stream, 7, message);
  ASSERT_TRUE(f.ReadAll());
  ASSERT_EQ(f.handler.messages.size(), 1u);
  EXPECT_TRUE(MatchesPattern(f.handler.messages[0].second, 1u << 20, 1));
  // The first read meets the message unannounced (one read buffer's worth is
  // copied); after that, between chunks, only a header and 4 KiB go through
  // the read buffer: 16 x (32 + 4096) bytes at most.
  EXPECT_LE(f.socket.scratch_bytes, (64u << 10) + 16 * (32 + FrameParser::kMinDirectBytes));
  EXPECT_GE(f.socket.direct_bytes, (1u << 20) - (64u << 10) - 15 * FrameParser::kMinDirectBytes);
}

TEST(ConnectionReadTest, AHeaderReadAloneThenTheBodyGoesStraightIntoPlace) {
  Fixture f;
  const Buffer message = Pattern(3 * kChunk, 2);
  AppendHello(f.socket.stream);
  const size_t hello_bytes = f.socket.stream.size();
  AppendMessage(f.socket.stream, 7, message);
  // HELLO and the first chunk's header in one read, then the rest.
  f.socket.segments = {hello_bytes + wire::kStreamHeaderBytes, SIZE_MAX};
  ASSERT_TRUE(f.ReadAll());
  ASSERT_EQ(f.handler.messages.size(), 1u);
  EXPECT_TRUE(MatchesPattern(f.handler.messages[0].second, 3 * kChunk, 2));
  ASSERT_GE(f.socket.calls_iov.size(), 2u);
  // Second call: the whole chunk payload into the message, then a little
  // read buffer for the next header.
  EXPECT_EQ(f.socket.calls_iov[1], (std::vector<size_t>{kChunk, FrameParser::kMinDirectBytes}));
  EXPECT_EQ(f.socket.scratch_bytes,
            hello_bytes + wire::kStreamHeaderBytes + 2 * FrameParser::kMinDirectBytes)
      << "only the headers and the starts of chunks 2 and 3 are copied";
}

TEST(ConnectionReadTest, OneByteSegmentsStillReassemble) {
  Fixture f;
  const Buffer big = Pattern(20'000, 3);  // over kBulkBytes, chunks of 8 KiB
  const Buffer small = Pattern(100, 4);
  AppendHello(f.socket.stream);
  AppendMessage(f.socket.stream, 1, big, 8192);
  AppendMessage(f.socket.stream, 2, small);
  f.socket.segments = {1};
  ASSERT_TRUE(f.ReadAll());
  ASSERT_EQ(f.handler.messages.size(), 2u);
  EXPECT_TRUE(MatchesPattern(f.handler.messages[0].second, 20'000, 3));
  EXPECT_TRUE(MatchesPattern(f.handler.messages[1].second, 100, 4));
  EXPECT_EQ(f.socket.calls, f.socket.stream.size());
}

TEST(ConnectionReadTest, RandomShortReadsOfInterleavedMessagesReassemble) {
  Fixture f;
  std::vector<Buffer> messages;
  AppendHello(f.socket.stream);
  // Two bulk messages with their chunks interleaved (as SRPT sends them when
  // the shorter arrives later), small ones between.
  const Buffer a = Pattern(5 * kChunk + 17, 5);
  const Buffer b = Pattern(2 * kChunk + 3, 6);
  std::vector<std::byte> a_stream, b_stream;
  AppendMessage(a_stream, 10, a);
  AppendMessage(b_stream, 11, b);
  const size_t a_chunk = wire::kStreamHeaderBytes + kChunk;
  auto& s = f.socket.stream;
  s.insert(s.end(), a_stream.begin(), a_stream.begin() + a_chunk);  // a: chunk 0
  s.insert(s.end(), b_stream.begin(), b_stream.end());              // b whole
  AppendMessage(s, 12, Pattern(50, 7));
  s.insert(s.end(), a_stream.begin() + a_chunk, a_stream.end());  // a: the rest
  AppendMessage(s, 13, Pattern(5000, 8));
  std::mt19937 random(42);
  for (int i = 0; i < 200; ++i) f.socket.segments.push_back(1 + random() % 70'000);
  ASSERT_TRUE(f.ReadAll());
  ASSERT_EQ(f.handler.messages.size(), 4u);
  std::vector<uint64_t> order;
  for (const auto& [id, m] : f.handler.messages) order.push_back(id);
  EXPECT_EQ(order, (std::vector<uint64_t>{11, 12, 10, 13}));
  EXPECT_TRUE(MatchesPattern(f.handler.messages[0].second, b.size(), 6));
  EXPECT_TRUE(MatchesPattern(f.handler.messages[1].second, 50, 7));
  EXPECT_TRUE(MatchesPattern(f.handler.messages[2].second, a.size(), 5));
  EXPECT_TRUE(MatchesPattern(f.handler.messages[3].second, 5000, 8));
  EXPECT_EQ(f.budget.used, 0u);
}

TEST(ConnectionReadTest, SmallMessagesFillTheWholeReadBuffer) {
  Fixture f;
  AppendHello(f.socket.stream);
  for (uint64_t id = 1; id <= 1000; ++id) AppendMessage(f.socket.stream, id, Pattern(64, 1));
  ASSERT_TRUE(f.ReadAll());
  EXPECT_EQ(f.handler.messages.size(), 1000u);
  // 1000 x 96 bytes in 64 KiB reads: 2 calls, not one per message.
  EXPECT_EQ(f.socket.calls, 2u);
}

}  // namespace
}  // namespace wharf::stream
