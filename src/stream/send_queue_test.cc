// Tests of SendQueue: chunking, SRPT order and preemption at chunk
// boundaries, control frames, partial writes (rolled back or finished as a
// tail), removal of half-written messages, ack floors; and a randomized run
// whose output stream must parse back into every message intact.
#include "stream/send_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "stream/frame_parser.h"
#include "stream/testing/tcp_harness.h"

namespace wharf::stream {
namespace {

using testing::MatchesPattern;
using testing::Pattern;
using wire::StreamFrameHeader;
using wire::StreamFrameType;

constexpr uint32_t kChunk = 1000;

// Plays the kernel: takes up to `cap` bytes of each batch and appends them
// to `out`.
struct FakeWire {
  std::vector<std::byte> out;
  std::vector<SendQueue::Finished> finished;
  bool carried = false;

  // One Prepare/Commit round; returns bytes taken.
  size_t Write(SendQueue& q, size_t cap, size_t batch_bytes = 1 << 20, uint64_t floor = 0) {
    std::array<iovec, 64> iov;
    bool carried_floor = false;
    const size_t n = q.Prepare(iov, batch_bytes, floor, &carried_floor);
    carried = carried || carried_floor;
    size_t taken = 0;
    for (size_t i = 0; i < n && taken < cap; ++i) {
      const size_t part = std::min(cap - taken, iov[i].iov_len);
      const auto* p = static_cast<const std::byte*>(iov[i].iov_base);
      out.insert(out.end(), p, p + part);
      taken += part;
    }
    q.Commit(taken, &finished);
    return taken;
  }
  void Drain(SendQueue& q, size_t cap = SIZE_MAX) {
    for (int i = 0; i < 100000 && q.HasWork(); ++i) Write(q, cap);
  }
};

// Decodes a written stream (no HELLO expected) into its frame headers.
std::vector<StreamFrameHeader> Headers(const std::vector<std::byte>& bytes) {
  std::vector<StreamFrameHeader> out;
  size_t at = 0;
  while (at + wire::kStreamHeaderBytes <= bytes.size()) {
    auto h = wire::DecodeStreamHeader(std::span(bytes).subspan(at), wire::kStreamMaxChunkLimit);
    EXPECT_TRUE(h.ok()) << h.status();
    if (!h.ok()) break;
    out.push_back(*h);
    at += wire::kStreamHeaderBytes + h->chunk_length;
  }
  EXPECT_EQ(at, bytes.size()) << "the stream ends inside a frame";
  return out;
}

std::string Describe(const std::vector<StreamFrameHeader>& headers) {
  std::string out;
  for (const auto& h : headers) {
    if (!out.empty()) out += "; ";
    out += wire::DescribeStreamHeader(h);
  }
  return out;
}

TEST(SendQueueTest, MessagesAreCutIntoChunks) {
  SendQueue q(kChunk);
  Buffer small = Pattern(10, 1);
  Buffer large = Pattern(2500, 2);
  Buffer empty = Buffer::Allocate(0);
  q.Add(StreamFrameType::kRequest, 1, small);
  q.Add(StreamFrameType::kResponse, 2, large);
  q.Add(StreamFrameType::kRequest, 3, empty);
  EXPECT_EQ(q.queued_bytes(), 2510u);
  FakeWire w;
  w.Drain(q);
  // SRPT: the empty message, then the 10 bytes, then the 2500 in chunks.
  EXPECT_EQ(Describe(Headers(w.out)),
            "REQUEST id=3 0@0/0; REQUEST id=1 10@0/10; RESPONSE id=2 1000@0/2500; "
            "RESPONSE id=2 1000@1000/2500; RESPONSE id=2 500@2000/2500");
  ASSERT_EQ(w.finished.size(), 3u);
  EXPECT_EQ(w.finished[0].rpc_id, 3u);
  EXPECT_EQ(w.finished[2].rpc_id, 2u);
  EXPECT_EQ(q.num_messages(), 0u);
  EXPECT_EQ(q.queued_bytes(), 0u);
  EXPECT_FALSE(q.HasWork());
}

TEST(SendQueueTest, AShortMessageOvertakesALongOneAtTheNextChunk) {
  SendQueue q(kChunk);
  Buffer large = Pattern(5000, 1);
  Buffer small = Pattern(50, 2);
  q.Add(StreamFrameType::kRequest, 1, large);
  FakeWire w;
  // The kernel takes one and a half chunks of the long message.
  w.Write(q, 1500 + 2 * wire::kStreamHeaderBytes / 2 + 16);
  q.Add(StreamFrameType::kRequest, 2, small);
  w.Drain(q);
  EXPECT_EQ(Describe(Headers(w.out)),
            "REQUEST id=1 1000@0/5000; REQUEST id=1 1000@1000/5000; REQUEST id=2 50@0/50; "
            "REQUEST id=1 1000@2000/5000; REQUEST id=1 1000@3000/5000; "
            "REQUEST id=1 1000@4000/5000");
}

TEST(SendQueueTest, ChunksTheKernelDidNotTakeArePickedAgain) {
  SendQueue q(kChunk);
  Buffer a = Pattern(3000, 1);
  q.Add(StreamFrameType::kRequest, 1, a);
  FakeWire w;
  EXPECT_EQ(w.Write(q, 0), 0u);  // EAGAIN: all three chunks go back
  EXPECT_EQ(q.queued_bytes(), 3000u);
  // A shorter message arrives: it now goes first.
  Buffer b = Pattern(100, 2);
  q.Add(StreamFrameType::kRequest, 2, b);
  w.Drain(q, 700);  // and every write is short
  EXPECT_EQ(Describe(Headers(w.out)),
            "REQUEST id=2 100@0/100; REQUEST id=1 1000@0/3000; REQUEST id=1 1000@1000/3000; "
            "REQUEST id=1 1000@2000/3000");
}

TEST(SendQueueTest, ControlFramesGoAfterAHalfWrittenChunkAndBeforeNewOnes) {
  SendQueue q(kChunk);
  Buffer a = Pattern(2000, 1);
  q.Add(StreamFrameType::kRequest, 1, a);
  FakeWire w;
  w.Write(q, 500);  // inside the first chunk
  q.AddControl({.type = StreamFrameType::kPing, .rpc_id = 7});
  q.AddControl({.type = StreamFrameType::kAck, .ack_floor = 3});
  w.Drain(q);
  EXPECT_EQ(Describe(Headers(w.out)),
            "REQUEST id=1 1000@0/2000; PING nonce=7; ACK floor=3; REQUEST id=1 1000@1000/2000");
}

TEST(SendQueueTest, RequestsCarryTheAckFloorAndResponsesDoNot) {
  SendQueue q(kChunk);
  Buffer a = Pattern(10, 1);
  Buffer b = Pattern(10, 2);
  q.Add(StreamFrameType::kResponse, 5, b);
  FakeWire w;
  w.Write(q, SIZE_MAX, 1 << 20, /*floor=*/42);
  EXPECT_FALSE(w.carried);
  q.Add(StreamFrameType::kRequest, 6, a);
  w.Write(q, SIZE_MAX, 1 << 20, /*floor=*/42);
  EXPECT_TRUE(w.carried);
  EXPECT_EQ(Describe(Headers(w.out)), "RESPONSE id=5 10@0/10; REQUEST id=6 10@0/10 floor=42");
}

TEST(SendQueueTest, RemovingAHalfWrittenMessageFinishesOnlyItsChunk) {
  SendQueue q(kChunk);
  auto a = std::make_unique<Buffer>(Pattern(3000, 1));
  Buffer b = Pattern(10, 2);
  SendQueue::Handle ha = q.Add(StreamFrameType::kRequest, 1, *a);
  FakeWire w;
  w.Write(q, 600);
  EXPECT_TRUE(q.Started(ha));
  SendQueue::Removed removed = q.Remove(ha);
  EXPECT_TRUE(removed.started);
  EXPECT_FALSE(removed.will_complete);
  a.reset();  // the queue must not touch the bytes any more
  q.Add(StreamFrameType::kRequest, 2, b);
  w.Drain(q);
  EXPECT_EQ(Describe(Headers(w.out)), "REQUEST id=1 1000@0/3000; REQUEST id=2 10@0/10");
  // The finished chunk carries the right bytes.
  Buffer expect = Pattern(3000, 1);
  EXPECT_TRUE(std::equal(w.out.begin() + wire::kStreamHeaderBytes,
                         w.out.begin() + wire::kStreamHeaderBytes + 1000, expect.data()));
  ASSERT_EQ(w.finished.size(), 1u);
  EXPECT_EQ(w.finished[0].rpc_id, 2u);
}

TEST(SendQueueTest, RemovalOutcomes) {
  SendQueue q(kChunk);
  Buffer a = Pattern(500, 1);
  SendQueue::Handle h = q.Add(StreamFrameType::kRequest, 1, a);
  SendQueue::Removed untouched = q.Remove(h);
  EXPECT_FALSE(untouched.started);
  EXPECT_FALSE(q.HasWork());
  EXPECT_FALSE(q.Remove(h).started) << "unknown handles are ignored";
  // Half of its only (last) chunk is out: the rest completes the message.
  h = q.Add(StreamFrameType::kRequest, 2, a);
  FakeWire w;
  w.Write(q, 100);
  SendQueue::Removed last = q.Remove(h);
  EXPECT_TRUE(last.started);
  EXPECT_TRUE(last.will_complete);
  w.Drain(q);
  EXPECT_EQ(Describe(Headers(w.out)), "REQUEST id=2 500@0/500");
  EXPECT_TRUE(w.finished.empty()) << "removed messages are not reported as finished";
}

// Random messages, random kernel appetites, random removals: the stream
// parses, and every message not removed arrives whole and unchanged.
TEST(SendQueueTest, RandomizedStreamsParseBackIntoTheMessages) {
  std::mt19937 random(7);
  for (int round = 0; round < 20; ++round) {
    SendQueue q(kChunk);
    std::map<uint64_t, std::unique_ptr<Buffer>> buffers;
    std::map<uint64_t, SendQueue::Handle> handles;
    std::set<uint64_t> removed;
    FakeWire w;
    uint64_t next_id = 1;
    for (int step = 0; step < 200; ++step) {
      const int action = static_cast<int>(random() % 10);
      if (action < 4) {
        const uint64_t id = next_id++;
        const size_t size = random() % 4 == 0 ? random() % 10'000 : random() % 300;
        buffers[id] = std::make_unique<Buffer>(Pattern(size, static_cast<uint8_t>(id)));
        handles[id] = q.Add(random() % 2 ? StreamFrameType::kRequest : StreamFrameType::kResponse, id,
                            *buffers[id]);
      } else if (action < 5 && !handles.empty()) {
        auto it = std::next(handles.begin(), static_cast<long>(random() % handles.size()));
        if (q.Contains(it->second)) {
          SendQueue::Removed r = q.Remove(it->second);
          if (!r.will_complete) removed.insert(it->first);
        }
        handles.erase(it);
      } else {
        w.Write(q, random() % 3000, 1 + random() % 5000);
      }
    }
    w.Drain(q);
    IncomingBudget budget{.limit = 1 << 30};
    struct Sink : FrameParser::Sink {
      Status OnHello(const wire::StreamHello&) override { return OkStatus(); }
      Status OnFrame(const StreamFrameHeader&) override { return OkStatus(); }
      Result<FrameParser::Decision> OnMessageStart(const StreamFrameHeader&) override {
        return FrameParser::Decision::kAccept;
      }
      void OnMessage(StreamFrameType, uint64_t id, Buffer m) override { got[id] = std::move(m); }
      void OnMessageRefused(StreamFrameType, uint64_t, uint32_t) override {}
      std::map<uint64_t, Buffer> got;
    } sink;
    FrameParser parser({.max_chunk_bytes = kChunk}, &budget, &sink);
    std::array<std::byte, wire::kStreamHeaderBytes + wire::kStreamHelloBytes> hello{};
    ASSERT_TRUE(wire::EncodeStreamHeader({.type = StreamFrameType::kHello,
                                          .chunk_length = wire::kStreamHelloBytes},
                                         hello)
                    .ok());
    ASSERT_TRUE(wire::EncodeStreamHello({.listen_port = 1, .instance_id = 1},
                                        std::span(hello).subspan(wire::kStreamHeaderBytes))
                    .ok());
    ASSERT_TRUE(parser.Consume(hello).ok());
    ASSERT_TRUE(parser.Consume(w.out).ok()) << "round " << round;
    for (const auto& [id, buffer] : buffers) {
      if (removed.count(id)) {
        EXPECT_EQ(sink.got.count(id), 0u) << id;
        continue;
      }
      ASSERT_EQ(sink.got.count(id), 1u) << "round " << round << " id " << id;
      EXPECT_TRUE(MatchesPattern(sink.got[id], buffer->size(), static_cast<uint8_t>(id)));
    }
    for (const SendQueue::Finished& f : w.finished) {
      EXPECT_EQ(removed.count(f.rpc_id), 0u) << "finished after removal: " << f.rpc_id;
      EXPECT_EQ(sink.got.count(f.rpc_id), 1u) << "finished but not received: " << f.rpc_id;
    }
  }
}

}  // namespace
}  // namespace wharf::stream
