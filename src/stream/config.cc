// ResolveTcpConfig: the defaults that follow other keys, and the checks.
#include "stream/config.h"

#include <algorithm>
#include <string>

#include "wire/stream_frame.h"

namespace wharf::stream {
namespace {

Status Validate(const TcpConfig& c) {
  auto bad = [](const std::string& key, const std::string& why) {
    return InvalidArgumentError("tcp." + key + ": " + why);
  };
  if (c.bind.family() == transport::NetAddress::Family::kNone) {
    return InvalidArgumentError("tcp: no address to listen on (TcpConfig::bind)");
  }
  if (c.chunk_bytes < 64 || c.chunk_bytes > wire::kStreamMaxChunkLimit) {
    return bad("chunk_bytes", "expected 64.." + std::to_string(wire::kStreamMaxChunkLimit) +
                                  ", got " + std::to_string(c.chunk_bytes));
  }
  if (c.notsent_lowat_bytes > (1u << 30))
    return bad("notsent_lowat_bytes", "expected at most 1GiB");
  if (c.connections_per_peer < 1 || c.connections_per_peer > 64) {
    return bad("connections_per_peer",
               "expected 1..64, got " + std::to_string(c.connections_per_peer));
  }
  if (c.reconnect_min_ns <= 0) return bad("reconnect_min", "must be positive");
  if (c.reconnect_max_ns < c.reconnect_min_ns) {
    return bad("reconnect_max", "must be at least tcp.reconnect_min");
  }
  if (c.peer_timeout_ns < kNsPerMs) return bad("peer_timeout", "must be at least 1ms");
  if (c.ping_interval_ns <= 0 || c.ping_interval_ns >= c.peer_timeout_ns) {
    return bad("ping_interval", "must be positive and below tcp.peer_timeout");
  }
  if (c.ack_delay_ns < 0) return bad("ack_delay", "must not be negative");
  if (c.max_inbound_connections < 1) return bad("max_inbound_connections", "must be at least 1");
  if (c.max_peers < 1) return bad("max_peers", "must be at least 1");
  if (c.idle_timeout_ns < c.peer_timeout_ns) {
    // Shorter would close a connection between a paused peer's beats.
    return bad("idle_timeout", "must be at least tcp.peer_timeout");
  }
  if (c.max_incoming_bytes < c.chunk_bytes) {
    return bad("max_incoming_bytes", "must hold at least one chunk (tcp.chunk_bytes = " +
                                         std::to_string(c.chunk_bytes) + ")");
  }
  if (c.send_buffer_bytes < 0 || c.recv_buffer_bytes < 0) {
    return bad("send_buffer_bytes", "socket buffer sizes must not be negative");
  }
  if (c.listen_backlog < 1) return InvalidArgumentError("tcp: listen backlog must be positive");
  return OkStatus();
}

}  // namespace

Result<TcpConfig> ResolveTcpConfig(const TcpConfig& given) {
  TcpConfig config = given;
  // The default PING interval follows a lowered peer timeout (a tenth of
  // it), so that setting tcp.peer_timeout alone stays valid.
  if (config.ping_interval_ns == TcpConfig{}.ping_interval_ns &&
      config.peer_timeout_ns < 10 * config.ping_interval_ns) {
    config.ping_interval_ns = std::max<DurationNs>(1, config.peer_timeout_ns / 10);
  }
  // Likewise the default idle timeout never undercuts a raised peer timeout.
  if (config.idle_timeout_ns == TcpConfig{}.idle_timeout_ns) {
    config.idle_timeout_ns = std::max(config.idle_timeout_ns, config.peer_timeout_ns);
  }
  WHARF_RETURN_IF_ERROR(Validate(config));
  return config;
}

}  // namespace wharf::stream
