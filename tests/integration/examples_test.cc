// The examples as separate processes: the barrier example as a group of four
// (all pass five rounds; with a member missing the others time out), and
// rpc_echo's --server and --client modes in two processes.
#include <gtest/gtest.h>
#include <signal.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "integration/wharf_process.h"
#include "netns/status_testing.h"
#include "netns/subprocess.h"

namespace wharf::integration {
namespace {

constexpr int kMembers = 4;
constexpr int kRounds = 5;

// Member addresses on free loopback ports, in rank order.
std::vector<std::string> PickMembers() {
  auto ports = PickFreeUdpPorts(kMembers);
  EXPECT_TRUE(ports.ok()) << ports.status();
  std::vector<std::string> members;
  if (ports.ok()) {
    for (uint16_t p : *ports) members.push_back("homa://127.0.0.1:" + std::to_string(p));
  }
  return members;
}

std::string Join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ",") + p;
  return out;
}

// Starts rank `rank` of the barrier example and waits for its endpoint to be
// open (its "rank R of N at ..." line). Null if it did not open; `port_taken`
// says whether that was because its port was taken meanwhile.
std::unique_ptr<netns::Subprocess> StartMember(int rank, const std::vector<std::string>& members,
                                               const std::string& timeout_s, bool* port_taken) {
  auto p = netns::Subprocess::Start(
      {WHARF_BARRIER_EXAMPLE_PATH, "--rank", std::to_string(rank), "--members", Join(members),
       "--rounds", std::to_string(kRounds), "--timeout", timeout_s},
      {.label = "barrier rank " + std::to_string(rank)});
  EXPECT_TRUE(p.ok()) << p.status();
  if (!p.ok()) return nullptr;
  auto ready =
      (*p)->WaitForStdoutLine(" of " + std::to_string(members.size()) + " at ", kStartTimeoutNs);
  if (ready.ok()) return std::move(p).value();
  *port_taken = (*p)->Stderr().find("Address already in use") != std::string::npos;
  EXPECT_TRUE(*port_taken) << ready.status() << " stderr: " << (*p)->Stderr();
  return nullptr;
}

// Starts ranks 0 .. `ranks`-1 (coordinator first: a member whose report
// finds no one listening would fail with kUnavailable) on free loopback
// ports. The ports are free when picked but another test may take one
// before its member binds it: then the whole group starts again on new
// ports (at most 3 times). Empty if it could not start.
std::vector<std::unique_ptr<netns::Subprocess>> StartGroup(
    int ranks, const std::function<std::string(int)>& timeout_s) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    std::vector<std::string> members = PickMembers();
    if (members.size() != size_t{kMembers}) return {};
    std::vector<std::unique_ptr<netns::Subprocess>> procs;
    bool port_taken = false;
    for (int rank = 0; rank < ranks; ++rank) {
      procs.push_back(StartMember(rank, members, timeout_s(rank), &port_taken));
      if (procs.back() == nullptr) break;
    }
    if (procs.back() != nullptr) return procs;
    for (auto& p : procs) {
      if (p != nullptr) p->Kill();
    }
    if (!port_taken) return {};
  }
  ADD_FAILURE() << "a member's port was taken three times";
  return {};
}

TEST(BarrierExample, FourProcessesPassFiveRounds) {
  std::vector<std::unique_ptr<netns::Subprocess>> procs =
      StartGroup(kMembers, [](int) { return "15"; });
  ASSERT_EQ(procs.size(), size_t{kMembers});
  for (int rank = 0; rank < kMembers; ++rank) {
    auto code = procs[rank]->WaitFor(30 * kNsPerSec);
    ASSERT_TRUE(code.ok()) << code.status();
    EXPECT_EQ(*code, 0) << "rank " << rank << ": " << procs[rank]->Stderr();
    for (int round = 0; round < kRounds; ++round) {
      std::string line = "rank " + std::to_string(rank) + " passed round " + std::to_string(round);
      EXPECT_NE(procs[rank]->Stdout().find(line + "\n"), std::string::npos)
          << "missing '" << line << "' in:\n"
          << procs[rank]->Stdout();
    }
  }
}

// Rank 3 never starts: the barrier cannot complete, and the three present
// members fail their first round with DEADLINE_EXCEEDED after their timeout
// (not later, not with another error). The coordinator waits longer (2 s)
// than the others (1 s): when it gives up it exits, and a member still
// waiting on it would rightly see it die (UNAVAILABLE) instead.
TEST(BarrierExample, MissingMemberMakesTheOthersFailWithDeadlineExceeded) {
  const TimeNs start = SystemClock::Get().NowNs();
  std::vector<std::unique_ptr<netns::Subprocess>> procs =
      StartGroup(kMembers - 1, [](int rank) { return rank == 0 ? "2" : "1"; });
  ASSERT_EQ(procs.size(), size_t{kMembers - 1});
  for (int rank = 0; rank < kMembers - 1; ++rank) {
    auto code = procs[rank]->WaitFor(15 * kNsPerSec);
    ASSERT_TRUE(code.ok()) << code.status();
    EXPECT_EQ(*code, 1) << "rank " << rank;
    EXPECT_NE(procs[rank]->Stderr().find("round 0: DEADLINE_EXCEEDED"), std::string::npos)
        << "rank " << rank << " stderr: " << procs[rank]->Stderr();
    EXPECT_EQ(procs[rank]->Stdout().find("passed"), std::string::npos) << procs[rank]->Stdout();
  }
  // Each member waited about its own timeout; all ran concurrently.
  EXPECT_LT(SystemClock::Get().NowNs() - start, 10 * kNsPerSec);
}

// rpc_echo's two modes as two processes.
TEST(RpcEchoExample, ServerAndClientInTwoProcesses) {
  auto server = netns::Subprocess::Start(
      {WHARF_RPC_ECHO_EXAMPLE_PATH, "--server", "--listen", "homa://127.0.0.1:0"},
      {.label = "rpc_echo --server"});
  ASSERT_TRUE(server.ok()) << server.status();
  auto line = (*server)->WaitForStdoutLine("listening on ", kStartTimeoutNs);
  ASSERT_TRUE(line.ok()) << line.status() << " stderr: " << (*server)->Stderr();
  std::string address = line->substr(line->find("homa://"));

  auto client = netns::RunCommand(
      {WHARF_RPC_ECHO_EXAMPLE_PATH, "--client", address, "--message", "across", "--count", "3"},
      {.label = "rpc_echo --client"}, 20 * kNsPerSec);
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_EQ(client->exit_code, 0) << client->stderr_text;
  EXPECT_NE(client->stdout_text.find("client: echo 2: across"), std::string::npos)
      << client->stdout_text;

  ASSERT_OK((*server)->Signal(SIGTERM));
  auto code = (*server)->WaitFor(kStopTimeoutNs);
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 0) << (*server)->Stderr();
  EXPECT_NE((*server)->Stdout().find("server: 6 bytes from homa://127.0.0.1:"), std::string::npos)
      << (*server)->Stdout();
}

}  // namespace
}  // namespace wharf::integration
