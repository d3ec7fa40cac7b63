// ucx/ucx_opener.h: how the engine opens ucx:// without knowing whether
// this build has UCX. Two implementations of OpenUcxTransport, one linked:
// ucx/ucx_opener.cc (UCX found: a UcxMessageTransport) or
// ucx/ucx_absent.cc (no UCX: a clear error); cmake/WharfUcx.cmake picks,
// so no #ifdef decides anything. No UCX type appears here.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/clock.h"
#include "transport/message_transport.h"
#include "transport/net_address.h"
#include "wharf/result.h"

namespace wharf::ucx {

// The ucx.* configuration keys (docs/configuration.md), and what the
// engine fills in (bind, max_message_bytes).
struct UcxConfig {
  // ucx.tls: UCX's transports, as UCX_TLS ("tcp", "sm,tcp", "rc,ud"...);
  // empty: UCX's own choice.
  std::string tls;
  // ucx.devices: UCX's devices, as UCX_NET_DEVICES ("lo", "eth0",
  // "mlx5_0:1"); empty: UCX's own choice (which leaves out loopback).
  std::string devices;
  // ucx.detect_peer_failure: ask UCX to report a peer's death (its tcp
  // does, on the kernel's word). UCX 1.13 then never picks its shared
  // memory; turned off, it may, and a dead peer shows only when a call's
  // deadline passes.
  bool detect_peer_failure = true;
  // ucx.max_peers: connections to and from other engines, in all; a peer
  // connecting in beyond it is refused (and counted).
  uint32_t max_peers = 4096;
  // ucx.max_server_rpcs: requests received and not yet answered; one more
  // is refused with kResourceExhausted (and counted).
  uint32_t max_server_rpcs = 65536;
  // ucx.idle_timeout: a connection we opened with no call in flight for
  // this long is closed (reopened by the next call).
  DurationNs idle_timeout_ns = 60 * kNsPerSec;
  // ucx.pool_bytes: the memory peers' region asks are served from (0: this
  // endpoint lends only what it lends itself).
  uint64_t pool_bytes = 64 << 20;
  // ucx.max_regions: regions lent, and regions held, each.
  uint32_t max_regions = 1024;

  // Filled by the engine, not keys of their own.
  transport::NetAddress bind;       // the endpoint's address (port 0: any)
  uint64_t max_message_bytes = 0;   // homa.max_message_bytes
};

// True when this build has ucx:// (UCX was found at configure time).
bool UcxTransportBuilt();
// A ucx:// transport listening at config.bind. Without UCX in the build:
// kUnimplemented saying how to get it. Errors name the key or UCX's call.
Result<std::unique_ptr<transport::MessageTransport>> OpenUcxTransport(const UcxConfig& config,
                                                                     const Clock& clock);

}  // namespace wharf::ucx
