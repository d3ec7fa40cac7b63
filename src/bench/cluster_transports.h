// bench/cluster_transports.h: what a `wharf bench cluster` node sends
// and serves with: wharf (homa:// or tcp://, embedded or managed, ICall with
// many calls in flight on one endpoint per client thread) and the kernel
// baselines kernel-udp and kernel-tcp (kernel_transports.h). Each has an
// echo server that runs on its own thread until Stop, and a LoadTransport
// for the driver.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "bench/cluster_load.h"
#include "wharf/endpoint.h"
#include "wharf/result.h"

namespace wharf::bench {

struct NodeTransportConfig {
  std::string proto;            // "homa", "tcp", "kernel-udp", "kernel-tcp"
  bool managed = false;         // wharf only
  std::string daemon_socket;    // managed
  std::vector<std::string> addresses;  // every host's IPv4 address
  int port = 0;                 // every server's port
  int host = 0;                 // this node
  // The hosts' link rate (bits/s; 0: leave wharf's default): homa's pacer
  // and grants must know the real bottleneck, or senders overrun the tbf
  // queue and short messages wait behind long ones there.
  uint64_t link_bps = 0;
  // Further wharf settings ("homa.max_nic_backlog", "100us"), after the
  // defaults above (embedded endpoints; a managed node's wharfd has them).
  std::vector<std::pair<std::string, std::string>> settings;
  // What the echo server answers: 0 echoes the request, N > 0 answers every
  // RPC with N bytes (--response-size).
  uint64_t response_bytes = 0;
  // Embedded wharf endpoints keep wharf's defaults (a user's view, `wharf
  // bench throughput`): without it they sleep when idle (endpoint.spin=0),
  // since a cluster's hosts share the machine's CPUs.
  bool endpoint_defaults = false;
};

// The options of a node's embedded or managed wharf endpoint at `address`:
// endpoint.spin=0 unless endpoint_defaults, homa.link_rate when link_bps > 0,
// then `settings`.
EndpointOptions WharfEndpointOptions(const NodeTransportConfig& config, const std::string& address);

// The address clients use to reach host `host`'s server.
std::string ServerAddress(const NodeTransportConfig& config, int host);

class EchoServer {
 public:
  virtual ~EchoServer() = default;
  // Stops serving and joins the server thread.
  virtual void Stop() = 0;
  // What it counted ("name=value ..."; "" if nothing), after Stop.
  virtual std::string counters() const { return {}; }
};

// An echo server that is `ep` driven by a thread of its own until Stop;
// `serving`, what its handlers call into (a generated service), is
// destroyed after the endpoint. Its counters are the endpoint's.
std::unique_ptr<EchoServer> RunEndpointServer(std::unique_ptr<Endpoint> ep,
                                              std::shared_ptr<void> serving = nullptr);

// Opens and starts the echo server of this host.
Result<std::unique_ptr<EchoServer>> StartEchoServer(const NodeTransportConfig& config);

// One client thread's transport (at most `max_outstanding` RPCs in flight).
Result<std::unique_ptr<LoadTransport>> OpenLoadTransport(const NodeTransportConfig& config,
                                                         const Clock& clock,
                                                         int max_outstanding);

}  // namespace wharf::bench
