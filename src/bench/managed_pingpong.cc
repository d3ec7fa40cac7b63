// Managed-mode ping-pong and goodput: private wharfd(s), then the shared
// wharf runs of wharf_pingpong.cc.
#include "bench/managed_pingpong.h"

#include <memory>
#include <utility>

#include "bench/bench_daemon.h"

namespace wharf::bench {
namespace {

std::string CpuName(int cpu) { return cpu >= 0 ? "CPU " + std::to_string(cpu) : "any CPU"; }

// The daemons of one run (declared before the sides that use them, so
// they outlive the applications), and the sides attached to them.
struct ManagedRun {
  std::unique_ptr<BenchDaemon> server_daemon;
  std::unique_ptr<BenchDaemon> client_daemon;  // remote only
  WharfSides sides;
};

Result<ManagedRun> StartManagedRun(const std::string& scheme, const std::string& address,
                                   bool poll, const PinPlan& apps, const ManagedPlan& plan,
                                   const Clock& clock) {
  const int daemon_cpu = apps.pin ? plan.daemon_cpu : -1;
  const int client_daemon_cpu = apps.pin ? plan.client_daemon_cpu : -1;
  const SpinPlan spin = PlanManagedSpin(poll, apps, plan.remote, daemon_cpu, client_daemon_cpu);
  ManagedRun run;
  BenchDaemonOptions d{.command = plan.daemon_command,
                       .address = address,
                       .cpu = daemon_cpu};
  WHARF_ASSIGN_OR_RETURN(run.server_daemon, BenchDaemon::Start(d, clock));
  run.sides.other_pids.push_back(run.server_daemon->pid());
  const BenchDaemon* client_daemon = run.server_daemon.get();
  if (plan.remote) {
    d.cpu = client_daemon_cpu;
    WHARF_ASSIGN_OR_RETURN(run.client_daemon, BenchDaemon::Start(d, clock));
    run.sides.other_pids.push_back(run.client_daemon->pid());
    client_daemon = run.client_daemon.get();
  }
  // Port 0: homa:// gets a fresh endpoint id on the daemon's socket, tcp://
  // a port of its own; the server reports what it got.
  run.sides.server = {.address = WharfUri(scheme, address, 0),
                      .hosting = Hosting::kManaged,
                      .daemon_socket = run.server_daemon->socket_path()};
  run.sides.client = {.address = WharfUri(scheme, address, 0),
                      .hosting = Hosting::kManaged,
                      .daemon_socket = client_daemon->socket_path()};
  run.sides.server_spin = spin.server;
  run.sides.client_spin = spin.client;
  run.sides.server_spin_yield = spin.server_yields;
  run.sides.client_spin_yield = spin.client_yields;
  run.sides.pinning = apps;
  run.sides.hosting_note = spin.note;
  return run;
}

}  // namespace

SpinPlan PlanManagedSpin(bool poll, const PinPlan& apps, bool remote, int daemon_cpu,
                         int client_daemon_cpu) {
  struct Process {
    const char* name;
    int cpu;
    bool* spins;   // null: a wharfd (its own policy)
    bool* yields;
  };
  SpinPlan plan;
  const int client_cpu = apps.pin ? apps.client_cpu : -1;
  const int server_cpu = apps.pin ? apps.server_cpu : -1;
  std::vector<Process> all = {{"client app", client_cpu, &plan.client, &plan.client_yields},
                              {"server app", server_cpu, &plan.server, &plan.server_yields}};
  all.push_back({remote ? "server's wharfd" : "wharfd", daemon_cpu, nullptr, nullptr});
  if (remote) all.push_back({"client's wharfd", client_daemon_cpu, nullptr, nullptr});
  // Poll mode: the applications spin; one that shares its CPU (or is not
  // pinned) spins by yielding, so that the process it waits for runs at
  // once: a plain spin there would hold that process off for a time slice.
  // wharfd spins (endpoint.spin after its last work) always by yielding.
  for (const Process& p : all) {
    if (p.spins == nullptr) continue;
    bool alone = p.cpu >= 0;
    for (const Process& q : all) alone = alone && (&p == &q || q.cpu != p.cpu);
    *p.spins = poll;
    *p.yields = poll && !alone;
  }
  for (const Process& p : all) {
    if (!plan.note.empty()) plan.note += ", ";
    plan.note += std::string(p.name) + " on " + CpuName(p.cpu);
    if (p.spins == nullptr) {
      plan.note += " (spins yielding for endpoint.spin after work, then sleeps)";
    } else {
      plan.note += !*p.spins ? " (sleeps)" : *p.yields ? " (spins, yielding its CPU)" : " (spins)";
    }
  }
  return plan;
}

Result<PingPongResult> RunManagedPingPong(const PingPongOptions& options, const std::string& scheme,
                                          const ManagedPlan& plan, const Clock& clock,
                                          const ProgressFn& progress) {
  WHARF_RETURN_IF_ERROR(ValidatePingPongOptions(options, 64u << 20));
  const PinPlan apps = PlanPinning(options.pin, options.client_cpu, options.server_cpu);
  const bool poll = options.mode == WaitMode::kBusyPoll;
  const std::string what = "wharf managed" + std::string(plan.remote ? " remote " : " ") + scheme +
                           " " + std::string(WaitModeName(options.mode)) + " " +
                           std::to_string(options.size_bytes) + " B";
  auto run = StartManagedRun(scheme, options.address, poll, apps, plan, clock);
  if (!run.ok()) return run.status().WithContext(what);
  return RunWharfPingPongOn(options, run->sides, clock, progress, what);
}

Result<GoodputResult> RunManagedGoodput(const GoodputOptions& options, const ManagedPlan& plan,
                                        const Clock& clock) {
  const PinPlan apps = PlanPinning(options.pin, options.client_cpu, options.server_cpu);
  auto run = StartManagedRun(options.scheme, options.address, /*poll=*/true, apps, plan, clock);
  if (!run.ok()) return run.status().WithContext("wharf managed goodput");
  return RunWharfGoodputOn(options, run->sides, clock);
}

Result<GoodputResult> RunManagedPutGoodput(const GoodputOptions& options, const ManagedPlan& plan,
                                           const Clock& clock) {
  const PinPlan apps = PlanPinning(options.pin, options.client_cpu, options.server_cpu);
  auto run = StartManagedRun(options.scheme, options.address, /*poll=*/true, apps, plan, clock);
  if (!run.ok()) return run.status().WithContext("wharf managed put goodput");
  return RunWharfPutGoodputOn(options, run->sides, clock);
}

}  // namespace wharf::bench
