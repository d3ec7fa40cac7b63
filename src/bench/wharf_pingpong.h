// bench/wharf_pingpong.h: wharf itself in the benchmark harness: the
// same ping-pong as the kernel baselines (forked echo server, pinned sides,
// RunPingPongLoop), but through the public API; and one-way goodput of
// large RPC requests, the counterpart of iperf3. Embedded mode is here;
// managed mode (wharfd in between) is managed_pingpong.h, which runs the
// same two sides through RunWharfPingPongOn / RunWharfGoodputOn.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "bench/affinity.h"
#include "bench/pingpong.h"
#include "wharf/endpoint.h"
#include "wharf/result.h"

namespace wharf::bench {

// kBusyPoll: both endpoints spin (endpoint.spin = 1 s, longer than any gap);
// kBlocking: endpoint.spin = 0, every wait sleeps in epoll. `scheme` is the
// transport: "homa" or "tcp". Embedded mode, whatever wharfd runs.
Result<PingPongResult> RunWharfPingPong(const PingPongOptions& options, const std::string& scheme,
                                        const Clock& clock, const ProgressFn& progress);

struct GoodputOptions {
  std::string scheme = "homa";  // the transport wharf uses
  std::string address = "127.0.0.1";
  size_t message_bytes = 1 << 20;  // request size; responses are empty
  int window = 4;                  // requests in flight
  double seconds = 5;
  bool pin = true;
  int client_cpu = 0;
  int server_cpu = 1;
};

struct GoodputResult {
  double bits_per_second = 0;  // request payload bytes delivered, per second
  uint64_t messages = 0;
  double seconds = 0;
  // CPU time (user + system) of every process of the run while timed; -1
  // if unknown.
  DurationNs cpu_ns = -1;
  int cpu_processes = 0;
  std::string hosting_note;  // as PingPongResult::hosting_note
};

// Embedded, both sides spinning.
Result<GoodputResult> RunWharfGoodput(const GoodputOptions& options, const Clock& clock);

// One-sided put goodput over ucx:// (wharf/remote_memory.h), embedded, both
// sides spinning: the client asks the server for a region of up to 8
// messages and keeps `window` writes of message_bytes in flight into it
// (slot after slot), each complete once its data is in the server's memory
// (UCX's flush), for `seconds`. The server's application does nothing: its
// endpoint's loop serves the puts. What `ucx_perftest -t ucp_put_bw` is
// compared with.
Result<GoodputResult> RunWharfPutGoodput(const GoodputOptions& options, const Clock& clock);

// The two sides of a wharf run, however hosted.
struct WharfSides {
  // The forked echo server's endpoint; with port 0 it reports the address
  // it got back to the parent.
  EndpointOptions server;
  EndpointOptions client;  // the calling thread's endpoint
  // endpoint.spin of each side: 1 s (spin through the whole run) or 0.
  bool server_spin = true;
  bool client_spin = true;
  // While spinning, give the CPU to other runnable processes (a side that
  // shares its CPU with a process it waits for: endpoint.spin_yield).
  bool server_spin_yield = false;
  bool client_spin_yield = false;
  PinPlan pinning;                // where the two sides run
  std::vector<pid_t> other_pids;  // more processes the run costs CPU in (wharfd)
  std::string hosting_note;       // copied into the result
};

// One ping-pong between `sides`; `what` ("wharf-managed poll 64 B")
// prefixes errors. options.address/port are not used (sides say where).
Result<PingPongResult> RunWharfPingPongOn(const PingPongOptions& options, const WharfSides& sides,
                                          const Clock& clock, const ProgressFn& progress,
                                          std::string_view what);

// Goodput between `sides` (requests from AllocateBuffer: zero copy when
// managed). options.scheme/address/pin/cpus are not used.
Result<GoodputResult> RunWharfGoodputOn(const GoodputOptions& options, const WharfSides& sides,
                                        const Clock& clock);
// The same as RunWharfPutGoodput between `sides` (managed: through wharfd).
Result<GoodputResult> RunWharfPutGoodputOn(const GoodputOptions& options, const WharfSides& sides,
                                           const Clock& clock);

// "homa://127.0.0.1:4000" (IPv6 in brackets).
std::string WharfUri(const std::string& scheme, const std::string& address, uint16_t port);

}  // namespace wharf::bench
