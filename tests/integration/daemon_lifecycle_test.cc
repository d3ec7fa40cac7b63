// The daemon's lifecycle guarantees between real processes (docs/daemon.md,
// "Lifecycle"): a `wharfd` child on a control socket in a temporary
// directory and a fixed loopback homa:// port, applications attached to it
// in managed mode (`wharf serve` / `wharf ping` children, and this process).
//
// - An application killed with SIGKILL mid-transfer, server or client side:
//   within 1 s wharfd has aborted its RPCs, told its peers (a waiting
//   client's calls fail with kUnavailable, a server's held requests are
//   withdrawn), and freed it: its status entry is gone, applications_detached
//   counts it, wharfd's open fds are back to what they were before it
//   attached and its region is no longer mapped.
// - wharfd stopped (SIGTERM, SIGKILL) under a blocked call: the call fails
//   with kUnavailable at once, new calls too; a wharfd started again on the
//   same socket and port gets both applications back by themselves, and the
//   server's methods are served again at the same address.
// - A SIGKILLed wharfd's socket file is replaced by the next wharfd; a
//   second wharfd on a live socket refuses to start and says why.
//
// Conditions that are other processes' states are polled with a deadline;
// nothing sleeps for synchronisation. Every child is SIGKILLed and reaped,
// and the directory removed, however a test ends.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "client/testing/server_thread.h"
#include "integration/wharf_process.h"
#include "integration/wharfd_process.h"
#include "netns/subprocess.h"
#include "wharf/endpoint.h"

namespace wharf::integration {
namespace {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;

constexpr uint32_t kEchoMethod = 1;  // `wharf serve`'s echo
// How soon a dead application must be gone from wharfd, and its peers told.
constexpr auto kCleanupBound = 1s;
// Large enough to be spread over many packets and pages of the heap.
constexpr size_t kLargeBytes = 1'000'000;
constexpr int kCallsInFlight = 4;

long long Ms(std::chrono::nanoseconds d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

DurationNs Left(SteadyClock::time_point deadline) {
  return std::max<DurationNs>(0, (deadline - SteadyClock::now()).count());
}

// Lines of wharfd's maps that map application `id`'s region.
std::vector<std::string> RegionMappings(pid_t daemon, uint64_t id) {
  const std::string name = "wharf-shm:wharfd-app-" + std::to_string(id);
  std::vector<std::string> exact;
  Result<std::vector<std::string>> lines = MapsMatching(daemon, name);
  if (!lines.ok()) return {"(" + lines.status().ToString() + ")"};
  for (const std::string& line : *lines) {
    const size_t end = line.find(name) + name.size();
    if (end == line.size() || line[end] == ' ') exact.push_back(line);
  }
  return exact;
}

// The /proc/<pid>/net line of socket `inode` ("udp: 0100007F:A1B2 ..."), or "".
std::string SocketLine(pid_t pid, const std::string& inode) {
  for (const char* table : {"udp", "udp6", "tcp", "tcp6", "unix"}) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/net/" + table);
    std::string line;
    while (std::getline(in, line)) {
      if (line.find(" " + inode + " ") != std::string::npos ||
          line.ends_with(" " + inode)) {
        return std::string(table) + ": " + line;
      }
    }
  }
  return "";
}

// What wharfd's fds point at, sockets resolved, for failure messages.
std::string FdListing(pid_t pid) {
  std::string out;
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    std::error_code rec;
    const std::string target = std::filesystem::read_symlink(e.path(), rec).string();
    out += e.path().filename().string() + " -> " + target;
    if (target.starts_with("socket:[")) {
      out += "  " + SocketLine(pid, target.substr(8, target.size() - 9));
    }
    out += "\n";
  }
  return out;
}

// wharfd's fds that belong to applications or the daemon itself: all but
// the homa:// socket's hot-peer socket (wharfd_process.h), which follows
// the traffic, not the applications. -1 if /proc cannot tell.
int DaemonFds(pid_t daemon) {
  Result<int> all = CountOpenFds(daemon);
  Result<int> hot = CountConnectedUdpSockets(daemon);
  return all.ok() && hot.ok() ? *all - *hot : -1;
}

uint64_t U(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_number_unsigned() ? j[key].get<uint64_t>() : 0;
}

class DaemonLifecycleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::Create("wharfd-life");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = std::move(*dir);
    auto ports = PickFreeUdpPorts(1);
    ASSERT_TRUE(ports.ok()) << ports.status();
    options_ = {.socket = dir_->path() + "/wharfd.sock", .homa_port = (*ports)[0]};
  }

  std::unique_ptr<WharfdProcess> StartDaemon() {
    auto d = WharfdProcess::Start(options_);
    EXPECT_TRUE(d.ok()) << d.status();
    return d.ok() ? std::move(*d) : nullptr;
  }

  // This process, attached as an application.
  std::unique_ptr<Endpoint> Attach() {
    auto ep = Endpoint::Open({.address = "homa://127.0.0.1:0",
                              .hosting = Hosting::kManaged,
                              .daemon_socket = options_.socket});
    EXPECT_TRUE(ep.ok()) << ep.status();
    return ep.ok() ? std::move(*ep) : nullptr;
  }

  std::vector<std::string> ManagedFlags() const {
    return {"--mode", "managed", "--socket", options_.socket};
  }

  std::unique_ptr<ServeProcess> StartServer(std::vector<std::string> args) {
    std::vector<std::string> all = ManagedFlags();
    all.insert(all.end(), args.begin(), args.end());
    auto s = ServeProcess::Start({.listen = "homa://127.0.0.1:0", .args = std::move(all)});
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? std::move(*s) : nullptr;
  }

  // Polls wharfd's status until `want` holds for it; the last status read.
  nlohmann::json StatusWhen(const std::function<bool(const nlohmann::json&)>& want,
                            DurationNs timeout_ns, const std::string& what) {
    nlohmann::json last;
    Status error;
    const bool held = PollUntil(
        [&] {
          Result<nlohmann::json> s = QueryStatus(options_.socket);
          if (!s.ok()) {
            error = s.status();
            return false;
          }
          last = std::move(*s);
          return want(last);
        },
        timeout_ns, 5 * kNsPerMs);
    EXPECT_TRUE(held) << "wharfd's status never showed " << what << "; last: " << last.dump()
                      << " " << error;
    return last;
  }

  // Waits (bounded by kCleanupBound from `since`) until wharfd holds exactly
  // `fds` descriptors and maps nothing of application `id`.
  void ExpectFreedWithin(pid_t daemon, int fds, uint64_t id, SteadyClock::time_point since,
                         const std::string& fds_before = "") {
    int now_fds = -1;
    std::vector<std::string> maps;
    const bool freed = PollUntil(
        [&] {
          now_fds = DaemonFds(daemon);
          maps = RegionMappings(daemon, id);
          return now_fds == fds && maps.empty();
        },
        Left(since + kCleanupBound), kNsPerMs);
    EXPECT_TRUE(freed) << "within " << Ms(kCleanupBound) << " ms wharfd still had " << now_fds
                       << " fds, the hot-peer socket not counted (before the application: "
                       << fds << ")\n"
                       << FdListing(daemon) << "before:\n" << fds_before << "and mapped:\n"
                       << ::testing::PrintToString(maps);
  }

  std::unique_ptr<TempDir> dir_;  // declared first: removed last
  WharfdOptions options_;
};

// ------------------------------------------------ an application dies

// The server is `wharf serve`, killed; the client this process, attached to
// the same wharfd (its calls go through the daemon's local switch) or
// embedded (over UDP to wharfd's socket, as a client on another host).
class KilledServerTest : public DaemonLifecycleTest,
                         public ::testing::WithParamInterface<Hosting> {};

TEST_P(KilledServerTest, ItsClientsCallsFailAndItIsFreedWithinOneSecond) {
  auto daemon = StartDaemon();
  ASSERT_NE(daemon, nullptr);
  std::unique_ptr<Endpoint> client;
  if (GetParam() == Hosting::kManaged) {
    client = Attach();
  } else {
    auto ep = Endpoint::Open({.address = "homa://127.0.0.1:0", .hosting = Hosting::kEmbedded});
    ASSERT_TRUE(ep.ok()) << ep.status();
    client = std::move(*ep);
  }
  ASSERT_NE(client, nullptr);
  // Its transfers go on while this thread looks at wharfd.
  testing::ServerThread driving(*client);
  ASSERT_TRUE(WaitUntilIdle(daemon->pid()));
  const int baseline = DaemonFds(daemon->pid());
  ASSERT_GT(baseline, 0);
  const std::string baseline_fds = FdListing(daemon->pid());

  // A server that holds every request for 20 s, then the client's large
  // calls, all delivered and held when the server dies.
  auto server = StartServer({"--handler-delay", "20000"});
  ASSERT_NE(server, nullptr);
  const pid_t server_pid = server->process().pid();
  // And a connection, echoing (so the server has accepted it). In managed
  // mode Listen() only queues its command: wharfd may take it a moment after
  // `wharf serve` says it listens, so a refusal for "no Listen" is retried.
  Result<std::unique_ptr<Connection>> conn = client->Connect(server->address());
  const auto listen_deadline = SteadyClock::now() + 5s;
  while (!conn.ok() && conn.status().message().find("no Listen") != std::string_view::npos &&
         SteadyClock::now() < listen_deadline) {
    conn = client->Connect(server->address());
  }
  ASSERT_TRUE(conn.ok()) << conn.status();
  ASSERT_TRUE((*conn)->Send(Buffer::Copy("hello")).ok());
  Result<Buffer> echo = (*conn)->Recv(10s);
  ASSERT_TRUE(echo.ok()) << echo.status();
  EXPECT_EQ(echo->AsStringView(), "hello");
  std::vector<Completion> calls;
  for (int i = 0; i < kCallsInFlight; ++i) {
    calls.push_back(client->ICall(server->address(), kEchoMethod, PatternBuffer(kLargeBytes, i),
                                  {.deadline = 30s}));
  }
  nlohmann::json before = StatusWhen(
      [&](const nlohmann::json& s) {
        // Every request delivered, and held (its inflight also counts the
        // receive its echo loop keeps posted on the connection).
        const nlohmann::json* app = FindApplication(s, server_pid);
        return app != nullptr && U(*app, "bytes_received") >= kCallsInFlight * kLargeBytes &&
               U(*app, "inflight") >= kCallsInFlight;
      },
      10 * kNsPerSec, "the server holding every call");
  const nlohmann::json* app = FindApplication(before, server_pid);
  ASSERT_NE(app, nullptr);
  const uint64_t id = U(*app, "id");
  ASSERT_FALSE(RegionMappings(daemon->pid(), id).empty()) << "the region is not where expected";
  ASSERT_GT(DaemonFds(daemon->pid()), baseline);

  const auto killed = SteadyClock::now();
  server->process().Kill();

  for (int i = 0; i < kCallsInFlight; ++i) {
    Status s = calls[i].Wait(5s);
    EXPECT_EQ(s.code(), StatusCode::kUnavailable) << "call " << i << ": " << s;
  }
  Result<Buffer> closed = (*conn)->Recv(5s);
  EXPECT_EQ(closed.status().code(), StatusCode::kUnavailable) << closed.status();
  const auto told = SteadyClock::now() - killed;
  EXPECT_LT(told, kCleanupBound) << "the client heard after " << Ms(told) << " ms";
  ExpectFreedWithin(daemon->pid(), baseline, id, killed, baseline_fds);

  nlohmann::json after = *QueryStatus(options_.socket);
  EXPECT_EQ(FindApplication(after, server_pid), nullptr) << after.dump();
  EXPECT_EQ(U(after["daemon"], "applications_detached"),
            U(before["daemon"], "applications_detached") + 1);
  if (GetParam() == Hosting::kManaged) {
    const nlohmann::json* me = FindApplication(after, ::getpid());
    ASSERT_NE(me, nullptr) << after.dump();
    EXPECT_EQ(U(*me, "inflight"), 0u) << me->dump();
  }
  // The survivor goes on: a call to the dead server's address fails, fast.
  const auto start = SteadyClock::now();
  Result<Buffer> late = client->Call(server->address(), kEchoMethod, Buffer::Copy("x"),
                                     {.deadline = 5s});
  EXPECT_FALSE(late.ok());
  EXPECT_LT(SteadyClock::now() - start, 4s) << late.status();
}

INSTANTIATE_TEST_SUITE_P(Clients, KilledServerTest,
                         ::testing::Values(Hosting::kManaged, Hosting::kEmbedded),
                         [](const ::testing::TestParamInfo<Hosting>& info) {
                           return std::string(info.param == Hosting::kManaged ? "Managed"
                                                                              : "Embedded");
                         });

// The client is `wharf ping` with large calls, killed; the server this
// process, attached to the same wharfd or embedded (over UDP: the client's
// withdrawals must cross the network).
class KilledClientTest : public DaemonLifecycleTest,
                         public ::testing::WithParamInterface<Hosting> {};

TEST_P(KilledClientTest, ItsCallsAreWithdrawnAndItIsFreedWithinOneSecond) {
  const bool managed = GetParam() == Hosting::kManaged;
  auto daemon = StartDaemon();
  ASSERT_NE(daemon, nullptr);
  std::unique_ptr<Endpoint> server;
  if (managed) {
    server = Attach();
  } else {
    auto ep = Endpoint::Open({.address = "homa://127.0.0.1:0", .hosting = Hosting::kEmbedded});
    ASSERT_TRUE(ep.ok()) << ep.status();
    server = std::move(*ep);
  }
  ASSERT_NE(server, nullptr);
  std::mutex mu;
  std::vector<Responder> held;  // guarded by mu
  ASSERT_TRUE(server
                  ->ServeAsync(kEchoMethod,
                               [&](const RpcContext&, Buffer, Responder r) {
                                 std::lock_guard<std::mutex> lock(mu);
                                 held.push_back(std::move(r));
                               })
                  .ok());
  auto held_count = [&] {
    std::lock_guard<std::mutex> lock(mu);
    return held.size();
  };
  testing::ServerThread running(*server);
  ASSERT_TRUE(WaitUntilIdle(daemon->pid()));
  const int baseline = DaemonFds(daemon->pid());
  ASSERT_GT(baseline, 0);
  const std::string baseline_fds = FdListing(daemon->pid());

  std::vector<std::string> argv = {WharfCliPath(), "ping", server->address(), "--size",
                                   std::to_string(kLargeBytes), "--concurrency",
                                   std::to_string(kCallsInFlight), "--count", "1000000",
                                   "--timeout", "30", "--quiet"};
  for (const std::string& f : ManagedFlags()) argv.push_back(f);
  auto client = netns::Subprocess::Start(argv, {.label = "wharf ping"});
  ASSERT_TRUE(client.ok()) << client.status();
  const pid_t client_pid = (*client)->pid();
  nlohmann::json before = StatusWhen(
      [&](const nlohmann::json& s) {
        const nlohmann::json* app = FindApplication(s, client_pid);
        return held_count() == kCallsInFlight && app != nullptr &&
               U(*app, "inflight") == kCallsInFlight;
      },
      10 * kNsPerSec, "the client's calls held by the server");
  const nlohmann::json* app = FindApplication(before, client_pid);
  ASSERT_NE(app, nullptr) << (*client)->Stderr();
  const uint64_t id = U(*app, "id");
  ASSERT_FALSE(RegionMappings(daemon->pid(), id).empty());

  const auto killed = SteadyClock::now();
  (*client)->Kill();

  // The server is told: every held call is withdrawn.
  const bool withdrawn = PollUntil(
      [&] {
        std::lock_guard<std::mutex> lock(mu);
        for (const Responder& r : held) {
          if (!r.cancelled()) return false;
        }
        return true;
      },
      Left(killed + kCleanupBound), kNsPerMs);
  EXPECT_TRUE(withdrawn) << "the server still had calls of the dead client after "
                         << Ms(kCleanupBound) << " ms";
  ExpectFreedWithin(daemon->pid(), baseline, id, killed, baseline_fds);

  nlohmann::json after = *QueryStatus(options_.socket);
  EXPECT_EQ(FindApplication(after, client_pid), nullptr) << after.dump();
  EXPECT_EQ(U(after["daemon"], "applications_detached"),
            U(before["daemon"], "applications_detached") + 1);
  if (!managed) {
    // An embedded server's late answers go to a client that is gone.
    std::lock_guard<std::mutex> lock(mu);
    for (Responder& r : held) EXPECT_TRUE(r.Respond(Buffer::Copy("late")).ok());
    held.clear();
    return;
  }
  const nlohmann::json* me = FindApplication(after, ::getpid());
  ASSERT_NE(me, nullptr) << after.dump();
  EXPECT_EQ(U(*me, "inflight"), 0u) << "wharfd still counts the withdrawn calls: " << me->dump();

  // Answering a withdrawn call is no error: the answer is dropped.
  {
    std::lock_guard<std::mutex> lock(mu);
    for (Responder& r : held) EXPECT_TRUE(r.Respond(Buffer::Copy("late")).ok());
    held.clear();
  }
  nlohmann::json answered = StatusWhen(
      [&](const nlohmann::json& s) {
        const nlohmann::json* a = FindApplication(s, ::getpid());
        return a != nullptr && U(*a, "commands") >= U(*me, "commands") + kCallsInFlight;
      },
      5 * kNsPerSec, "the late answers taken");
  const nlohmann::json* a = FindApplication(answered, ::getpid());
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(U(*a, "bad_commands"), 0u) << a->dump();
  EXPECT_EQ(U(*a, "late_answers"), static_cast<uint64_t>(kCallsInFlight)) << a->dump();
  EXPECT_EQ(U(*a, "inflight"), 0u) << a->dump();
}

INSTANTIATE_TEST_SUITE_P(Servers, KilledClientTest,
                         ::testing::Values(Hosting::kManaged, Hosting::kEmbedded),
                         [](const ::testing::TestParamInfo<Hosting>& info) {
                           return std::string(info.param == Hosting::kManaged ? "Managed"
                                                                              : "Embedded");
                         });

// ---------------------------------------------- wharfd stops and returns

class DaemonRestartTest : public DaemonLifecycleTest,
                          public ::testing::WithParamInterface<int> {};

TEST_P(DaemonRestartTest, CallsFailWhileDownAndApplicationsAttachAgain) {
  const int signo = GetParam();
  auto daemon = StartDaemon();
  ASSERT_NE(daemon, nullptr);
  // Each echo is answered after 2 s: long enough to see it held and stop
  // wharfd under it. Each status look is a `wharf status` process, which
  // took 70 ms here and over 300 ms under ASan (a 300 ms delay then let the
  // answer come first).
  auto server = StartServer({"--handler-delay", "2000"});
  ASSERT_NE(server, nullptr);
  const pid_t server_pid = server->process().pid();
  auto client = Attach();
  ASSERT_NE(client, nullptr);
  const std::string address = server->address();

  Completion blocked = client->ICall(address, kEchoMethod, PatternBuffer(1000, 1),
                                     {.deadline = 30s});
  // Only once the server holds it is the call blocked in the server.
  StatusWhen(
      [&](const nlohmann::json& s) {
        const nlohmann::json* app = FindApplication(s, server_pid);
        // Its requests, not its operations: `wharf serve` keeps an Accept
        // posted too.
        return app != nullptr && U(*app, "requests_in_service") == 1;
      },
      10 * kNsPerSec, "the server holding the call");
  const auto stopped = SteadyClock::now();
  if (signo == SIGTERM) {
    ASSERT_TRUE(daemon->Stop().ok());
    EXPECT_FALSE(std::filesystem::exists(options_.socket)) << "a clean stop removes the socket";
  } else {
    daemon->Kill();
  }
  Status s = blocked.Wait(5s);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s;
  EXPECT_LT(SteadyClock::now() - stopped, kCleanupBound);

  // While it is down: calls fail at once, a new attach fails.
  const auto start = SteadyClock::now();
  Result<Buffer> down = client->Call(address, kEchoMethod, Buffer::Copy("x"), {.deadline = 5s});
  EXPECT_EQ(down.status().code(), StatusCode::kUnavailable) << down.status();
  EXPECT_LT(SteadyClock::now() - start, 500ms);
  auto newcomer = Endpoint::Open({.hosting = Hosting::kManaged, .daemon_socket = options_.socket});
  EXPECT_EQ(newcomer.status().code(), StatusCode::kUnavailable) << newcomer.status();

  // Back on the same socket and port: both attach again by themselves (this
  // process as its endpoint makes progress; `wharf serve` in its loop).
  daemon = StartDaemon();
  ASSERT_NE(daemon, nullptr);
  StatusWhen(
      [&](const nlohmann::json& st) {
        (void)client->Poll();
        return FindApplication(st, server_pid) != nullptr &&
               FindApplication(st, ::getpid()) != nullptr;
      },
      10 * kNsPerSec, "both applications attached again");
  Result<Buffer> again = client->Call(address, kEchoMethod, PatternBuffer(50'000, 2),
                                      {.deadline = 10s});
  ASSERT_TRUE(again.ok()) << again.status() << "\nserver stderr: " << server->process().Stderr();
  EXPECT_TRUE(MatchesPattern(*again, 50'000, 2));
}

INSTANTIATE_TEST_SUITE_P(Signals, DaemonRestartTest, ::testing::Values(SIGTERM, SIGKILL),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::string(info.param == SIGTERM ? "Sigterm" : "Sigkill");
                         });

// ------------------------------------------------------- the socket file

TEST_F(DaemonLifecycleTest, StaleSocketIsReplacedAndALiveOneIsKept) {
  auto crashed = StartDaemon();
  ASSERT_NE(crashed, nullptr);
  crashed->Kill();
  struct stat st {};
  ASSERT_EQ(::lstat(options_.socket.c_str(), &st), 0) << "SIGKILL leaves the socket file";
  ASSERT_TRUE(S_ISSOCK(st.st_mode));

  auto daemon = StartDaemon();  // the same socket and ports
  ASSERT_NE(daemon, nullptr);
  auto app = Attach();
  ASSERT_NE(app, nullptr);

  // A second daemon with the same configuration refuses, naming the socket,
  // and leaves the live one alone.
  Result<netns::CommandOutput> second = RunWharfd(options_, 10 * kNsPerSec);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_NE(second->exit_code, 0);
  EXPECT_NE(second->stderr_text.find("already listening on"), std::string::npos)
      << second->stderr_text;
  EXPECT_NE(second->stderr_text.find(options_.socket), std::string::npos) << second->stderr_text;
  Result<bool> listens = ListensOn(daemon->pid(), options_.socket);
  EXPECT_TRUE(listens.ok() && *listens);
  Result<nlohmann::json> status = QueryStatus(options_.socket);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(U((*status)["daemon"], "pid"), static_cast<uint64_t>(daemon->pid()));
  EXPECT_NE(FindApplication(*status, ::getpid()), nullptr);
}

}  // namespace
}  // namespace wharf::integration
