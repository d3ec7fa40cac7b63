// engine/engine_config.h: EngineConfig, every setting of an endpoint's engine
// (protocol, UDP socket, engine limits, polling), and its loading from a YAML
// file plus "key=value" overrides. docs/configuration.md lists the keys.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "engine/engine.h"
#include "homa/config.h"
#include "stream/config.h"
#include "ucx/ucx_opener.h"
#include "wharf/result.h"

namespace wharf {
class ConfigDoc;
}  // namespace wharf

namespace wharf::engine {

struct EngineConfig {
  homa::HomaConfig homa;
  // tcp:// (tcp.*); its bind address and message limit come from the
  // endpoint's address and homa.max_message_bytes.
  stream::TcpConfig tcp;
  // ucx:// (ucx.*); its bind address and message limit come as tcp's do.
  ucx::UcxConfig ucx;
  // UDP socket (udp.*).
  // Upper bound; each peer's path MTU applies when smaller.
  size_t mtu = 65535;
  // Large enough that a burst of thousands of one-packet requests from many
  // clients lands in the socket instead of being dropped (the kernel doubles
  // it, and as root it may exceed net.core.rmem_max).
  uint64_t recv_buffer_bytes = 16 << 20;
  uint64_t send_buffer_bytes = 4 << 20;
  bool gso = true;
  // udp.gro: false turns GRO off everywhere. True keeps it on for sockets
  // bound to a wildcard or interface address, and on one bound to a
  // loopback address leaves it to udp.gro_loopback (adaptive, true or
  // false; see transport::LoopbackGro): adaptive switches it on while reads
  // find queues, off while they find lone packets.
  bool gro = true;
  enum class GroLoopback : uint8_t { kAdaptive, kAlways, kNever };
  GroLoopback gro_loopback = GroLoopback::kAdaptive;
  // udp.hot_peer_socket: see transport::UdpOptions::hot_peer_socket.
  bool hot_peer_socket = true;
  // udp.rx_timestamps: see transport::UdpOptions::rx_timestamps. wharfd
  // turns it on for its sockets when it probes (mesh.pinglist).
  bool rx_timestamps = false;
  // udp.tx_timestamps: see transport::UdpOptions::tx_timestamps. wharfd
  // turns it on too when it probes.
  bool tx_timestamps = false;
  // udp.gso_copy_bytes: see transport::UdpOptions::gso_copy_min_bytes.
  uint64_t gso_copy_bytes = 8 << 10;
  // How long a waiting thread polls before it sleeps (endpoint.spin). Spin
  // covers a round trip on a busy path; sleeping costs a 25-50 us wake-up on
  // this class of machine, so the default is about a few RTTs.
  DurationNs spin_ns = 50 * kNsPerUs;
  // Spin by yielding the CPU (sched_yield) instead of pausing
  // (endpoint.spin_yield: true, false or auto): for a process that shares
  // its CPU with the processes it waits for, so they run at once. auto (the
  // default) yields in managed mode, where the engine the application waits
  // for is wharfd on the same host, often on the same CPU: a thread that
  // spins by pausing there keeps wharfd from running until the scheduler
  // preempts it (a single RPC then took 190 us instead of 18 on a 2-CPU VM),
  // and pauses in embedded mode. wharfd always yields.
  enum class SpinYield : uint8_t { kAuto, kAlways, kNever };
  SpinYield spin_yield = SpinYield::kAuto;
  bool YieldsWhileSpinning(bool managed) const {
    return spin_yield == SpinYield::kAlways || (spin_yield == SpinYield::kAuto && managed);
  }
  // How long a handler may run before a keeper thread starts driving the
  // engine beside it (endpoint.keeper_after), answering peers' probes and
  // protocol packets until the handler returns. Far below any peer timeout,
  // far above a normal handler.
  DurationNs keeper_after_ns = 20 * kNsPerMs;
  // The transport of an address written without a scheme ("HOST:PORT"):
  // endpoint.default_transport, "homa", "tcp" or "ucx".
  std::string default_scheme = "homa";
  EngineLimits limits;
  // rpc.*: the largest request and response this endpoint's RPCs and
  // streams carry, each way (0: up to homa.max_message_bytes). The library
  // enforces them, in both hostings: see client/rpc_limits.h.
  struct RpcLimits {
    uint64_t max_request_bytes = 0;
    uint64_t max_response_bytes = 0;
  };
  RpcLimits rpc;
};

// Loads `file` (empty: none) then applies `overrides` ({"homa.overcommit",
// "4"}). Every error names the source, the key, what was expected and what
// was found; unknown keys are errors too.
Result<EngineConfig> LoadEngineConfig(
    const std::string& file, const std::vector<std::pair<std::string, std::string>>& overrides);
// The same from documents a caller loaded, which may hold other keys too
// (wharfd's): reads the engine's keys, leaving the unknown-key check to the
// caller, after it read its own.
Result<EngineConfig> ReadEngineConfig(const ConfigDoc& file, const ConfigDoc& overrides);

}  // namespace wharf::engine
