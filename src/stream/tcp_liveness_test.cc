// Tests of TcpMessageTransport liveness at the default timeouts: silence is
// not death (a peer paused for seconds loses no RPC; one silent past
// tcp.peer_timeout fails them), and the kernel's word is (a dead server's
// refused reconnect, an unreachable host fail RPCs at once; a refusal where
// no process was ever known is retried). Virtual time over loopback
// sockets, and one real-time bound.
#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <string>

#include "stream/tcp_transport.h"
#include "stream/testing/raw_sockets.h"
#include "stream/testing/tcp_harness.h"
#include "transport/tcp/tcp_syscalls.h"

namespace wharf::stream {
namespace {

using testing::Harness;
using testing::MatchesPattern;
using testing::Node;
using testing::Pattern;
using testing::SilentListener;
using transport::MessageEvent;

uint64_t Call(Node& client, const Node& server, Buffer request) {
  auto id = client.t->SendRequest(server.address(), std::move(request), 0);
  EXPECT_TRUE(id.ok()) << id.status();
  return id.ok() ? *id : 0;
}

// Two nodes on virtual time with the default config, connected by one
// finished RPC.
class PausedPeerTest : public ::testing::TestWithParam<DurationNs> {
 protected:
  void SetUp() override {
    client_ = &h_.AddNode();
    server_ = &h_.AddNode();
    const uint64_t warm = Call(*client_, *server_, Pattern(10, 9));
    ASSERT_TRUE(h_.RunUntil([&] { return client_->Completed(warm); }));
  }

  SimClock clock_;
  Harness h_{&clock_};
  Node* client_ = nullptr;
  Node* server_ = nullptr;
};

TEST_P(PausedPeerTest, ServerPausedLosesNoRpc) {
  h_.Pause(*server_);
  const uint64_t id = Call(*client_, *server_, Pattern(1000, 1));
  h_.RunFor(GetParam());
  EXPECT_FALSE(client_->Completed(id)) << client_->done.at(id).status;
  h_.Resume(*server_);
  ASSERT_TRUE(h_.RunUntil([&] { return client_->Completed(id); }));
  const MessageEvent& e = client_->done.at(id);
  ASSERT_EQ(e.kind, MessageEvent::Kind::kResponse) << e.status;
  EXPECT_TRUE(MatchesPattern(e.message, 1000, 1));
  EXPECT_EQ(server_->MaxHandled(), 1);
  EXPECT_EQ(client_->t->stats().client_timeouts, 0u);
  EXPECT_GE(client_->t->stats().pings_sent, 1u) << "it asked while waiting";
}

TEST_P(PausedPeerTest, ServerPausedWhileItsConnectionDiesLosesNoRpc) {
  h_.Pause(*server_);
  const uint64_t id = Call(*client_, *server_, Pattern(1000, 2));
  h_.RunFor(100 * kNsPerMs);
  // The network kills the connection; the paused server's kernel still
  // accepts the reconnect, and its process says HELLO when it resumes.
  ASSERT_EQ(client_->t->ShutdownConnectionsForTesting(), 1u);
  h_.RunFor(GetParam());
  EXPECT_FALSE(client_->Completed(id));
  h_.Resume(*server_);
  ASSERT_TRUE(h_.RunUntil([&] { return client_->Completed(id); }));
  ASSERT_EQ(client_->done.at(id).kind, MessageEvent::Kind::kResponse) << client_->done.at(id).status;
  EXPECT_TRUE(MatchesPattern(client_->done.at(id).message, 1000, 2));
  EXPECT_EQ(server_->MaxHandled(), 1);
  EXPECT_EQ(client_->t->stats().client_timeouts, 0u);
}

TEST_P(PausedPeerTest, ClientPausedGetsItsResponseWhenItResumes) {
  server_->auto_respond = false;
  const uint64_t id = Call(*client_, *server_, Pattern(100, 3));
  ASSERT_TRUE(h_.RunUntil([&] { return server_->held.size() == 1; }));
  h_.Pause(*client_);
  ASSERT_TRUE(server_->t->SendResponse(server_->held[0].server_key, Pattern(100, 4)).ok());
  h_.RunFor(GetParam());
  h_.Resume(*client_);
  ASSERT_TRUE(h_.RunUntil([&] { return client_->Completed(id); }));
  EXPECT_EQ(client_->done.at(id).kind, MessageEvent::Kind::kResponse);
  EXPECT_EQ(server_->t->num_connections(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Pauses, PausedPeerTest,
                         ::testing::Values(1 * kNsPerSec, 3 * kNsPerSec),
                         [](const auto& info) { return std::to_string(info.param / kNsPerSec) + "s"; });

TEST_F(PausedPeerTest, ServerSilentPastTheTimeoutFailsItsRpcsThenComesBack) {
  h_.Pause(*server_);
  const TimeNs start = clock_.NowNs();
  const uint64_t id = Call(*client_, *server_, Pattern(10, 5));
  ASSERT_TRUE(h_.RunUntil([&] { return client_->Completed(id); }));
  const DurationNs took = clock_.NowNs() - start;
  const MessageEvent& e = client_->done.at(id);
  ASSERT_EQ(e.kind, MessageEvent::Kind::kFailed);
  EXPECT_EQ(e.status.code(), StatusCode::kUnavailable) << e.status;
  EXPECT_NE(e.status.message().find(server_->address().ToString()), std::string::npos) << e.status;
  EXPECT_NE(e.status.message().find("tcp.peer_timeout"), std::string::npos) << e.status;
  EXPECT_GE(took, 3 * kNsPerSec) << "seconds of silence, not one missed beat";
  EXPECT_GE(took, TcpConfig{}.peer_timeout_ns);
  EXPECT_LE(took, TcpConfig{}.peer_timeout_ns + TcpConfig{}.ping_interval_ns);
  EXPECT_EQ(client_->t->stats().client_timeouts, 1u);
  // It resumes: new RPCs reach it again.
  h_.Resume(*server_);
  const uint64_t fresh = Call(*client_, *server_, Pattern(10, 6));
  ASSERT_TRUE(h_.RunUntil([&] { return client_->Completed(fresh); }));
  EXPECT_EQ(client_->done.at(fresh).kind, MessageEvent::Kind::kResponse) << client_->done.at(fresh).status;
}

TEST(TcpLivenessTest, VanishedPeerFailsRpcsAfterTheTimeoutNotBefore) {
  // Nothing from the process, ever (the kernel completes the handshake, as
  // a host whose packets are dropped would not even do).
  SimClock clock;
  Harness h(&clock);
  Node& client = h.AddNode();
  SilentListener silent;
  const TimeNs start = clock.NowNs();
  auto id = client.t->SendRequest(silent.address(), Pattern(100, 0), 0);
  ASSERT_TRUE(id.ok());
  h.RunFor(3 * kNsPerSec);
  EXPECT_FALSE(client.Completed(*id));
  ASSERT_TRUE(h.RunUntil([&] { return client.Completed(*id); }));
  EXPECT_EQ(client.done.at(*id).status.code(), StatusCode::kUnavailable) << client.done.at(*id).status;
  EXPECT_GE(clock.NowNs() - start, TcpConfig{}.peer_timeout_ns);
  EXPECT_LE(clock.NowNs() - start, TcpConfig{}.peer_timeout_ns + TcpConfig{}.ping_interval_ns);
  EXPECT_EQ(client.t->stats().client_timeouts, 1u);
  EXPECT_GE(client.t->stats().pings_sent, 5u);
}

TEST(TcpLivenessTest, DeadServerFailsRpcsAtTheRefusedReconnectNotAfterTheTimeout) {
  SimClock clock;
  Harness h(&clock);
  Node& client = h.AddNode();
  Node& server = h.AddNode();
  server.auto_respond = false;
  const transport::NetAddress address = server.address();
  const uint64_t id = Call(client, server, Pattern(10, 0));
  ASSERT_TRUE(h.RunUntil([&] { return server.held.size() == 1; }));
  const TimeNs died = clock.NowNs();
  h.RemoveNode(server);  // its listener and connections close
  ASSERT_TRUE(h.RunUntil([&] { return client.Completed(id); }));
  // The connection's end, then one reconnect_min later the refused redial.
  EXPECT_LE(clock.NowNs() - died, TcpConfig{}.reconnect_min_ns);
  const MessageEvent& e = client.done.at(id);
  ASSERT_EQ(e.kind, MessageEvent::Kind::kFailed);
  EXPECT_EQ(e.status.code(), StatusCode::kUnavailable) << e.status;
  EXPECT_NE(e.status.message().find(address.ToString() + " is gone"), std::string::npos) << e.status;
  EXPECT_NE(e.status.message().find("refused"), std::string::npos) << e.status;
  EXPECT_EQ(client.t->stats().peer_gone_failures, 1u);
  EXPECT_EQ(client.t->stats().client_timeouts, 0u);
  // A later RPC to the dead peer fails as soon as its connect is refused.
  const TimeNs again = clock.NowNs();
  const uint64_t later = client.t->SendRequest(address, Pattern(1, 1), 0).value();
  ASSERT_TRUE(h.RunUntil([&] { return client.Completed(later); }));
  EXPECT_EQ(client.done.at(later).status.code(), StatusCode::kUnavailable);
  EXPECT_LE(clock.NowNs() - again, TcpConfig{}.reconnect_min_ns);
}

TEST(TcpLivenessTest, ServerNotYetListeningIsRetriedNotDeclaredDead) {
  // Refused, but by a port where we never knew a process: it may be
  // starting (a client launched before its server), so only silence counts.
  SimClock clock;
  Harness h(&clock);
  Node& client = h.AddNode();
  transport::NetAddress address;
  {
    Node& probe = h.AddNode();
    address = probe.address();
    h.RemoveNode(probe);
  }
  const uint64_t id = client.t->SendRequest(address, Pattern(10, 0), 0).value();
  h.RunFor(2 * kNsPerSec);
  EXPECT_FALSE(client.Completed(id));
  EXPECT_GE(client.t->stats().connect_failures, 5u) << "it kept trying";
  TcpConfig late;
  late.bind = address;
  Node& server = h.AddNode(late);
  ASSERT_TRUE(server.t);
  ASSERT_TRUE(h.RunUntil([&] { return client.Completed(id); }));
  EXPECT_EQ(client.done.at(id).kind, MessageEvent::Kind::kResponse) << client.done.at(id).status;
  EXPECT_EQ(client.t->stats().peer_gone_failures, 0u);
}

TEST(TcpLivenessTest, DeadServerOnRealTimeFailsRpcsWithin50Ms) {
  Harness h;
  TcpConfig config;
  config.peer_timeout_ns = 20 * kNsPerSec;  // explicit: the kernel's word must decide
  Node& client = h.AddNode(config);
  Node& server = h.AddNode(config);
  server.auto_respond = false;
  const uint64_t id = Call(client, server, Pattern(10, 0));
  ASSERT_TRUE(h.RunUntil([&] { return server.held.size() == 1; }));
  const auto died = std::chrono::steady_clock::now();
  h.RemoveNode(server);
  ASSERT_TRUE(h.RunUntil([&] { return client.Completed(id); }));
  const auto took = std::chrono::steady_clock::now() - died;
  EXPECT_EQ(client.done.at(id).status.code(), StatusCode::kUnavailable) << client.done.at(id).status;
  EXPECT_LT(took, std::chrono::milliseconds(50))
      << std::chrono::duration_cast<std::chrono::microseconds>(took).count() << " us";
}

// Passes reads to the kernel until armed, then fails the next one with
// `error` (as the kernel does after ICMP unreachables), noting when.
class UnreachableSyscalls final : public transport::tcp::TcpSyscalls {
 public:
  explicit UnreachableSyscalls(const Clock& clock) : clock_(clock) {}
  ssize_t Writev(int fd, const iovec* iov, int count) override {
    return Kernel().Writev(fd, iov, count);
  }
  ssize_t Readv(int fd, const iovec* iov, int count) override {
    if (error != 0) {
      errno = error;
      error = 0;
      fired_ns = clock_.NowNs();
      return -1;
    }
    return Kernel().Readv(fd, iov, count);
  }
  int error = 0;
  TimeNs fired_ns = kNever;

 private:
  const Clock& clock_;
};

TEST(TcpLivenessTest, UnreachableHostFailsRpcsAtTheError) {
  SimClock clock;
  Harness h(&clock);
  UnreachableSyscalls syscalls(clock);
  TcpConfig config;
  config.syscalls = &syscalls;
  Node& client = h.AddNode(config);
  Node& server = h.AddNode();
  server.auto_respond = false;
  const uint64_t id = Call(client, server, Pattern(10, 0));
  ASSERT_TRUE(h.RunUntil([&] { return server.held.size() == 1; }));
  syscalls.error = EHOSTUNREACH;  // the next read: the server's PONG
  ASSERT_TRUE(h.RunUntil([&] { return client.Completed(id); }));
  EXPECT_EQ(clock.NowNs(), syscalls.fired_ns) << "failed at the error, not later";
  const MessageEvent& e = client.done.at(id);
  EXPECT_EQ(e.status.code(), StatusCode::kUnavailable) << e.status;
  EXPECT_NE(e.status.message().find(server.address().ToString()), std::string::npos) << e.status;
  EXPECT_NE(e.status.message().find("No route to host"), std::string::npos) << e.status;
  EXPECT_EQ(client.t->stats().peer_gone_failures, 1u);
  EXPECT_EQ(client.t->stats().client_timeouts, 0u);
}

TEST(TcpLivenessTest, ResetConnectionToALiveServerIsNotDeath) {
  SimClock clock;
  Harness h(&clock);
  Node& client = h.AddNode();
  Node& server = h.AddNode();
  server.auto_respond = false;
  const uint64_t id = Call(client, server, Pattern(10, 0));
  ASSERT_TRUE(h.RunUntil([&] { return server.held.size() == 1; }));
  ASSERT_GE(server.t->ShutdownConnectionsForTesting(), 1u);
  h.RunFor(10 * kNsPerMs);
  EXPECT_FALSE(client.Completed(id));
  ASSERT_TRUE(server.t->SendResponse(server.held[0].server_key, Pattern(10, 1)).ok());
  ASSERT_TRUE(h.RunUntil([&] { return client.Completed(id); }));
  EXPECT_EQ(client.done.at(id).kind, MessageEvent::Kind::kResponse) << client.done.at(id).status;
  EXPECT_EQ(server.MaxHandled(), 1);
  EXPECT_GE(client.t->stats().reconnects, 1u);
}

}  // namespace
}  // namespace wharf::stream
