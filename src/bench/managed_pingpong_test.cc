// Managed runs: who spins where (PlanManagedSpin), and short real runs
// through a private wharfd (the wharfd binary built beside this test):
// same-host and remote, homa:// and tcp://, goodput, and that nothing is
// left behind.
#include "bench/managed_pingpong.h"

#include <gtest/gtest.h>

namespace wharf::bench {
namespace {

PinPlan Pinned(int client, int server) { return {.pin = true, .client_cpu = client, .server_cpu = server, .note = ""}; }

TEST(PlanManagedSpinTest, DaemonWithTheServer) {
  SpinPlan p = PlanManagedSpin(/*poll=*/true, Pinned(0, 1), false, 1, -1);
  EXPECT_TRUE(p.client && p.server);
  EXPECT_FALSE(p.client_yields);
  EXPECT_TRUE(p.server_yields);  // wharfd is on its CPU
  EXPECT_NE(p.note.find("client app on CPU 0 (spins)"), std::string::npos) << p.note;
  EXPECT_NE(p.note.find("server app on CPU 1 (spins, yielding its CPU)"), std::string::npos)
      << p.note;
  EXPECT_NE(p.note.find("wharfd on CPU 1 (spins yielding"), std::string::npos) << p.note;
}

TEST(PlanManagedSpinTest, EveryoneAloneSpinsWithoutYielding) {
  SpinPlan p = PlanManagedSpin(true, Pinned(0, 1), false, 2, -1);
  EXPECT_TRUE(p.client && p.server);
  EXPECT_FALSE(p.client_yields || p.server_yields);
}

TEST(PlanManagedSpinTest, BlockModeNeverSpins) {
  SpinPlan p = PlanManagedSpin(false, Pinned(0, 1), false, 2, -1);
  EXPECT_FALSE(p.client || p.server);
  EXPECT_NE(p.note.find("client app on CPU 0 (sleeps)"), std::string::npos) << p.note;
}

TEST(PlanManagedSpinTest, UnpinnedApplicationsYield) {
  // It could land on anyone's CPU.
  PinPlan none;
  SpinPlan p = PlanManagedSpin(true, none, false, -1, -1);
  EXPECT_TRUE(p.client && p.server && p.client_yields && p.server_yields);
  EXPECT_NE(p.note.find("wharfd on any CPU"), std::string::npos) << p.note;
}

TEST(PlanManagedSpinTest, RemoteDaemonsWithTheirApplications) {
  SpinPlan p = PlanManagedSpin(true, Pinned(0, 1), true, 1, 0);
  EXPECT_TRUE(p.client_yields && p.server_yields);
  EXPECT_NE(p.note.find("client's wharfd on CPU 0"), std::string::npos) << p.note;
  p = PlanManagedSpin(true, Pinned(0, 1), true, 2, 3);
  EXPECT_FALSE(p.client_yields || p.server_yields);
}

ManagedPlan Plan(bool remote) {
  return {.remote = remote, .daemon_cpu = -1, .client_daemon_cpu = -1,
          .daemon_command = {WHARFD_PATH}};
}

PingPongOptions ShortRun(WaitMode mode) {
  PingPongOptions o;
  o.iterations = 200;
  o.warmup = 20;
  o.mode = mode;
  o.pin = false;  // the test machine is shared: no spinning, no pinning
  o.time_limit_ns = 20 * kNsPerSec;
  o.reply_timeout_ns = 5 * kNsPerSec;
  return o;
}

void ExpectSane(const PingPongResult& r, uint64_t iterations, int processes) {
  EXPECT_EQ(r.latency.count, iterations);
  EXPECT_GT(r.latency.min_ns, 0);
  EXPECT_EQ(r.server_exit, "exit code 0");
  EXPECT_GT(r.cpu_ns, 0);
  EXPECT_EQ(r.cpu_processes, processes);
  EXPECT_NE(r.port, 0);
  EXPECT_NE(r.hosting_note.find("wharfd"), std::string::npos) << r.hosting_note;
}

TEST(ManagedPingPongTest, SameHostHoma) {
  const PingPongOptions o = ShortRun(WaitMode::kBlocking);
  auto r = RunManagedPingPong(o, "homa", Plan(false), SystemClock::Get(), {});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectSane(*r, o.iterations, 3);
}

TEST(ManagedPingPongTest, SameHostTcp) {
  const PingPongOptions o = ShortRun(WaitMode::kBlocking);
  auto r = RunManagedPingPong(o, "tcp", Plan(false), SystemClock::Get(), {});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectSane(*r, o.iterations, 3);
}

TEST(ManagedPingPongTest, RemoteThroughTwoDaemons) {
  const PingPongOptions o = ShortRun(WaitMode::kBlocking);
  auto r = RunManagedPingPong(o, "homa", Plan(true), SystemClock::Get(), {});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectSane(*r, o.iterations, 4);
  EXPECT_NE(r->hosting_note.find("client's wharfd"), std::string::npos);
}

TEST(ManagedPingPongTest, Goodput) {
  GoodputOptions g;
  g.seconds = 0.3;
  g.pin = false;
  auto r = RunManagedGoodput(g, Plan(false), SystemClock::Get());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(r->messages, 0u);
  EXPECT_GT(r->bits_per_second, 0);
  EXPECT_GT(r->cpu_ns, 0);
  EXPECT_EQ(r->cpu_processes, 3);
}

TEST(ManagedPingPongTest, MissingDaemonFailsCleanly) {
  ManagedPlan plan = Plan(false);
  plan.daemon_command = {"/nonexistent/wharfd"};
  auto r = RunManagedPingPong(ShortRun(WaitMode::kBlocking), "homa", plan, SystemClock::Get(), {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/nonexistent/wharfd"), std::string::npos) << r.status();
}

}  // namespace
}  // namespace wharf::bench
