// Tests of ConnectionTable over loopback sockets: listening, accepting up to
// the inbound cap, dialling and finishing a connect, and how each kind of
// close is counted. Waits are bounded waits on the table's epoll fd, never
// sleeps.
#include "stream/connection_table.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <vector>

#include "stream/peer.h"
#include "stream/testing/fake_connections.h"
#include "stream/testing/raw_sockets.h"
#include "stream/testing/tcp_harness.h"

namespace wharf::stream {
namespace {

using testing::Loopback4;
using testing::RawClient;

// True once `fd` is readable (an epoll fd: something is ready), within 5 s.
bool WaitReadable(int fd) {
  pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
  return poll(&p, 1, 5000) == 1;
}

// A loopback port nobody listens on.
uint16_t ClosedPort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_storage a;
  const auto len = static_cast<socklen_t>(Loopback4().ToSockaddr(&a));
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), len), 0);
  Result<transport::NetAddress> bound = transport::tcp::LocalAddressOf(fd);
  close(fd);
  return bound.ok() ? bound->port() : 0;
}

// One table with the objects it borrows.
struct Table {
  explicit Table(TcpConfig c = {}) : config(std::move(c)) {
    config.bind = Loopback4();
    table = std::make_unique<ConnectionTable>(config, &budget, nullptr, &handler, &stats, &log);
    EXPECT_TRUE(table->Listen().ok());
  }
  // Accepts until `count` connections were accepted or refused.
  std::vector<Connection*> AcceptUntil(uint64_t count) {
    std::vector<Connection*> accepted;
    while (stats.connections_accepted + stats.connections_refused < count &&
           WaitReadable(table->epoll_fd())) {
      table->AcceptAll(clock.NowNs(), &accepted);
    }
    return accepted;
  }

  const Clock& clock = SystemClock::Get();
  TcpConfig config;
  IncomingBudget budget{.limit = 1 << 20};
  testing::IgnoreFrames handler;
  TcpStats stats;
  RateLimitedLogger log{clock, kNsPerSec, 10};
  std::unique_ptr<ConnectionTable> table;
};

TEST(ConnectionTable, Listen__PicksAPortAndReportsNothingReadyUntilAClientConnects) {
  Table t;
  EXPECT_NE(t.table->local().port(), 0);
  EXPECT_GE(t.table->epoll_fd(), 0);
  EXPECT_TRUE(t.table->Ready().empty());
  RawClient client(t.table->local());
  ASSERT_TRUE(WaitReadable(t.table->epoll_fd()));
  const std::span<const epoll_event> ready = t.table->Ready();
  ASSERT_EQ(ready.size(), 1u);
  const uint64_t id = ready[0].data.u64;  // a copy: epoll_event is packed on x86-64
  EXPECT_EQ(id, ConnectionTable::kListenerId);
}

TEST(ConnectionTable, Listen__ABoundPortIsAnErrorNamingTheAddress) {
  Table first;
  TcpConfig config;
  config.bind = first.table->local();
  IncomingBudget budget;
  testing::IgnoreFrames handler;
  TcpStats stats;
  RateLimitedLogger log(SystemClock::Get(), kNsPerSec, 10);
  ConnectionTable second(config, &budget, nullptr, &handler, &stats, &log);
  const Status listened = second.Listen();
  EXPECT_FALSE(listened.ok());
  EXPECT_NE(listened.message().find("bind " + config.bind.ToString()), std::string::npos)
      << listened;
}

TEST(ConnectionTable, AcceptAll__PastTheCapClosesAndCounts) {
  TcpConfig config;
  config.max_inbound_connections = 1;
  Table t(config);
  RawClient first(t.table->local());
  RawClient second(t.table->local());
  const TimeNs before = t.clock.NowNs();
  const std::vector<Connection*> accepted = t.AcceptUntil(2);
  ASSERT_EQ(accepted.size(), 1u);
  const Connection& conn = *accepted[0];
  EXPECT_EQ(conn.state(), Connection::State::kHandshake);
  EXPECT_FALSE(conn.outbound());
  EXPECT_GE(conn.deadline_ns, before + config.peer_timeout_ns);
  EXPECT_EQ(t.table->Find(conn.id()), &conn);
  EXPECT_EQ(t.table->size(), 1u);
  EXPECT_EQ(t.table->inbound_live(), 1u);
  EXPECT_EQ(t.stats.connections_accepted, 1u);
  EXPECT_EQ(t.stats.connections_opened, 1u);
  EXPECT_EQ(t.stats.connections_refused, 1u);
  EXPECT_TRUE(second.WaitClosedByServer(5000)) << "the one past the cap is closed at once";
}

TEST(ConnectionTable, Dial__ConnectsAndCountsTheConnectionOnceEstablished) {
  Table client;
  Table server;
  int error = -1;
  Result<Connection*> dialled =
      client.table->Dial(server.table->local(), client.clock.NowNs(), &error);
  ASSERT_TRUE(dialled.ok()) << dialled.status();
  Connection& conn = **dialled;
  EXPECT_TRUE(conn.outbound());
  EXPECT_EQ(conn.remote(), server.table->local());
  if (conn.state() == Connection::State::kConnecting) {
    EXPECT_TRUE(conn.epoll_out) << "a connect reports its end as writability";
    EXPECT_EQ(client.stats.connections_opened, 0u);
    ASSERT_TRUE(WaitReadable(client.table->epoll_fd()));
    const std::span<const epoll_event> ready = client.table->Ready();
    ASSERT_EQ(ready.size(), 1u);
    const uint64_t id = ready[0].data.u64;  // a copy: epoll_event is packed on x86-64
    EXPECT_EQ(id, conn.id());
    ASSERT_TRUE(client.table->FinishConnect(conn, &error).ok());
  }
  EXPECT_EQ(conn.state(), Connection::State::kHandshake);
  EXPECT_FALSE(conn.epoll_out);
  EXPECT_EQ(client.stats.connections_opened, 1u);
  EXPECT_EQ(client.table->inbound_live(), 0u);
  EXPECT_EQ(server.AcceptUntil(1).size(), 1u);
}

TEST(ConnectionTable, Dial__ARefusedConnectIsCountedAsAFailure) {
  Table t;
  const transport::NetAddress nobody = Loopback4(ClosedPort());
  int error = 0;
  Result<Connection*> dialled = t.table->Dial(nobody, t.clock.NowNs(), &error);
  if (dialled.ok()) {
    // The kernel finishes the connect later: its outcome comes as an event.
    Connection& conn = **dialled;
    ASSERT_TRUE(WaitReadable(t.table->epoll_fd()));
    const Status connected = t.table->FinishConnect(conn, &error);
    EXPECT_FALSE(connected.ok());
    t.table->CloseConnection(conn, connected, CloseKind::kConnectFailed);
  }
  EXPECT_EQ(error, ECONNREFUSED);
  EXPECT_EQ(t.stats.connect_failures, 1u);
  EXPECT_EQ(t.stats.connections_opened, 0u);
  EXPECT_EQ(t.table->size(), 0u);
}

TEST(ConnectionTable, CloseConnection__CountsEachKindAndKeepsTheObjectUntilReap) {
  Table t;
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < 5; ++i) clients.push_back(std::make_unique<RawClient>(t.table->local()));
  std::vector<Connection*> conns = t.AcceptUntil(5);
  ASSERT_EQ(conns.size(), 5u);
  const CloseKind kinds[] = {CloseKind::kIdle, CloseKind::kRefused, CloseKind::kProtocolError,
                             CloseKind::kPeerClosed, CloseKind::kTimeout};
  for (size_t i = 0; i < conns.size(); ++i) {
    t.table->CloseConnection(*conns[i], UnavailableError("test"), kinds[i]);
    EXPECT_TRUE(conns[i]->closed());
    EXPECT_EQ(conns[i]->fd(), -1);
    EXPECT_EQ(t.table->Find(conns[i]->id()), nullptr);
  }
  // Closing again is a no-op.
  t.table->CloseConnection(*conns[0], UnavailableError("again"), CloseKind::kIdle);
  EXPECT_EQ(t.table->size(), 0u);
  EXPECT_EQ(t.table->inbound_live(), 0u);
  EXPECT_EQ(t.stats.connections_closed, 5u);
  EXPECT_EQ(t.stats.connections_idle_closed, 1u);
  EXPECT_EQ(t.stats.peers_refused, 1u);
  EXPECT_EQ(t.stats.protocol_errors, 1u);
  EXPECT_EQ(t.stats.connections_reset, 3u);  // protocol error, peer closed, timeout
  t.table->Reap();
  for (auto& client : clients) EXPECT_TRUE(client->WaitClosedByServer(5000));
}

TEST(ConnectionTable, ShutdownForTesting__OnlyThePeersSocketsOrAll) {
  Table t;
  RawClient a(t.table->local());
  RawClient b(t.table->local());
  std::vector<Connection*> conns = t.AcceptUntil(2);
  ASSERT_EQ(conns.size(), 2u);
  Peer peer;
  peer.identity = Loopback4(4242);
  conns[0]->peer = &peer;
  EXPECT_EQ(t.table->ShutdownForTesting(&peer.identity), 1u);
  EXPECT_EQ(t.table->ShutdownForTesting(nullptr), 2u);
}

}  // namespace
}  // namespace wharf::stream
