// stream/config.h: TcpConfig, every tunable of the TCP message transport
// (tcp://), with its default, and ResolveTcpConfig, the rules between them.
// The config key of a field is its name under
// `tcp:` without the unit suffix (peer_timeout_ns -> tcp.peer_timeout);
// docs/configuration.md lists the keys and docs/transports.md ("TCP message
// transport") explains the numbers.
#pragma once

#include <cstdint>

#include "base/clock.h"
#include "transport/net_address.h"
#include "wharf/result.h"

namespace wharf::transport::tcp {
class TcpSyscalls;
}

namespace wharf::stream {

struct TcpConfig {
  // Where the transport listens (it always does: peers send requests back to
  // the address they know us by). Port 0 picks an ephemeral port, which
  // LocalAddress() reports. Not a config key: the endpoint's address.
  transport::NetAddress bind;
  // For an IPv6 bind address: serve IPv6 only (IPV6_V6ONLY), as udp does.
  // Not a config key.
  bool ipv6_only = true;
  // listen() backlog: connections the kernel completes before we accept.
  int listen_backlog = 1024;

  // Largest message (request or response) sent or accepted: the engine's
  // 64 MiB payload limit plus its 32-byte frame. A 32-bit length on the wire.
  // Not a config key: the endpoint sets it from homa.max_message_bytes, so
  // both schemes refuse the same sizes.
  uint32_t max_message_bytes = (64u << 20) + 32;

  // Messages go out in chunks of at most this many bytes, and each
  // connection picks its next chunk SRPT-first, so a short message waits for
  // at most about one chunk of a long one. Also the receiver's limit on a
  // chunk header (a larger claim closes the connection).
  uint32_t chunk_bytes = 64u << 10;
  // TCP_NOTSENT_LOWAT: how much not-yet-sent data the kernel may hold per
  // connection. Enough to keep the link busy between polls, small enough
  // that a short message is not stuck behind it.
  uint32_t notsent_lowat_bytes = 128u << 10;

  // Outgoing connections per peer; new messages go to the one with the
  // fewest queued bytes. A message is sent wholly on one connection.
  int connections_per_peer = 1;

  // While RPCs to a peer are pending and it has no connection, connect
  // attempts back off from reconnect_min to reconnect_max, doubling. The
  // first redial after a lost connection waits reconnect_min, so a dead
  // process (whose port now refuses) is known within about that.
  DurationNs reconnect_min_ns = 1 * kNsPerMs;
  DurationNs reconnect_max_ns = 500 * kNsPerMs;

  // Peer death by silence: a peer with pending RPCs that sent nothing (no
  // byte of its process) for this long fails them with kUnavailable. Seconds,
  // not one missed beat: a live process gets paused (CPU load, page faults, a
  // debugger, VM steal, a container quota) and must lose nothing. The kernel's
  // word (a refused reconnect, an unreachable host) fails RPCs at once,
  // without waiting for this. Also TCP_USER_TIMEOUT, the limit on a connect
  // or handshake, and (x 2) how long a server remembers a disconnected client.
  DurationNs peer_timeout_ns = 5 * kNsPerSec;
  // With RPCs pending and nothing heard for this long, PING the peer: a live
  // peer's PONG is news, and the PING's bytes give the kernel something to
  // time out on (TCP_USER_TIMEOUT) when the host vanished. Left at this
  // default, it becomes peer_timeout / 10 when that is shorter.
  DurationNs ping_interval_ns = 500 * kNsPerMs;
  // When no request carried our ack floor for this long after it rose, an
  // explicit ACK frame carries it (so a ping-pong pays no extra write).
  DurationNs ack_delay_ns = 1 * kNsPerMs;

  // State a remote host can make us hold is capped, expires and is counted.
  // Inbound connections not closed: past it a new one is closed as soon as
  // accepted (tcp.connections_refused). Our own dials are not limited by it.
  uint32_t max_inbound_connections = 4096;
  // Peers (remote identities) a HELLO may add: a connection naming a new
  // peer past it is closed (tcp.peers_refused). Peers we send requests to
  // are always admitted (the application chose them).
  uint32_t max_peers = 16384;
  // A connection with no RPC pending either way (none of ours to that peer,
  // none of its in progress here, nothing queued to send) that has received
  // nothing for this long is closed (tcp.connections_idle_closed); the
  // peer's state then expires after 2 x peer_timeout. At least peer_timeout
  // (left at this default, it rises to a longer peer_timeout).
  DurationNs idle_timeout_ns = 60 * kNsPerSec;

  // Memory bounds. Partially received messages, across all connections (a
  // message that would exceed it is refused: kResourceExhausted). Responses
  // a server holds for at-most-once until the client acknowledges them; past
  // the bound the oldest already-sent ones are dropped (see transports.md).
  uint64_t max_incoming_bytes = 256ull << 20;
  uint64_t max_stored_response_bytes = 256ull << 20;

  // SO_SNDBUF / SO_RCVBUF per connection; 0 leaves the kernel's autotuning.
  int send_buffer_bytes = 0;
  int recv_buffer_bytes = 0;

  // Test seam for send/receive system calls; nullptr means the kernel.
  transport::tcp::TcpSyscalls* syscalls = nullptr;
};

// `config` with the defaults that follow other keys filled in (a default
// tcp.ping_interval becomes a tenth of a lower tcp.peer_timeout; a default
// tcp.idle_timeout rises to a longer one), then checked: an invalid value is
// an InvalidArgument naming its key ("tcp.chunk_bytes: expected 64..").
Result<TcpConfig> ResolveTcpConfig(const TcpConfig& config);

}  // namespace wharf::stream
