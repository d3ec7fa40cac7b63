// UcpWorker between two workers of this process, over UCX's tcp transport
// on loopback and over shared memory: a connect and a listener, messages of
// 0 B to 16 MiB both ways (eager and rendezvous) checked byte for byte,
// sleeping on the event fd until a message arrives, and peer failures (a
// refused connect, a peer that goes away) reported by UCX. Every wait is
// bounded.
#include "ucx/ucp_worker.h"

#include <poll.h>

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace wharf::ucx {
namespace {

using namespace std::chrono_literals;
using transport::NetAddress;

std::string Pattern(size_t n, size_t seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed) % 251);
  return s;
}

// One side: a worker and what it received.
struct Side {
  std::unique_ptr<UcpWorker> worker;
  std::vector<std::pair<UcpWorker::PeerId, std::string>> received;
  std::vector<std::string> headers;
  std::map<UcpWorker::PeerId, Status> failed;

  static std::unique_ptr<Side> Open(const UcpOptions& options) {
    auto side = std::make_unique<Side>();
    Side* raw = side.get();
    auto worker = UcpWorker::Create(
        options, {.message = [raw](UcpWorker::PeerId peer, std::string_view header,
                                   Buffer m) {
                    raw->received.emplace_back(peer, std::string(m.AsStringView()));
                    raw->headers.emplace_back(header);
                  },
                  .peer_failed = [raw](UcpWorker::PeerId peer,
                                       const Status& why) { raw->failed[peer] = why; }});
    EXPECT_TRUE(worker.ok()) << worker.status();
    if (!worker.ok()) return nullptr;
    side->worker = std::move(*worker);
    return side;
  }
};

// A server listening on loopback and a client connected to it.
struct ConnectedPair {
  std::unique_ptr<Side> server, client;
  Result<NetAddress> bound = NetAddress();
  Result<UcpWorker::PeerId> peer = UcpWorker::PeerId{0};

  static std::optional<ConnectedPair> Open(const UcpOptions& options) {
    ConnectedPair p{Side::Open(options), Side::Open(options)};
    if (!p.server || !p.client) return std::nullopt;
    p.bound = p.server->worker->Listen(*NetAddress::Parse("127.0.0.1:0"));
    if (!p.bound.ok()) return std::nullopt;
    p.peer = p.client->worker->Connect(*p.bound);
    if (!p.peer.ok()) return std::nullopt;
    return p;
  }
};

// Progresses every side until `done()` or 10 s.
bool DriveUntil(std::initializer_list<Side*> sides, const std::function<bool()>& done) {
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    for (Side* s : sides) s->worker->Progress();
  }
  return true;
}

struct Transport {
  const char* name;
  UcpOptions options;
  const char* lane;  // what Describe names for the data path
};

class UcpWorkerTest : public ::testing::TestWithParam<Transport> {};

TEST_P(UcpWorkerTest, MessagesOfEverySizeArriveWholeBothWays) {
  auto pair = ConnectedPair::Open(GetParam().options);
  ASSERT_TRUE(pair) << "could not open and connect two workers";
  // References, not a structured binding: clang 14 cannot capture those.
  auto& server = pair->server;
  auto& client = pair->client;
  [[maybe_unused]] const Result<NetAddress>& bound = pair->bound;
  const Result<UcpWorker::PeerId>& peer = pair->peer;
  EXPECT_NE(bound->port(), 0);

  const std::vector<size_t> sizes = {0, 1, 100, 8 << 10, 64 << 10, 1 << 20, 16 << 20};
  int sent = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    client->worker->Send(*peer, "", Buffer::Copy(Pattern(sizes[i], i)), [&](const Status& s) {
      EXPECT_TRUE(s.ok()) << s;
      ++sent;
    });
  }
  ASSERT_TRUE(DriveUntil({server.get(), client.get()}, [&] {
    return server->received.size() == sizes.size() && sent == static_cast<int>(sizes.size());
  })) << server->received.size() << " of " << sizes.size() << " arrived";
  // UCX does not promise order across eager and rendezvous: match by size.
  std::map<size_t, std::string> by_size;
  for (auto& [from, bytes] : server->received) by_size[bytes.size()] = bytes;
  for (size_t i = 0; i < sizes.size(); ++i) {
    ASSERT_TRUE(by_size.contains(sizes[i])) << sizes[i];
    EXPECT_TRUE(by_size[sizes[i]] == Pattern(sizes[i], i)) << sizes[i];
  }
  // The server answers the peer its messages came from.
  const UcpWorker::PeerId back = server->received.front().first;
  server->worker->Send(back, "", Buffer::Copy(Pattern(2 << 20, 7)), nullptr);
  ASSERT_TRUE(DriveUntil({server.get(), client.get()}, [&] { return !client->received.empty(); }));
  EXPECT_EQ(client->received.front().first, *peer);
  EXPECT_TRUE(client->received.front().second == Pattern(2 << 20, 7));
  // UCX took the transport asked for.
  EXPECT_NE(client->worker->Describe(*peer).find(GetParam().lane), std::string::npos)
      << client->worker->Describe(*peer);
  // The one-line form (`wharf status`) names it with what UCX uses it for.
  const std::string lanes = client->worker->Lanes(*peer);
  EXPECT_NE(lanes.find(GetParam().lane), std::string::npos) << lanes;
  EXPECT_NE(lanes.find("am"), std::string::npos) << lanes;
  EXPECT_EQ(lanes.find("rdmacm"), std::string::npos)
      << "the connection manager is no data lane: " << lanes;
  EXPECT_EQ(client->worker->Lanes(12345), "");
  EXPECT_TRUE(server->failed.empty() && client->failed.empty());
}

TEST_P(UcpWorkerTest, AnArmedWorkerSleepsOnItsFdUntilAMessageComes) {
  auto pair = ConnectedPair::Open(GetParam().options);
  ASSERT_TRUE(pair) << "could not open and connect two workers";
  // References, not a structured binding: clang 14 cannot capture those.
  auto& server = pair->server;
  auto& client = pair->client;
  [[maybe_unused]] const Result<NetAddress>& bound = pair->bound;
  const Result<UcpWorker::PeerId>& peer = pair->peer;
  // Connected and quiet first.
  bool first = false;
  client->worker->Send(*peer, "", Buffer::Copy("hello"), [&](const Status&) { first = true; });
  ASSERT_TRUE(DriveUntil({server.get(), client.get()},
                         [&] { return first && server->received.size() == 1; }));
  // Nothing pending: the server arms, the client sends, the fd wakes.
  while (!server->worker->Arm()) server->worker->Progress();
  client->worker->Send(*peer, "", Buffer::Copy("wake up"), nullptr);
  const auto until = std::chrono::steady_clock::now() + 10s;
  bool woke = false;
  while (!woke && std::chrono::steady_clock::now() < until) {
    client->worker->Progress();
    pollfd p{.fd = server->worker->fd(), .events = POLLIN, .revents = 0};
    woke = ::poll(&p, 1, 10) == 1;
  }
  EXPECT_TRUE(woke) << "the event fd never became readable";
  ASSERT_TRUE(DriveUntil({server.get(), client.get()}, [&] { return server->received.size() == 2; }));
  EXPECT_EQ(server->received.back().second, "wake up");
}

TEST_P(UcpWorkerTest, APeerThatGoesAwayIsReportedFailed) {
  if (!GetParam().options.detect_peer_failure) {
    GTEST_SKIP() << "UCX 1.13's shared memory does not report a peer's failure";
  }
  auto pair = ConnectedPair::Open(GetParam().options);
  ASSERT_TRUE(pair) << "could not open and connect two workers";
  // References, not a structured binding: clang 14 cannot capture those.
  auto& server = pair->server;
  auto& client = pair->client;
  [[maybe_unused]] const Result<NetAddress>& bound = pair->bound;
  const Result<UcpWorker::PeerId>& peer = pair->peer;
  client->worker->Send(*peer, "", Buffer::Copy("hi"), nullptr);
  ASSERT_TRUE(DriveUntil({server.get(), client.get()}, [&] { return !server->received.empty(); }));
  const UcpWorker::PeerId gone = server->received.front().first;
  client.reset();  // its endpoints close
  ASSERT_TRUE(DriveUntil({server.get()}, [&] { return server->failed.contains(gone); }))
      << "the server never heard that its peer left";
  EXPECT_EQ(server->failed[gone].code(), StatusCode::kUnavailable);
  EXPECT_EQ(server->worker->peers(), 0u);
  // A send to it now fails at once.
  Status late;
  server->worker->Send(gone, "", Buffer::Copy("late"), [&](const Status& s) { late = s; });
  EXPECT_EQ(late.code(), StatusCode::kUnavailable);
}

TEST_P(UcpWorkerTest, HeadersTravelWithTheirMessagesAndPeersHaveAddresses) {
  auto pair = ConnectedPair::Open(GetParam().options);
  ASSERT_TRUE(pair) << "could not open and connect two workers";
  // References, not a structured binding: clang 14 cannot capture those.
  auto& server = pair->server;
  auto& client = pair->client;
  [[maybe_unused]] const Result<NetAddress>& bound = pair->bound;
  const Result<UcpWorker::PeerId>& peer = pair->peer;
  EXPECT_EQ(client->worker->AddressOf(*peer), *bound);
  const std::string small_header(kMaxUcpHeaderBytes, 'h');
  client->worker->Send(*peer, small_header, Buffer::Copy("eager"), nullptr);
  client->worker->Send(*peer, "rndv", Buffer::Copy(Pattern(4 << 20, 3)), nullptr);
  ASSERT_TRUE(DriveUntil({server.get(), client.get()}, [&] { return server->received.size() == 2; }));
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(server->headers[i], server->received[i].second == "eager" ? small_header : "rndv");
  }
  // The server knows where its peer came from: loopback, an ephemeral port.
  const NetAddress from = server->worker->AddressOf(server->received[0].first);
  EXPECT_EQ(from.ToString().rfind("127.0.0.1:", 0), 0u) << from.ToString();
  // A header over the limit is refused at once.
  Status too_long;
  client->worker->Send(*peer, std::string(kMaxUcpHeaderBytes + 1, 'x'), Buffer(),
                       [&](const Status& s) { too_long = s; });
  EXPECT_EQ(too_long.code(), StatusCode::kInvalidArgument);
}

TEST_P(UcpWorkerTest, AMessageOverTheLimitIsRefusedUnreadAndTheNextStillArrives) {
  UcpOptions limited = GetParam().options;
  limited.max_message_bytes = 64 << 10;
  auto server = Side::Open(limited);
  auto client = Side::Open(GetParam().options);
  ASSERT_TRUE(server && client);
  std::vector<uint64_t> refused;
  std::vector<size_t> allocated;
  // Rebuilt with an oversized and an allocate handler.
  Side* raw = server.get();
  auto worker = UcpWorker::Create(
      limited,
      {.message = [raw](UcpWorker::PeerId peer, std::string_view,
                        Buffer m) { raw->received.emplace_back(peer, std::string(m.AsStringView())); },
       .oversized = [&](UcpWorker::PeerId, std::string_view header,
                        uint64_t bytes) { refused.push_back(bytes + header.size()); },
       .allocate = [&](size_t bytes) {
         allocated.push_back(bytes);
         return Buffer::Allocate(bytes);
       }});
  ASSERT_TRUE(worker.ok());
  server->worker = std::move(*worker);
  auto bound = server->worker->Listen(*NetAddress::Parse("127.0.0.1:0"));
  ASSERT_TRUE(bound.ok());
  auto peer = client->worker->Connect(*bound);
  ASSERT_TRUE(peer.ok());
  client->worker->Send(*peer, "h", Buffer::Copy(Pattern(1 << 20, 1)), nullptr);
  client->worker->Send(*peer, "h", Buffer::Copy(Pattern(64 << 10, 2)), nullptr);
  ASSERT_TRUE(DriveUntil({server.get(), client.get()},
                         [&] { return server->received.size() == 1 && refused.size() == 1; }));
  EXPECT_EQ(refused[0], (1u << 20) + 1);
  EXPECT_TRUE(server->received[0].second == Pattern(64 << 10, 2));
  EXPECT_EQ(allocated, std::vector<size_t>{64 << 10});
  EXPECT_EQ(server->worker->counters().oversized_dropped, 1u);
}

TEST_P(UcpWorkerTest, PeersBeyondTheCapAreRefusedAndCounted) {
  if (!GetParam().options.detect_peer_failure) {
    // UCX 1.13 aborts the refused client's process when its worker is
    // destroyed with the send still pending ("ucp_ep.c:1185 Bug: pending
    // request ... should have been flushed"): without peer-failure
    // detection nothing ever fails that send (docs/transports.md).
    GTEST_SKIP() << "a refused peer without peer-failure detection crashes UCX 1.13";
  }
  UcpOptions capped = GetParam().options;
  capped.max_peers = 1;
  auto server = Side::Open(capped);
  auto first = Side::Open(GetParam().options);
  auto second = Side::Open(GetParam().options);
  ASSERT_TRUE(server && first && second);
  auto bound = server->worker->Listen(*NetAddress::Parse("127.0.0.1:0"));
  ASSERT_TRUE(bound.ok());
  auto a = first->worker->Connect(*bound);
  ASSERT_TRUE(a.ok());
  first->worker->Send(*a, "", Buffer::Copy("one"), nullptr);
  ASSERT_TRUE(DriveUntil({server.get(), first.get()}, [&] { return server->received.size() == 1; }));
  auto b = second->worker->Connect(*bound);
  ASSERT_TRUE(b.ok());
  second->worker->Send(*b, "", Buffer::Copy("two"), nullptr);
  ASSERT_TRUE(DriveUntil({server.get(), first.get(), second.get()},
                         [&] { return server->worker->counters().peers_refused == 1; }));
  EXPECT_EQ(server->worker->peers(), 1u);
  EXPECT_EQ(server->received.size(), 1u);
}

TEST_P(UcpWorkerTest, AClosedPeerIsForgottenQuietlyAndItsFarSideHears) {
  if (!GetParam().options.detect_peer_failure) {
    GTEST_SKIP() << "UCX 1.13's shared memory does not report a peer's failure";
  }
  auto pair = ConnectedPair::Open(GetParam().options);
  ASSERT_TRUE(pair) << "could not open and connect two workers";
  // References, not a structured binding: clang 14 cannot capture those.
  auto& server = pair->server;
  auto& client = pair->client;
  [[maybe_unused]] const Result<NetAddress>& bound = pair->bound;
  const Result<UcpWorker::PeerId>& peer = pair->peer;
  client->worker->Send(*peer, "", Buffer::Copy("bye"), nullptr);
  client->worker->Close(*peer);
  EXPECT_EQ(client->worker->peers(), 0u);
  ASSERT_TRUE(DriveUntil({server.get(), client.get()},
                         [&] { return server->received.size() == 1 && !server->failed.empty(); }));
  EXPECT_EQ(server->received[0].second, "bye");  // flushed before the close
  EXPECT_TRUE(client->failed.empty());
}

TEST(UcpWorkerOptionsTest, AnUnknownTransportIsRefusedSayingWhich) {
  auto worker = UcpWorker::Create({.tls = "no_such_transport"}, {});
  ASSERT_FALSE(worker.ok());
  EXPECT_NE(worker.status().message().find("no_such_transport"), std::string::npos)
      << worker.status();
}

// tcp on loopback (UCX leaves "lo" out unless named); shared memory between
// two workers of one process (UCX still needs tcp to connect by address;
// naming a network device there would leave the memory devices out, and so
// would asking for peer-failure detection, which UCX 1.13's shared memory
// cannot give).
INSTANTIATE_TEST_SUITE_P(
    Transports, UcpWorkerTest,
    ::testing::Values(Transport{"tcp", {.tls = "tcp", .devices = "lo"}, "tcp/lo"},
                      Transport{"shm", {.tls = "sm,tcp", .detect_peer_failure = false},
                                "memory"}),
    [](const ::testing::TestParamInfo<Transport>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace wharf::ucx
