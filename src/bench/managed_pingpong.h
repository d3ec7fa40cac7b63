// bench/managed_pingpong.h: wharf in managed mode in the benchmark
// harness. Each run starts its own wharfd (bench_daemon.h), attaches the
// forked echo server and the client to it and runs the same ping-pong and
// goodput as embedded wharf (wharf_pingpong.h), so the path measured is
// application -> wharfd -> (same-host switch) -> application. Remote runs
// start two daemons on two loopback ports, one per application, so the
// traffic also crosses the kernel's UDP (or TCP) between them, as between
// two hosts.
//
// CPU placement: two applications and one or two daemons on (typically) two
// CPUs. In --mode poll the applications spin; one that shares its CPU with
// another process of the run spins by yielding it (endpoint.spin_yield): a
// plain spin would keep the process it waits for off that CPU until the
// scheduler's time slice ends (milliseconds). wharfd keeps its own policy:
// it spins, always yielding, for endpoint.spin (50 us) after its last work,
// then sleeps. In --mode block the applications sleep at once
// (endpoint.spin = 0) and are woken by wharfd. PlanManagedSpin decides.
#pragma once

#include <string>
#include <vector>

#include "base/clock.h"
#include "bench/affinity.h"
#include "bench/pingpong.h"
#include "bench/wharf_pingpong.h"
#include "wharf/result.h"

namespace wharf::bench {

struct ManagedPlan {
  // Two daemons, traffic between them over the network stack.
  bool remote = false;
  // CPU of the server's daemon (the only one unless remote); -1: unpinned.
  int daemon_cpu = -1;
  // CPU of the client's daemon when remote; -1: unpinned.
  int client_daemon_cpu = -1;
  // How to start a daemon (BenchDaemonOptions::command); empty: this binary.
  std::vector<std::string> daemon_command;
};

// Who spins in a managed run.
struct SpinPlan {
  // Whether each application spins (poll mode), and whether it spins by
  // yielding its CPU (it shares that CPU with another process of the run).
  bool client = false;
  bool server = false;
  bool client_yields = false;
  bool server_yields = false;
  // "client app on CPU 0 (spins), server app on CPU 1 (spins, yielding ...".
  std::string note;
};

// `poll`: the mode asks for spinning; `apps`: where the applications run;
// the daemon CPUs (-1 unpinned; client_daemon_cpu only when `remote`). In
// poll mode both applications spin, yielding unless pinned to a CPU no other
// process of the run is pinned to.
SpinPlan PlanManagedSpin(bool poll, const PinPlan& apps, bool remote, int daemon_cpu,
                         int client_daemon_cpu);

// One ping-pong through wharfd over `scheme` ("homa" or "tcp").
// options.address is what the daemons and endpoints bind; options.port is
// not used (the daemon's homa:// port is any free one).
Result<PingPongResult> RunManagedPingPong(const PingPongOptions& options, const std::string& scheme,
                                          const ManagedPlan& plan, const Clock& clock,
                                          const ProgressFn& progress);

// 1 MiB (options.message_bytes) goodput through wharfd, requests built in
// the shared heap (zero copy). Spinning follows PlanManagedSpin(poll).
Result<GoodputResult> RunManagedGoodput(const GoodputOptions& options, const ManagedPlan& plan,
                                        const Clock& clock);
// One-sided put goodput (RunWharfPutGoodputOn) with both applications
// managed: writes leave from the client's heap and land in the server's.
Result<GoodputResult> RunManagedPutGoodput(const GoodputOptions& options, const ManagedPlan& plan,
                                           const Clock& clock);

}  // namespace wharf::bench
