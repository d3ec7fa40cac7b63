// integration/hostile_control_test.cc: what an application can do to wharfd with
// nothing but its control socket, before or instead of attaching (so
// daemon.allowed_uids, checked at hello, does not stop it). Each test is
// one fault once found by trying (docs/security.md names them): a name that
// is not UTF-8, idle connections that held every slot, a passed file whose
// close blocks, a host name in a hello. Each checks that the rogue gets a
// clear answer, that a well-behaved pair of applications (GoodPair) carries
// on, and that wharfd's loop never stalled (its watchdog, in `wharf status`).
//
// wharfd is a child process (the real binary), as in production: in this
// process its loop would share the address space's lock with the test's
// threads, whose mappings of regions block its page faults for
// milliseconds, which a deployment never sees.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/testing/good_pair.h"
#include "daemon/testing/rogue_app.h"
#include "integration/wharfd_process.h"
#include "shm/attach_protocol.h"
#include "shm/control_socket.h"
#include "wharf/endpoint.h"

namespace wharf::integration {
namespace {

using daemon::testing::DaemonStatus;
using daemon::testing::GoodPair;
using daemon::testing::RogueApp;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

class HostileControlTest : public ::testing::Test {
 protected:
  void Start(std::vector<std::string> settings = {}) {
    auto dir = TempDir::Create("wharfd-hostile");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = std::move(*dir);
    socket_ = dir_->path() + "/wharfd.sock";
    settings.push_back("daemon.stall_threshold=10ms");
    auto d = WharfdProcess::Start({.socket = socket_, .settings = std::move(settings)});
    ASSERT_TRUE(d.ok()) << d.status();
    daemon_ = std::move(*d);
    auto pair = GoodPair::Start(socket_);
    ASSERT_TRUE(pair.ok()) << pair.status();
    good_ = std::move(*pair);
    ExpectOthersFine();
  }
  void TearDown() override {
    if (good_ != nullptr) {
      ExpectOthersFine();
      ExpectNoStall();
    }
    good_.reset();
    daemon_.reset();
    dir_.reset();
  }

  void ExpectOthersFine() {
    for (int i = 0; i < 3; ++i) {
      const auto start = steady_clock::now();
      Status s = good_->Exchange(round_++);
      ASSERT_TRUE(s.ok()) << s;
      EXPECT_LT(steady_clock::now() - start, milliseconds(500)) << "the good pair was held up";
    }
  }

  nlohmann::json DaemonJson() {
    Result<std::string> text = DaemonStatus(socket_);
    EXPECT_TRUE(text.ok()) << text.status();
    if (!text.ok()) return nlohmann::json::object();
    return nlohmann::json::parse(*text);  // strict: bad UTF-8 would throw here
  }

  // The watchdog saw no turn of the loop over 10 ms in which its thread
  // blocked. (A turn preempted for that long by other processes, which a
  // suite running two tests at once on two CPUs may cause, is counted in
  // `stalls` but is not the daemon's doing.)
  void ExpectNoStall() {
    const nlohmann::json loop = DaemonJson()["daemon"]["loop"];
    EXPECT_EQ(loop["stalls_blocked"], 0) << loop.dump();
    EXPECT_GT(loop["turns"].get<uint64_t>(), 0u);
  }

  // A raw control connection, as any process that can open the socket has
  // (retried while the listen backlog is full).
  std::unique_ptr<shm::ControlConnection> Connect() {
    shm::ConnectionLimits limits;
    limits.max_message_bytes = 1 << 20;
    Result<std::unique_ptr<shm::ControlConnection>> c = UnavailableError("not tried");
    for (int tries = 0; tries < 1000 && !c.ok(); ++tries) {
      c = shm::ControlConnection::Connect(socket_, SystemClock::Get(), limits);
      if (!c.ok()) std::this_thread::sleep_for(milliseconds(1));
    }
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? std::move(*c) : nullptr;
  }

  std::unique_ptr<TempDir> dir_;
  std::string socket_;
  std::unique_ptr<WharfdProcess> daemon_;
  std::unique_ptr<GoodPair> good_;
  int round_ = 0;
};

// ---------------------------------------------------------------- names

TEST_F(HostileControlTest, AProgramNameThatIsNotUtf8IsShownEscaped) {
  Start();
  RogueApp::Options latin1;
  latin1.program = "caf\xe9";
  auto a = RogueApp::Attach(socket_, latin1);
  ASSERT_TRUE(a.ok()) << a.status();
  RogueApp::Options cut;
  cut.program = std::string(63, 'n') + "\xc3\xa9";  // the 64-byte cut fell inside the é
  auto b = RogueApp::Attach(socket_, cut);
  ASSERT_TRUE(b.ok()) << b.status();
  RogueApp::Options escape;
  escape.program = "\x1b]0;owned\x07top";  // a terminal title escape
  auto c = RogueApp::Attach(socket_, escape);
  ASSERT_TRUE(c.ok()) << c.status();

  std::vector<std::string> programs;
  const nlohmann::json all = DaemonJson();
  for (const auto& app : all["applications"]) {
    programs.push_back(app["program"].get<std::string>());
  }
  SCOPED_TRACE(all.dump());
  EXPECT_NE(std::find(programs.begin(), programs.end(), "caf\\xe9"), programs.end());
  EXPECT_NE(std::find(programs.begin(), programs.end(), std::string(63, 'n')), programs.end());
  EXPECT_NE(std::find(programs.begin(), programs.end(), "\\x1b]0;owned\\x07top"), programs.end());
}

TEST_F(HostileControlTest, AnEndpointNameThatIsNotUtf8IsRefusedAtHello) {
  Start();
  for (const std::string& address :
       std::vector<std::string>{"homa://0.0.0.0:0/caf\xe9", "homa://0.0.0.0:0/\x1b[2J",
                                "homa://0.0.0.0:0/" + std::string(63, 'n') + "\xc3"}) {
    RogueApp::Options o;
    o.address = address;
    auto rogue = RogueApp::Attach(socket_, o);
    ASSERT_FALSE(rogue.ok());
    EXPECT_EQ(rogue.status().code(), StatusCode::kInvalidArgument) << rogue.status();
    EXPECT_NE(rogue.status().message().find("hello address"), std::string::npos)
        << rogue.status();
  }
  EXPECT_EQ(DaemonJson()["daemon"]["attaches_refused"], 3);
}

// ---------------------------------------------------- idle connections

TEST_F(HostileControlTest, IdleConnectionsNeverLockANewcomerOut) {
  // Status answers are not what this test limits (the next one does).
  Start({"daemon.hello_timeout=1s", "daemon.status_requests_per_second=10000"});
  // As in the report: hundreds of connections that each send one wake-up
  // or one status request and then nothing, plus some that send nothing.
  std::vector<std::unique_ptr<shm::ControlConnection>> idle;
  int status_requests = 0;
  for (int i = 0; i < 300; ++i) {
    idle.push_back(Connect());
    ASSERT_NE(idle.back(), nullptr);
    if (i % 3 == 0) (void)idle.back()->Send(shm::EncodeRequest(shm::ControlType::kWake));
    if (i % 3 == 1) {
      (void)idle.back()->Send(shm::EncodeRequest(shm::ControlType::kStatusRequest));
      ++status_requests;
    }
    if (i % 30 == 29) std::this_thread::sleep_for(milliseconds(2));  // let wharfd accept
  }
  // A newcomer attaches at once, the usual way.
  const auto start = steady_clock::now();
  auto newcomer = Endpoint::Open({.address = "homa://0.0.0.0:0/newcomer",
                                  .hosting = Hosting::kManaged,
                                  .daemon_socket = socket_});
  ASSERT_TRUE(newcomer.ok()) << newcomer.status();
  EXPECT_LT(steady_clock::now() - start, milliseconds(500));

  nlohmann::json d = DaemonJson()["daemon"];
  EXPECT_LE(d["unattached_connections"].get<uint64_t>(), 16u) << "daemon.max_unattached_per_uid";
  EXPECT_GT(d["connections_evicted"].get<uint64_t>(), 0u);
  // Each idle connection goes at its hello deadline, whatever it sent. (A
  // status query is an unattached connection too, while it is answered.)
  const auto until = steady_clock::now() + std::chrono::seconds(5);
  do {
    std::this_thread::sleep_for(milliseconds(100));
    d = DaemonJson()["daemon"];
  } while (steady_clock::now() < until && d["unattached_connections"].get<uint64_t>() > 1);
  EXPECT_LE(d["unattached_connections"].get<uint64_t>(), 1u) << "only the status query's own";
  EXPECT_GT(d["hello_timeouts"].get<uint64_t>(), 0u);
  (void)status_requests;
}

TEST_F(HostileControlTest, AWakeUpBeforeHelloEndsTheConnection) {
  Start();
  auto c = Connect();
  ASSERT_TRUE(c->Send(shm::EncodeRequest(shm::ControlType::kWake)).ok());
  // wharfd closes it at once: EOF within a short wait.
  const auto until = steady_clock::now() + std::chrono::seconds(2);
  bool closed = false;
  while (!closed && steady_clock::now() < until) {
    Result<std::optional<shm::ControlMessage>> got = c->Receive();
    closed = !got.ok();
    if (!closed) std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_TRUE(closed);
}

TEST_F(HostileControlTest, StatusRequestsOverTheRateAreRefusedNotServed) {
  Start({"daemon.status_requests_per_second=5"});
  int answered = 0;
  int refused = 0;
  const auto began = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i) {
    Result<std::string> text = DaemonStatus(socket_);
    if (text.ok()) {
      ++answered;
    } else {
      EXPECT_EQ(text.status().code(), StatusCode::kResourceExhausted) << text.status();
      EXPECT_NE(text.status().message().find("daemon.status_requests_per_second"),
                std::string::npos);
      ++refused;
    }
  }
  // The bucket holds 5 and refills 5 per second: however slowly this machine
  // (or a sanitizer) sent the 20, no more than that may have been answered.
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  EXPECT_GE(answered, 5);
  EXPECT_LE(answered, 5 + static_cast<int>(5 * seconds) + 1) << "in " << seconds << " s";
  EXPECT_GE(refused, 1);
  EXPECT_EQ(answered + refused, 20);
  std::this_thread::sleep_for(milliseconds(1100));  // the bucket refills (for TearDown)
}

// ------------------------------------------------------ passed files

// A TCP connection nobody reads, its send queue full, with a linger of
// `linger_s` seconds: the last close() of it blocks that long.
struct LingeringSocket {
  UniqueFd listener;
  UniqueFd client;
};

LingeringSocket MakeLingeringSocket(int linger_s) {
  LingeringSocket s;
  s.listener = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  EXPECT_EQ(::bind(s.listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  EXPECT_EQ(::listen(s.listener.get(), 1), 0);
  EXPECT_EQ(::getsockname(s.listener.get(), reinterpret_cast<sockaddr*>(&addr), &len), 0);
  s.client = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  const int small = 4096;
  ::setsockopt(s.client.get(), SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  (void)::connect(s.client.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  std::this_thread::sleep_for(milliseconds(20));  // the handshake, on loopback
  char chunk[4096] = {};
  while (::send(s.client.get(), chunk, sizeof chunk, MSG_NOSIGNAL) > 0) {
  }
  const linger l{.l_onoff = 1, .l_linger = linger_s};
  EXPECT_EQ(::setsockopt(s.client.get(), SOL_SOCKET, SO_LINGER, &l, sizeof l), 0);
  return s;
}

// Sends one byte with `fd` attached over `c`'s socket, by hand (the
// connection's own Send would do, but this is what any process can do).
int SendFd(int socket, int fd) {
  char data = 'x';
  iovec iov{.iov_base = &data, .iov_len = 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  return ::sendmsg(socket, &msg, MSG_NOSIGNAL) == 1 ? 0 : errno;
}

TEST_F(HostileControlTest, APassedFileIsRefusedByTheKernel) {
  Start();
  if (!DaemonJson()["daemon"]["kernel_refuses_fds"].get<bool>()) {
    GTEST_SKIP() << "kernel without SO_PASSRIGHTS (before 6.16): see the next test";
  }
  LingeringSocket s = MakeLingeringSocket(3);
  auto c = Connect();
  EXPECT_EQ(SendFd(c->fd(), s.client.get()), EPERM);
}

TEST_F(HostileControlTest, APassedLingeringSocketNeverStallsTheLoop) {
  // As on a kernel that cannot refuse passed files: wharfd receives them,
  // and closing them (or a connection still holding some) must not block.
  Start({"daemon.refuse_passed_fds=false"});
  ASSERT_FALSE(DaemonJson()["daemon"]["kernel_refuses_fds"].get<bool>());
  // Passed directly, before hello, and then the sender lets go of it.
  LingeringSocket direct = MakeLingeringSocket(3);
  auto first = Connect();
  ASSERT_EQ(SendFd(first->fd(), direct.client.get()), 0);
  direct.client.Reset();
  // Passed inside a Unix socket's queue: closing that socket drops the
  // queue, whose last reference to the TCP socket then closes, lingering.
  LingeringSocket nested = MakeLingeringSocket(3);
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair), 0);
  ASSERT_EQ(SendFd(pair[0], nested.client.get()), 0);
  nested.client.Reset();
  ::close(pair[0]);
  auto second = Connect();
  ASSERT_EQ(SendFd(second->fd(), pair[1]), 0);
  ::close(pair[1]);
  // Both connections are closed by wharfd (fds from an application are a
  // protocol error), while the good pair keeps going.
  for (int i = 0; i < 10; ++i) ExpectOthersFine();
  const auto until = steady_clock::now() + std::chrono::seconds(2);
  while (steady_clock::now() < until && DaemonJson()["daemon"]["fds_closed_off_loop"] < 4) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_GE(DaemonJson()["daemon"]["fds_closed_off_loop"].get<uint64_t>(), 2u);
}

// ------------------------------------------------------------ lookups

TEST_F(HostileControlTest, AHostNameInAHelloIsRefusedWithoutALookup) {
  Start();
  RogueApp::Options o;
  // .invalid never resolves; a lookup of it would still ask the system's
  // resolver (seconds with an unreachable DNS server).
  o.address = "homa://wharf-slow-lookup.invalid:0/x";
  const auto start = steady_clock::now();
  auto rogue = RogueApp::Attach(socket_, o);
  ASSERT_FALSE(rogue.ok());
  EXPECT_EQ(rogue.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(rogue.status().message().find("numeric addresses only"), std::string::npos)
      << rogue.status();
  EXPECT_LT(steady_clock::now() - start, milliseconds(500));
}

TEST_F(HostileControlTest, LibwharfResolvesANameBeforeItsHello) {
  Start();
  auto e = Endpoint::Open({.address = "homa://localhost:0/by-name",
                           .hosting = Hosting::kManaged,
                           .daemon_socket = socket_});
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_NE((*e)->address().find("/by-name"), std::string::npos) << (*e)->address();
}

}  // namespace
}  // namespace wharf::integration
