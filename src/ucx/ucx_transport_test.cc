// UcxMessageTransport between two transports of this process, over UCX's
// tcp on loopback and over shared memory: calls of 0 B to 64 MiB checked
// byte for byte, the server's view of its client, refusals (over the
// message limit, over the call table), cancellation, a server that dies
// with calls outstanding, idle connections closed on a simulated clock,
// garbage and forged answers from a raw UCX peer, and sleeping on the fd.
// Every wait is bounded (10 s).
#include "ucx/ucx_transport.h"

#include <poll.h>

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/sim_clock.h"
#include "base/testing/counter_of.h"

namespace wharf::ucx {
namespace {

using namespace std::chrono_literals;
using testing_support::CounterOf;
using transport::MessageEvent;
using transport::NetAddress;

std::string Pattern(size_t n, size_t seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed) % 251);
  return s;
}

// What Paths() says of `server`: "" when no connection to it is open.
std::string PathTo(const transport::MessageTransport& t, const NetAddress& server) {
  for (const auto& [peer, path] : t.Paths()) {
    if (peer == "ucx://" + server.ToString()) return path;
  }
  return "";
}

struct Path {
  const char* name;
  UcxConfig config;
};

// A transport and the events it reported.
struct Node {
  std::unique_ptr<UcxMessageTransport> t;
  std::vector<MessageEvent> events;

  void Poll() {
    t->Poll();
    MessageEvent e;
    while (t->PopEvent(&e)) events.push_back(std::move(e));
  }
  // Takes the first event of `kind`, if any.
  bool Take(MessageEvent::Kind kind, MessageEvent* out) {
    for (auto it = events.begin(); it != events.end(); ++it) {
      if (it->kind == kind) {
        *out = std::move(*it);
        events.erase(it);
        return true;
      }
    }
    return false;
  }
};

bool DriveUntil(std::initializer_list<Node*> nodes, const std::function<bool()>& done) {
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    for (Node* n : nodes) n->Poll();
  }
  return true;
}

class UcxTransportTest : public ::testing::TestWithParam<Path> {
 protected:
  std::unique_ptr<Node> Open(UcxConfig config, const Clock& clock) {
    config.bind = *NetAddress::Parse("127.0.0.1:0");
    if (config.max_message_bytes == 0) config.max_message_bytes = 128 << 20;
    auto t = UcxMessageTransport::Open(config, clock);
    EXPECT_TRUE(t.ok()) << t.status();
    if (!t.ok()) return nullptr;
    auto node = std::make_unique<Node>();
    node->t = std::move(*t);
    return node;
  }
  std::unique_ptr<Node> Open() { return Open(GetParam().config, clock_); }

  // One whole call: request from client to server, answered with `reply`.
  MessageEvent Call(Node& client, Node& server, Buffer request, const std::string& reply,
                    std::string* request_seen = nullptr) {
    auto id = client.t->SendRequest(server.t->LocalAddress(), std::move(request), 77);
    EXPECT_TRUE(id.ok()) << id.status();
    MessageEvent req;
    EXPECT_TRUE(DriveUntil({&client, &server},
                           [&] { return server.Take(MessageEvent::Kind::kRequest, &req); }));
    if (request_seen != nullptr) *request_seen = std::string(req.message.AsStringView());
    EXPECT_TRUE(server.t->SendResponse(req.server_key, Buffer::Copy(reply)).ok());
    MessageEvent resp;
    EXPECT_TRUE(DriveUntil({&client, &server}, [&] {
      return client.Take(MessageEvent::Kind::kResponse, &resp) ||
             client.Take(MessageEvent::Kind::kFailed, &resp);
    }));
    EXPECT_EQ(resp.client_id, id.ok() ? *id : 0);
    EXPECT_EQ(resp.cookie, 77u);
    return resp;
  }

  SystemClock clock_;
};

// Large messages are received into kept blocks (LargeBufferPool), not a
// fresh malloc per message that glibc gives back and faults in again: with
// it 1 MiB RPC goodput was less than half (docs/transports.md).
TEST_P(UcxTransportTest, LargeMessagesAreReceivedIntoKeptBlocks) {
  auto server = Open();
  auto client = Open();
  ASSERT_TRUE(server && client);
  EXPECT_EQ(CounterOf(server->t->Counters(), "ucx.receive_pool_bytes"), 0u);
  for (int i = 0; i < 3; ++i) {
    MessageEvent resp = Call(*client, *server, Buffer::Copy(Pattern(1 << 20, i)), "ok");
    ASSERT_EQ(resp.kind, MessageEvent::Kind::kResponse) << resp.status;
  }
  // The request's block went back to the pool once its event was dropped,
  // and the next one reused it.
  EXPECT_EQ(CounterOf(server->t->Counters(), "ucx.receive_pool_bytes"), uint64_t{1} << 20);
  // Small ones are not pooled.
  MessageEvent small = Call(*client, *server, Buffer::Copy(Pattern(100, 1)), "ok");
  ASSERT_EQ(small.kind, MessageEvent::Kind::kResponse);
  EXPECT_EQ(CounterOf(server->t->Counters(), "ucx.receive_pool_bytes"), uint64_t{1} << 20);
}

TEST_P(UcxTransportTest, CallsOfEverySizeArriveWholeBothWays) {
  auto server = Open();
  auto client = Open();
  ASSERT_TRUE(server && client);
  EXPECT_EQ(server->t->scheme(), "ucx");
  for (size_t size : {size_t{0}, size_t{1}, size_t{4096}, size_t{65536}, size_t{1} << 20,
                      size_t{16} << 20, size_t{64} << 20}) {
    std::string seen;
    const std::string reply = Pattern(size, size + 1);
    MessageEvent resp = Call(*client, *server, Buffer::Copy(Pattern(size, size)), reply, &seen);
    ASSERT_EQ(resp.kind, MessageEvent::Kind::kResponse) << size << ": " << resp.status;
    EXPECT_TRUE(seen == Pattern(size, size)) << size;
    EXPECT_TRUE(resp.message.AsStringView() == reply) << size;
  }
  EXPECT_EQ(CounterOf(client->t->Counters(), "ucx.responses_received"), 7u);
  EXPECT_EQ(server->t->num_server_calls(), 0u);
  EXPECT_EQ(client->t->num_client_calls(), 0u);
  EXPECT_NE(PathTo(*client->t, server->t->LocalAddress()), "");
}

TEST_P(UcxTransportTest, TheServerKnowsItsClientByItsListeningAddress) {
  auto server = Open();
  auto client = Open();
  ASSERT_TRUE(server && client);
  ASSERT_TRUE(client->t->SendRequest(server->t->LocalAddress(), Buffer::Copy("who"), 1).ok());
  MessageEvent req;
  ASSERT_TRUE(DriveUntil({client.get(), server.get()},
                         [&] { return server->Take(MessageEvent::Kind::kRequest, &req); }));
  EXPECT_EQ(req.server_key.client, client->t->LocalAddress());
  // Answered twice: the second is refused.
  EXPECT_TRUE(server->t->SendResponse(req.server_key, Buffer::Copy("a")).ok());
  EXPECT_EQ(server->t->SendResponse(req.server_key, Buffer::Copy("b")).code(),
            StatusCode::kNotFound);
}

TEST_P(UcxTransportTest, ARequestOverTheServersLimitIsRefusedUnread) {
  UcxConfig small = GetParam().config;
  small.max_message_bytes = 64 << 10;
  auto server = Open(small, clock_);
  auto client = Open();
  ASSERT_TRUE(server && client);
  MessageEvent resp = Call(*client, *server, Buffer::Copy(Pattern(64 << 10, 1)), "fits");
  EXPECT_EQ(resp.kind, MessageEvent::Kind::kResponse);
  ASSERT_TRUE(client->t->SendRequest(server->t->LocalAddress(), Buffer::Copy(Pattern(1 << 20, 2)), 9)
                  .ok());
  MessageEvent failed;
  ASSERT_TRUE(DriveUntil({client.get(), server.get()},
                         [&] { return client->Take(MessageEvent::Kind::kFailed, &failed); }));
  EXPECT_EQ(failed.status.code(), StatusCode::kResourceExhausted) << failed.status;
  EXPECT_NE(failed.status.message().find("message limit"), std::string::npos) << failed.status;
  EXPECT_TRUE(server->events.empty());
  EXPECT_EQ(CounterOf(server->t->Counters(), "ucx.oversized_dropped"), 1u);
  // Our own limit: refused before anything is sent.
  auto own = server->t->SendRequest(client->t->LocalAddress(), Buffer::Copy(Pattern(1 << 20, 3)), 1);
  EXPECT_EQ(own.status().code(), StatusCode::kInvalidArgument);
}

TEST_P(UcxTransportTest, AResponseOverTheClientsLimitFailsItsCallResourceExhausted) {
  UcxConfig small = GetParam().config;
  small.max_message_bytes = 64 << 10;
  auto server = Open();
  auto client = Open(small, clock_);
  ASSERT_TRUE(server && client);
  MessageEvent failed = Call(*client, *server, Buffer::Copy("big answer"), Pattern(1 << 20, 4));
  EXPECT_EQ(failed.kind, MessageEvent::Kind::kFailed);
  EXPECT_EQ(failed.status.code(), StatusCode::kResourceExhausted) << failed.status;
  EXPECT_NE(failed.status.message().find("response of 1048576 bytes"), std::string::npos)
      << failed.status;
  EXPECT_EQ(client->t->num_client_calls(), 0u);
}

TEST_P(UcxTransportTest, RequestsBeyondTheCallTableAreRefused) {
  UcxConfig one = GetParam().config;
  one.max_server_rpcs = 1;
  auto server = Open(one, clock_);
  auto client = Open();
  ASSERT_TRUE(server && client);
  ASSERT_TRUE(client->t->SendRequest(server->t->LocalAddress(), Buffer::Copy("first"), 1).ok());
  MessageEvent req;
  ASSERT_TRUE(DriveUntil({client.get(), server.get()},
                         [&] { return server->Take(MessageEvent::Kind::kRequest, &req); }));
  ASSERT_TRUE(client->t->SendRequest(server->t->LocalAddress(), Buffer::Copy("second"), 2).ok());
  MessageEvent failed;
  ASSERT_TRUE(DriveUntil({client.get(), server.get()},
                         [&] { return client->Take(MessageEvent::Kind::kFailed, &failed); }));
  EXPECT_EQ(failed.cookie, 2u);
  EXPECT_EQ(failed.status.code(), StatusCode::kResourceExhausted);
  // The first is still answered.
  ASSERT_TRUE(server->t->SendResponse(req.server_key, Buffer::Copy("one")).ok());
  MessageEvent resp;
  ASSERT_TRUE(DriveUntil({client.get(), server.get()},
                         [&] { return client->Take(MessageEvent::Kind::kResponse, &resp); }));
  EXPECT_EQ(resp.message.AsStringView(), "one");
}

TEST_P(UcxTransportTest, ACancelledCallEndsSilentlyAndTheServerDropsIt) {
  auto server = Open();
  auto client = Open();
  ASSERT_TRUE(server && client);
  auto id = client->t->SendRequest(server->t->LocalAddress(), Buffer::Copy("slow"), 1);
  ASSERT_TRUE(id.ok());
  MessageEvent req;
  ASSERT_TRUE(DriveUntil({client.get(), server.get()},
                         [&] { return server->Take(MessageEvent::Kind::kRequest, &req); }));
  EXPECT_TRUE(client->t->Cancel(*id));
  EXPECT_FALSE(client->t->Cancel(*id));
  ASSERT_TRUE(DriveUntil({client.get(), server.get()},
                         [&] { return CounterOf(server->t->Counters(), "ucx.cancels_received") == 1; }));
  EXPECT_EQ(server->t->SendResponse(req.server_key, Buffer::Copy("late")).code(),
            StatusCode::kNotFound);
  // Nothing reaches the client for it, and the next call works.
  MessageEvent resp = Call(*client, *server, Buffer::Copy("next"), "ok");
  EXPECT_EQ(resp.kind, MessageEvent::Kind::kResponse);
  EXPECT_TRUE(client->events.empty());
}

TEST_P(UcxTransportTest, AServerThatDiesFailsItsCallsUnavailable) {
  if (!GetParam().config.detect_peer_failure) {
    GTEST_SKIP() << "UCX 1.13's shared memory does not report a peer's failure";
  }
  auto server = Open();
  auto client = Open();
  ASSERT_TRUE(server && client);
  const NetAddress gone = server->t->LocalAddress();
  ASSERT_TRUE(client->t->SendRequest(gone, Buffer::Copy("a"), 1).ok());
  ASSERT_TRUE(client->t->SendRequest(gone, Buffer::Copy("b"), 2).ok());
  ASSERT_TRUE(DriveUntil({client.get(), server.get()},
                         [&] { return server->events.size() == 2; }));
  server.reset();
  ASSERT_TRUE(DriveUntil({client.get()}, [&] { return client->events.size() == 2; }));
  for (const MessageEvent& e : client->events) {
    EXPECT_EQ(e.kind, MessageEvent::Kind::kFailed);
    EXPECT_EQ(e.status.code(), StatusCode::kUnavailable) << e.status;
    EXPECT_NE(e.status.message().find(gone.ToString()), std::string::npos) << e.status;
  }
  EXPECT_EQ(client->t->num_client_calls(), 0u);
  // A server that never existed: refused by the kernel, failed the same way.
  client->events.clear();
  ASSERT_TRUE(client->t->SendRequest(gone, Buffer::Copy("c"), 3).ok());
  MessageEvent failed;
  ASSERT_TRUE(DriveUntil({client.get()},
                         [&] { return client->Take(MessageEvent::Kind::kFailed, &failed); }));
  EXPECT_EQ(failed.status.code(), StatusCode::kUnavailable);
}

TEST_P(UcxTransportTest, IdleConnectionsAreClosedAndReopenedOnDemand) {
  SimClock sim(1 * kNsPerSec);
  UcxConfig config = GetParam().config;
  config.idle_timeout_ns = 5 * kNsPerSec;
  auto server = Open(config, sim);
  auto client = Open(config, sim);
  ASSERT_TRUE(server && client);
  EXPECT_EQ(Call(*client, *server, Buffer::Copy("1"), "1").kind, MessageEvent::Kind::kResponse);
  EXPECT_EQ(client->t->NextDeadline(), 0) << "work pending right after a call";
  client->Poll();
  sim.AdvanceBy(4 * kNsPerSec);
  client->Poll();
  EXPECT_EQ(CounterOf(client->t->Counters(), "ucx.idle_closed"), 0u);
  sim.AdvanceBy(2 * kNsPerSec);
  client->Poll();
  EXPECT_EQ(CounterOf(client->t->Counters(), "ucx.idle_closed"), 1u);
  EXPECT_EQ(PathTo(*client->t, server->t->LocalAddress()), "");
  EXPECT_EQ(Call(*client, *server, Buffer::Copy("2"), "2").kind, MessageEvent::Kind::kResponse);
}

TEST_P(UcxTransportTest, GarbageAndForgedAnswersFromARawPeerAreDroppedAndCounted) {
  auto server = Open();
  auto client = Open();
  ASSERT_TRUE(server && client);
  // A call in flight that a stranger will try to answer.
  auto id = client->t->SendRequest(server->t->LocalAddress(), Buffer::Copy("mine"), 5);
  ASSERT_TRUE(id.ok());
  MessageEvent req;
  ASSERT_TRUE(DriveUntil({client.get(), server.get()},
                         [&] { return server->Take(MessageEvent::Kind::kRequest, &req); }));
  UcpOptions raw_options{.tls = GetParam().config.tls,
                         .devices = GetParam().config.devices,
                         .detect_peer_failure = GetParam().config.detect_peer_failure};
  auto raw = UcpWorker::Create(raw_options, {});
  ASSERT_TRUE(raw.ok());
  auto peer = (*raw)->Connect(client->t->LocalAddress());
  ASSERT_TRUE(peer.ok());
  int sent = 0;
  auto count = [&](const Status&) { ++sent; };
  (*raw)->Send(*peer, "short", Buffer::Copy("x"), count);
  (*raw)->Send(*peer, std::string(16, '\xff'), Buffer::Copy("x"), count);
  const wire::UcxHeaderBytes forged =
      wire::EncodeUcxHeader({.kind = wire::UcxKind::kResponse, .rpc_id = *id});
  (*raw)->Send(*peer, std::string_view(forged.data(), forged.size()), Buffer::Copy("forged"),
               count);
  ASSERT_TRUE(DriveUntil({client.get(), server.get()}, [&] {
    (*raw)->Progress();
    return sent == 3 && CounterOf(client->t->Counters(), "ucx.unmatched_dropped") == 1 &&
           CounterOf(client->t->Counters(), "ucx.malformed_dropped") == 2;
  }));
  // The real answer still completes the call.
  ASSERT_TRUE(server->t->SendResponse(req.server_key, Buffer::Copy("real")).ok());
  MessageEvent resp;
  ASSERT_TRUE(DriveUntil({client.get(), server.get()},
                         [&] { return client->Take(MessageEvent::Kind::kResponse, &resp); }));
  EXPECT_EQ(resp.message.AsStringView(), "real");
}

TEST_P(UcxTransportTest, AQuietTransportSleepsOnItsFdUntilARequestComes) {
  auto server = Open();
  auto client = Open();
  ASSERT_TRUE(server && client);
  EXPECT_EQ(Call(*client, *server, Buffer::Copy("warm"), "up").kind, MessageEvent::Kind::kResponse);
  // Poll until the server says it may sleep.
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (server->t->NextDeadline() == 0 && std::chrono::steady_clock::now() < until) {
    server->Poll();
    client->Poll();
  }
  ASSERT_NE(server->t->NextDeadline(), 0);
  ASSERT_TRUE(client->t->SendRequest(server->t->LocalAddress(), Buffer::Copy("wake"), 1).ok());
  bool woke = false;
  while (!woke && std::chrono::steady_clock::now() < until) {
    client->Poll();
    pollfd p{.fd = server->t->ReadableFd(), .events = POLLIN, .revents = 0};
    woke = ::poll(&p, 1, 10) == 1;
  }
  EXPECT_TRUE(woke);
  MessageEvent req;
  ASSERT_TRUE(DriveUntil({client.get(), server.get()},
                         [&] { return server->Take(MessageEvent::Kind::kRequest, &req); }));
  EXPECT_EQ(req.message.AsStringView(), "wake");
}

INSTANTIATE_TEST_SUITE_P(
    Paths, UcxTransportTest,
    ::testing::Values(Path{"tcp", {.tls = "tcp", .devices = "lo"}},
                      Path{"shm", {.tls = "sm,tcp", .detect_peer_failure = false}}),
    [](const ::testing::TestParamInfo<Path>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace wharf::ucx
