// Tests of TcpMessageTransport under failure: connections killed mid-message
// and after the handler ran (at-most-once across reconnects), stored
// responses and their eviction, a restarted server, silent peers on short
// virtual timeouts, hostile raw clients, the memory bound, and injected
// short writes and resets. Liveness at the default timeouts (pauses, the
// kernel's word) is tcp_liveness_test.cc.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <random>
#include <vector>

#include "stream/tcp_transport.h"
#include "stream/testing/raw_sockets.h"
#include "stream/testing/tcp_harness.h"
#include "transport/tcp/tcp_syscalls.h"
#include "wire/stream_frame.h"

namespace wharf::stream {
namespace {

using testing::Harness;
using testing::Loopback4;
using testing::MatchesPattern;
using testing::Node;
using testing::Pattern;
using testing::RawClient;
using testing::SilentListener;
using transport::MessageEvent;

constexpr uint32_t kChunk = 64 << 10;

uint64_t Call(Node& client, const Node& server, Buffer request, uint64_t cookie = 0) {
  auto id = client.t->SendRequest(server.address(), std::move(request), cookie);
  EXPECT_TRUE(id.ok()) << id.status();
  return id.ok() ? *id : 0;
}

// Syscalls that pass through to the kernel unless told to fail or shorten.
class FaultySyscalls final : public transport::tcp::TcpSyscalls {
 public:
  ssize_t Writev(int fd, const iovec* iov, int count) override {
    if (write_cap > 0) {
      // Offer the kernel at most write_cap bytes: a short write every time.
      std::vector<iovec> capped;
      size_t left = write_cap;
      for (int i = 0; i < count && left > 0; ++i) {
        capped.push_back({iov[i].iov_base, std::min(left, iov[i].iov_len)});
        left -= capped.back().iov_len;
      }
      if (eagain_every_other && (++calls % 2) == 0) {
        errno = EAGAIN;
        return -1;
      }
      return Kernel().Writev(fd, capped.data(), static_cast<int>(capped.size()));
    }
    return Kernel().Writev(fd, iov, count);
  }
  ssize_t Readv(int fd, const iovec* iov, int count) override {
    if (reset_next_read) {
      reset_next_read = false;
      errno = ECONNRESET;
      return -1;
    }
    return Kernel().Readv(fd, iov, count);
  }

  size_t write_cap = 0;
  bool eagain_every_other = false;
  bool reset_next_read = false;
  int calls = 0;
};

// ------------------------------------------------- at-most-once, reconnect

TEST(TcpFaultTest, ConnectionKilledMidMessageReconnectsAndRunsEachRequestOnce) {
  Harness h;
  Node& client = h.AddNode();
  Node& server = h.AddNode();
  constexpr int kRpcs = 20;
  std::vector<uint64_t> ids;
  for (int i = 0; i < kRpcs; ++i) ids.push_back(Call(client, server, Pattern(1'000'000, static_cast<uint8_t>(i))));
  ASSERT_TRUE(h.RunUntil([&] { return server.t->stats().bytes_received > 3'000'000; }));
  ASSERT_LT(client.done.size(), static_cast<size_t>(kRpcs)) << "killed too late to matter";
  EXPECT_GE(client.t->ShutdownConnectionsForTesting(), 1u);
  ASSERT_TRUE(h.RunUntil([&] { return client.done.size() == kRpcs; }));
  for (int i = 0; i < kRpcs; ++i) {
    const MessageEvent& e = client.done.at(ids[i]);
    ASSERT_EQ(e.kind, MessageEvent::Kind::kResponse) << e.status;
    EXPECT_TRUE(MatchesPattern(e.message, 1'000'000, static_cast<uint8_t>(i))) << i;
  }
  EXPECT_EQ(server.handled.size(), static_cast<size_t>(kRpcs));
  EXPECT_EQ(server.MaxHandled(), 1) << "a request ran twice";
  EXPECT_EQ(client.duplicate_completions, 0);
  EXPECT_GE(client.t->stats().connections_reset, 1u);
  EXPECT_GE(client.t->stats().reconnects, 1u);
  EXPECT_GE(client.t->stats().requests_resent, 1u);
  EXPECT_EQ(server.t->incoming_buffer_bytes(), 0u);
}

TEST(TcpFaultTest, ResponseReadyWhileDisconnectedIsServedFromTheStoredCopy) {
  Harness h;
  Node& client = h.AddNode();
  Node& server = h.AddNode();
  server.auto_respond = false;
  uint64_t id = Call(client, server, Pattern(5000, 1));
  ASSERT_TRUE(h.RunUntil([&] { return server.held.size() == 1; }));
  // The handler ran; now the network breaks before the response is out.
  EXPECT_EQ(server.t->ShutdownConnectionsForTesting(), 1u);
  ASSERT_TRUE(server.t->SendResponse(server.held[0].server_key, Pattern(5000, 2)).ok());
  ASSERT_TRUE(h.RunUntil([&] { return client.Completed(id); }));
  const MessageEvent& e = client.done.at(id);
  ASSERT_EQ(e.kind, MessageEvent::Kind::kResponse) << e.status;
  EXPECT_TRUE(MatchesPattern(e.message, 5000, 2));
  EXPECT_EQ(server.MaxHandled(), 1);
  EXPECT_EQ(server.handled.size(), 1u);
  // The first write of the response failed with the connection; what the
  // client got is the stored copy, sent on the new connection (pushed at the
  // handshake, or on the re-sent request, whichever came first).
  EXPECT_EQ(server.t->stats().responses_sent, 1u);
  EXPECT_GE(server.t->stats().connections_reset, 1u);
  EXPECT_GE(client.t->stats().reconnects, 1u);
}

TEST(TcpFaultTest, ConnectionKilledMidResponseGetsTheStoredCopyAgain) {
  Harness h;
  Node& client = h.AddNode();
  Node& server = h.AddNode();
  int handler_runs = 0;
  server.respond = [&](MessageEvent&) {
    ++handler_runs;
    return Pattern(8'000'000, 3);
  };
  uint64_t id = Call(client, server, Pattern(100, 0));
  ASSERT_TRUE(h.RunUntil([&] { return client.t->stats().bytes_received > 1'000'000; }));
  ASSERT_FALSE(client.Completed(id));
  EXPECT_GE(client.t->ShutdownConnectionsForTesting(), 1u);
  ASSERT_TRUE(h.RunUntil([&] { return client.Completed(id); }));
  const MessageEvent& e = client.done.at(id);
  ASSERT_EQ(e.kind, MessageEvent::Kind::kResponse) << e.status;
  EXPECT_TRUE(MatchesPattern(e.message, 8'000'000, 3));
  EXPECT_EQ(handler_runs, 1);
  EXPECT_EQ(server.t->stats().duplicate_requests, 1u);
  EXPECT_EQ(client.t->incoming_buffer_bytes(), 0u);
  // Once acknowledged, the stored copy goes.
  ASSERT_TRUE(h.RunUntil([&] { return server.t->num_server_rpcs() == 0; }));
  EXPECT_EQ(server.t->stored_response_bytes(), 0u);
}

TEST(TcpFaultTest, ResetBeforeTheResponseWasReadReportsAnEvictedResponseAsLost) {
  Harness h;
  FaultySyscalls faulty;
  TcpConfig client_config;
  client_config.syscalls = &faulty;
  Node& client = h.AddNode(client_config);
  TcpConfig server_config;
  server_config.max_stored_response_bytes = 0;  // evict as soon as written once
  Node& server = h.AddNode(server_config);
  server.auto_respond = false;
  uint64_t id = Call(client, server, Pattern(10, 0));
  ASSERT_TRUE(h.RunUntil([&] { return server.held.size() == 1; }));
  // The response goes out whole, and is dropped at once; the client's
  // connection dies before it reads it.
  faulty.reset_next_read = true;
  ASSERT_TRUE(server.t->SendResponse(server.held[0].server_key, Pattern(1000, 1)).ok());
  EXPECT_EQ(server.t->stats().responses_evicted, 1u);
  ASSERT_TRUE(h.RunUntil([&] { return client.Completed(id); }));
  const MessageEvent& e = client.done.at(id);
  ASSERT_EQ(e.kind, MessageEvent::Kind::kFailed);
  EXPECT_EQ(e.status.code(), StatusCode::kDataLoss) << e.status;
  EXPECT_EQ(server.MaxHandled(), 1) << "the request must not run again";
  EXPECT_EQ(client.t->stats().responses_lost, 1u);
}

TEST(TcpFaultTest, ShortWritesAndEagainKeepTheStreamFramed) {
  Harness h;
  FaultySyscalls faulty;
  faulty.write_cap = 1000;  // cuts headers and payloads at every offset
  faulty.eagain_every_other = true;
  TcpConfig config;
  config.syscalls = &faulty;
  Node& client = h.AddNode(config);
  Node& server = h.AddNode(config);
  std::vector<uint64_t> ids;
  for (int i = 0; i < 8; ++i) ids.push_back(Call(client, server, Pattern(7 + i * 40'000, static_cast<uint8_t>(i))));
  ASSERT_TRUE(h.RunUntil([&] { return client.done.size() == ids.size(); }));
  for (int i = 0; i < 8; ++i) {
    EXPECT_TRUE(MatchesPattern(client.done.at(ids[i]).message, 7 + i * 40'000, static_cast<uint8_t>(i)));
  }
  EXPECT_EQ(server.t->stats().protocol_errors, 0u);
}

TEST(TcpFaultTest, RestartedServerFailsInFlightRpcsInsteadOfRunningThemAgain) {
  Harness h;
  Node& client = h.AddNode();
  Node* server = &h.AddNode();
  server->auto_respond = false;
  const transport::NetAddress address = server->address();
  uint64_t in_flight = Call(client, *server, Pattern(10, 0));
  ASSERT_TRUE(h.RunUntil([&] { return server->held.size() == 1; }));
  // The server process dies and a new one comes up on the same port.
  h.RemoveNode(*server);
  TcpConfig config;
  config.bind = address;
  Node& restarted = h.AddNode(config);
  ASSERT_TRUE(restarted.t);
  ASSERT_TRUE(h.RunUntil([&] { return client.Completed(in_flight); }));
  const MessageEvent& e = client.done.at(in_flight);
  ASSERT_EQ(e.kind, MessageEvent::Kind::kFailed);
  EXPECT_EQ(e.status.code(), StatusCode::kUnavailable) << e.status;
  EXPECT_NE(e.status.message().find("restarted"), std::string::npos) << e.status;
  EXPECT_TRUE(restarted.handled.empty());
  // New RPCs go to the new process.
  uint64_t fresh = Call(client, restarted, Pattern(10, 1));
  ASSERT_TRUE(h.RunUntil([&] { return client.Completed(fresh); }));
  EXPECT_EQ(client.done.at(fresh).kind, MessageEvent::Kind::kResponse);
}

// ------------------------------------------------------ peer death (virtual)

TcpConfig FastTimeouts() {
  TcpConfig config;
  config.peer_timeout_ns = 50 * kNsPerMs;
  config.ping_interval_ns = 10 * kNsPerMs;
  return config;
}

TEST(TcpFaultTest, SilentPeerFailsRpcsViaUnansweredPings) {
  SimClock clock;
  Harness h(&clock);
  Node& client = h.AddNode(FastTimeouts());
  SilentListener silent;
  const TimeNs start = clock.NowNs();
  auto id = client.t->SendRequest(silent.address(), Pattern(100, 0), 0);
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(h.RunUntil([&] { return client.Completed(*id); }));
  const MessageEvent& e = client.done.at(*id);
  EXPECT_EQ(e.kind, MessageEvent::Kind::kFailed);
  EXPECT_EQ(e.status.code(), StatusCode::kUnavailable) << e.status;
  EXPECT_GE(client.t->stats().pings_sent, 3u);
  EXPECT_LE(clock.NowNs() - start, 55 * kNsPerMs);
  EXPECT_EQ(client.t->stats().client_timeouts, 1u);
}

TEST(TcpFaultTest, ClientThatNeverSaysHelloIsDisconnected) {
  SimClock clock;
  Harness h(&clock);
  Node& server = h.AddNode(FastTimeouts());
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_storage a;
  socklen_t len = static_cast<socklen_t>(server.address().ToSockaddr(&a));
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), len), 0);
  ASSERT_TRUE(h.RunUntil([&] { return server.t->num_connections() == 1; }));
  ASSERT_TRUE(h.RunUntil([&] { return server.t->num_connections() == 0; }));
  EXPECT_GE(clock.NowNs(), 50 * kNsPerMs);
  EXPECT_EQ(server.t->stats().connections_reset, 1u);
  close(fd);
}

// ------------------------------------------------------------ bad input

class TcpBadInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    good_ = &h_.AddNode();
    server_ = &h_.AddNode();
    // A good client is busy with the server throughout.
    CallGood();
  }
  void CallGood() {
    uint64_t id = Call(*good_, *server_, Pattern(200'000, 5));
    ASSERT_TRUE(h_.RunUntil([&] { return good_->Completed(id); }));
    EXPECT_TRUE(MatchesPattern(good_->done.at(id).message, 200'000, 5));
  }
  // Runs until the server closed one more connection for bad input, then
  // checks the good client still works and nothing big was allocated.
  void ExpectProtocolError() {
    const uint64_t before = expected_errors_++;
    ASSERT_TRUE(h_.RunUntil([&] { return server_->t->stats().protocol_errors > before; }));
    EXPECT_EQ(server_->t->stats().protocol_errors, expected_errors_);
    CallGood();
    EXPECT_LT(server_->t->stats().peak_incoming_buffer_bytes, 4 * 200'000 + 2 * kChunk);
    EXPECT_EQ(server_->t->stats().requests_delivered, good_->done.size());
  }

  Harness h_;
  Node* good_ = nullptr;
  Node* server_ = nullptr;
  uint64_t expected_errors_ = 0;
};

TEST_F(TcpBadInputTest, RandomBytes) {
  std::mt19937 random(42);
  std::vector<std::byte> junk(4096);
  for (auto& b : junk) b = static_cast<std::byte>(random());
  RawClient raw(server_->address());
  raw.Send(junk);
  ExpectProtocolError();
  EXPECT_GE(server_->t->stats().connections_reset, 1u);
}

TEST_F(TcpBadInputTest, WrongVersion) {
  RawClient raw(server_->address());
  raw.RawHeader(2, 1, 16, 0, 0, 0);
  ExpectProtocolError();
}

TEST_F(TcpBadInputTest, RequestBeforeHello) {
  RawClient raw(server_->address());
  raw.RawHeader(1, 2, 10, 1, 10, 0);
  ExpectProtocolError();
}

TEST_F(TcpBadInputTest, UnknownFrameType) {
  RawClient raw(server_->address());
  raw.Hello();
  raw.RawHeader(1, 99, 0, 0, 0, 0);
  ExpectProtocolError();
}

TEST_F(TcpBadInputTest, ChunkLongerThanTheChunkLimit) {
  RawClient raw(server_->address());
  raw.Hello();
  raw.RawHeader(1, 2, 0x7FFFFFFF, 1, 0xFFFFFFFF, 0);
  ExpectProtocolError();
}

TEST_F(TcpBadInputTest, OffsetBeyondTheMessage) {
  RawClient raw(server_->address());
  raw.Hello();
  raw.RawHeader(1, 2, 100, 1, 50, 1000);
  ExpectProtocolError();
}

TEST_F(TcpBadInputTest, ChunkOfAMessageThatNeverStarted) {
  RawClient raw(server_->address());
  raw.Hello();
  raw.RawHeader(1, 2, 100, 1, 1000, 500);
  ExpectProtocolError();
}

TEST_F(TcpBadInputTest, ResponseLongerThanMaxMessageBytes) {
  RawClient raw(server_->address());
  raw.Hello();
  raw.RawHeader(1, 3, 100, 1, 0xFFFFFFF0, 0);
  ExpectProtocolError();
}

TEST_F(TcpBadInputTest, HalfAFrameThenClose) {
  RawClient raw(server_->address());
  raw.Hello();
  std::array<std::byte, 10> half{};
  half[0] = std::byte{1};
  half[1] = std::byte{2};
  raw.Send(half);
  raw.Close();
  ExpectProtocolError();
}

TEST_F(TcpBadInputTest, ClaimOf64MiBWithTenBytesAllocatesOneChunkAtMost) {
  RawClient raw(server_->address());
  raw.Hello();
  raw.RawHeader(1, 2, kChunk, 1, 64u << 20, 0);
  std::array<std::byte, 10> ten{};
  raw.Send(ten);
  ASSERT_TRUE(h_.RunUntil([&] { return server_->t->incoming_buffer_bytes() > 0; }));
  h_.RunFor(2 * kNsPerMs);
  EXPECT_GT(server_->t->incoming_buffer_bytes(), 0u);
  EXPECT_LE(server_->t->incoming_buffer_bytes(), 2 * 10 + kChunk);
  // Closing inside the chunk is a half frame: the memory comes back.
  raw.Close();
  ExpectProtocolError();
  EXPECT_EQ(server_->t->incoming_buffer_bytes(), 0u);
}

TEST(TcpMemoryTest, RequestOverTheIncomingBudgetIsRefused) {
  Harness h;
  Node& client = h.AddNode();
  TcpConfig config;
  config.max_incoming_bytes = 1 << 20;
  Node& server = h.AddNode(config);
  uint64_t big = Call(client, server, Pattern(4 << 20, 1));
  ASSERT_TRUE(h.RunUntil([&] { return client.Completed(big); }));
  ASSERT_EQ(server.refused.size(), 1u);
  EXPECT_EQ(server.refused[0].status.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(server.refused[0].status.message().find("tcp.max_incoming_bytes"), std::string::npos);
  EXPECT_LE(server.t->stats().peak_incoming_buffer_bytes, uint64_t{1} << 20);
  EXPECT_EQ(server.t->stats().memory_refused, 1u);
  uint64_t small = Call(client, server, Pattern(300'000, 2));
  ASSERT_TRUE(h.RunUntil([&] { return client.Completed(small); }));
  EXPECT_TRUE(MatchesPattern(client.done.at(small).message, 300'000, 2));
  EXPECT_EQ(server.t->stats().protocol_errors, 0u);
}

}  // namespace
}  // namespace wharf::stream
