// UcpWorker between two workers of this process, over UCX's tcp transport
// on loopback and over shared memory: a connect and a listener, messages of
// 0 B to 16 MiB both ways (eager and rendezvous) checked byte for byte,
// sleeping on the event fd until a message arrives, and peer failures (a
// refused connect, a peer that goes away) reported by UCX. Every wait is
// bounded.
#include "ucx/ucp_worker.h"

#include <gtest/gtest.h>
#include <poll.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
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

  // A worker with `options` that records what it receives and who fails;
  // `handlers` may add an oversized and an allocate handler.
  static std::unique_ptr<Side> Open(const UcpOptions& options, UcpWorker::Handlers handlers = {}) {
    auto side = std::make_unique<Side>();
    Side* raw = side.get();
    handlers.message = [raw](UcpWorker::PeerId peer, std::string_view header, Buffer m) {
      raw->received.emplace_back(peer, std::string(m.AsStringView()));
      raw->headers.emplace_back(header);
    };
    handlers.peer_failed = [raw](UcpWorker::PeerId peer, const Status& why) {
      raw->failed[peer] = why;
    };
    auto worker = UcpWorker::Create(options, std::move(handlers));
    EXPECT_TRUE(worker.ok()) << worker.status();
    if (!worker.ok()) return nullptr;
    side->worker = std::move(*worker);
    return side;
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

class UcpWorkerTest : public ::testing::TestWithParam<Transport> {
 protected:
  // server_ listening on loopback (with `server_options`, and `handlers`
  // added to Side's), client_ (the parameter's options) connected to it.
  void Connect(const UcpOptions& server_options, UcpWorker::Handlers handlers = {}) {
    server_ = Side::Open(server_options, std::move(handlers));
    client_ = Side::Open(GetParam().options);
    ASSERT_TRUE(server_ && client_);
    auto bound = server_->worker->Listen(*NetAddress::Parse("127.0.0.1:0"));
    ASSERT_TRUE(bound.ok()) << bound.status();
    bound_ = *bound;
    auto peer = client_->worker->Connect(bound_);
    ASSERT_TRUE(peer.ok()) << peer.status();
    peer_ = *peer;
  }
  void Connect() { Connect(GetParam().options); }

  std::unique_ptr<Side> server_, client_;
  NetAddress bound_;
  UcpWorker::PeerId peer_ = 0;
};

TEST_P(UcpWorkerTest, MessagesOfEverySizeArriveWholeBothWays) {
  ASSERT_NO_FATAL_FAILURE(Connect());
  EXPECT_NE(bound_.port(), 0);

  const std::vector<size_t> sizes = {0, 1, 100, 8 << 10, 64 << 10, 1 << 20, 16 << 20};
  int sent = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    client_->worker->Send(peer_, "", Buffer::Copy(Pattern(sizes[i], i)), [&](const Status& s) {
      EXPECT_TRUE(s.ok()) << s;
      ++sent;
    });
  }
  ASSERT_TRUE(DriveUntil({server_.get(), client_.get()},
                         [&] {
                           return server_->received.size() == sizes.size() &&
                                  sent == static_cast<int>(sizes.size());
                         }))
      << server_->received.size() << " of " << sizes.size() << " arrived";
  // UCX does not promise order across eager and rendezvous: match by size.
  std::map<size_t, std::string> by_size;
  for (auto& [from, bytes] : server_->received) by_size[bytes.size()] = bytes;
  for (size_t i = 0; i < sizes.size(); ++i) {
    ASSERT_TRUE(by_size.contains(sizes[i])) << sizes[i];
    EXPECT_TRUE(by_size[sizes[i]] == Pattern(sizes[i], i)) << sizes[i];
  }
  // The server_ answers the peer its messages came from.
  const UcpWorker::PeerId back = server_->received.front().first;
  server_->worker->Send(back, "", Buffer::Copy(Pattern(2 << 20, 7)), nullptr);
  ASSERT_TRUE(
      DriveUntil({server_.get(), client_.get()}, [&] { return !client_->received.empty(); }));
  EXPECT_EQ(client_->received.front().first, peer_);
  EXPECT_TRUE(client_->received.front().second == Pattern(2 << 20, 7));
  // UCX took the transport asked for.
  EXPECT_NE(client_->worker->Describe(peer_).find(GetParam().lane), std::string::npos)
      << client_->worker->Describe(peer_);
  // The one-line form (`wharf status`) names it with what UCX uses it for.
  const std::string lanes = client_->worker->Lanes(peer_);
  EXPECT_NE(lanes.find(GetParam().lane), std::string::npos) << lanes;
  EXPECT_NE(lanes.find("am"), std::string::npos) << lanes;
  EXPECT_EQ(lanes.find("rdmacm"), std::string::npos)
      << "the connection manager is no data lane: " << lanes;
  EXPECT_EQ(client_->worker->Lanes(12345), "");
  EXPECT_TRUE(server_->failed.empty() && client_->failed.empty());
}

TEST_P(UcpWorkerTest, AnArmedWorkerSleepsOnItsFdUntilAMessageComes) {
  ASSERT_NO_FATAL_FAILURE(Connect());
  // Connected and quiet first.
  bool first = false;
  client_->worker->Send(peer_, "", Buffer::Copy("hello"), [&](const Status&) { first = true; });
  ASSERT_TRUE(DriveUntil({server_.get(), client_.get()},
                         [&] { return first && server_->received.size() == 1; }));
  // Nothing pending: the server_ arms, the client_ sends, the fd wakes.
  while (!server_->worker->Arm()) server_->worker->Progress();
  client_->worker->Send(peer_, "", Buffer::Copy("wake up"), nullptr);
  const auto until = std::chrono::steady_clock::now() + 10s;
  bool woke = false;
  while (!woke && std::chrono::steady_clock::now() < until) {
    client_->worker->Progress();
    pollfd p{.fd = server_->worker->fd(), .events = POLLIN, .revents = 0};
    woke = ::poll(&p, 1, 10) == 1;
  }
  EXPECT_TRUE(woke) << "the event fd never became readable";
  ASSERT_TRUE(
      DriveUntil({server_.get(), client_.get()}, [&] { return server_->received.size() == 2; }));
  EXPECT_EQ(server_->received.back().second, "wake up");
}

TEST_P(UcpWorkerTest, APeerThatGoesAwayIsReportedFailed) {
  if (!GetParam().options.detect_peer_failure) {
    GTEST_SKIP() << "UCX 1.13's shared memory does not report a peer's failure";
  }
  ASSERT_NO_FATAL_FAILURE(Connect());
  client_->worker->Send(peer_, "", Buffer::Copy("hi"), nullptr);
  ASSERT_TRUE(
      DriveUntil({server_.get(), client_.get()}, [&] { return !server_->received.empty(); }));
  const UcpWorker::PeerId gone = server_->received.front().first;
  client_.reset();  // its endpoints close
  ASSERT_TRUE(DriveUntil({server_.get()}, [&] { return server_->failed.contains(gone); }))
      << "the server_ never heard that its peer left";
  EXPECT_EQ(server_->failed[gone].code(), StatusCode::kUnavailable);
  EXPECT_EQ(server_->worker->peers(), 0u);
  // A send to it now fails at once.
  Status late;
  server_->worker->Send(gone, "", Buffer::Copy("late"), [&](const Status& s) { late = s; });
  EXPECT_EQ(late.code(), StatusCode::kUnavailable);
}

TEST_P(UcpWorkerTest, HeadersTravelWithTheirMessagesAndPeersHaveAddresses) {
  ASSERT_NO_FATAL_FAILURE(Connect());
  EXPECT_EQ(client_->worker->AddressOf(peer_), bound_);
  const std::string small_header(kMaxUcpHeaderBytes, 'h');
  client_->worker->Send(peer_, small_header, Buffer::Copy("eager"), nullptr);
  client_->worker->Send(peer_, "rndv", Buffer::Copy(Pattern(4 << 20, 3)), nullptr);
  ASSERT_TRUE(
      DriveUntil({server_.get(), client_.get()}, [&] { return server_->received.size() == 2; }));
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(server_->headers[i], server_->received[i].second == "eager" ? small_header : "rndv");
  }
  // The server_ knows where its peer came from: loopback, an ephemeral port.
  const NetAddress from = server_->worker->AddressOf(server_->received[0].first);
  EXPECT_EQ(from.ToString().rfind("127.0.0.1:", 0), 0u) << from.ToString();
  // A header over the limit is refused at once.
  Status too_long;
  client_->worker->Send(peer_, std::string(kMaxUcpHeaderBytes + 1, 'x'), Buffer(),
                        [&](const Status& s) { too_long = s; });
  EXPECT_EQ(too_long.code(), StatusCode::kInvalidArgument);
}

TEST_P(UcpWorkerTest, AMessageOverTheLimitIsRefusedUnreadAndTheNextStillArrives) {
  UcpOptions limited = GetParam().options;
  limited.max_message_bytes = 64 << 10;
  std::vector<uint64_t> refused;
  std::vector<size_t> allocated;
  ASSERT_NO_FATAL_FAILURE(Connect(
      limited, {.oversized = [&](UcpWorker::PeerId, std::string_view header,
                                 uint64_t bytes) { refused.push_back(bytes + header.size()); },
                .allocate =
                    [&](size_t bytes) {
                      allocated.push_back(bytes);
                      return Buffer::Allocate(bytes);
                    }}));
  client_->worker->Send(peer_, "h", Buffer::Copy(Pattern(1 << 20, 1)), nullptr);
  client_->worker->Send(peer_, "h", Buffer::Copy(Pattern(64 << 10, 2)), nullptr);
  ASSERT_TRUE(DriveUntil({server_.get(), client_.get()},
                         [&] { return server_->received.size() == 1 && refused.size() == 1; }));
  EXPECT_EQ(refused[0], (1u << 20) + 1);
  EXPECT_TRUE(server_->received[0].second == Pattern(64 << 10, 2));
  EXPECT_EQ(allocated, std::vector<size_t>{64 << 10});
  EXPECT_EQ(server_->worker->counters().oversized_dropped, 1u);
}

TEST_P(UcpWorkerTest, PeersBeyondTheCapAreRefusedAndCounted) {
  // Over shared memory the refused client's send never fails (no peer-
  // failure detection): its worker's destructor must still close cleanly.
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
  ASSERT_TRUE(
      DriveUntil({server.get(), first.get()}, [&] { return server->received.size() == 1; }));
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
  ASSERT_NO_FATAL_FAILURE(Connect());
  client_->worker->Send(peer_, "", Buffer::Copy("bye"), nullptr);
  client_->worker->Close(peer_);
  EXPECT_EQ(client_->worker->peers(), 0u);
  ASSERT_TRUE(DriveUntil({server_.get(), client_.get()}, [&] {
    return server_->received.size() == 1 && !server_->failed.empty();
  }));
  EXPECT_EQ(server_->received[0].second, "bye");  // flushed before the close
  EXPECT_TRUE(client_->failed.empty());
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
                      Transport{"shm", {.tls = "sm,tcp", .detect_peer_failure = false}, "memory"}),
    [](const ::testing::TestParamInfo<Transport>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace wharf::ucx
