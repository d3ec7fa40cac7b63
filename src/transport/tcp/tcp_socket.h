// transport/tcp/tcp_socket.h: thin helpers over non-blocking TCP sockets for
// the TCP message transport (src/stream/): a listening socket, accept, a
// non-blocking connect and its completion, the socket options the transport
// sets, and address conversion. Plain functions over file descriptors: no
// state, no framing, no protocol (that is src/stream/). Every error is a
// Status naming the call and the address.
#pragma once

#include <cstdint>
#include <optional>

#include "transport/net_address.h"
#include "wharf/result.h"

namespace wharf::transport::tcp {

// Options applied to every connected socket (accepted or dialled).
struct SocketOptions {
  // TCP_NODELAY: frames go out when written, never held for Nagle.
  bool no_delay = true;
  // TCP_NOTSENT_LOWAT in bytes (0 = leave the kernel default): the socket
  // reports writable, and accepts more, only while less than this is queued
  // unsent, so data we have not yet committed to the stream stays in our
  // hands, where a short message can still overtake it.
  int notsent_lowat_bytes = 0;
  // TCP_USER_TIMEOUT in milliseconds (0 = kernel default): the kernel gives up
  // on a connection whose sent data stays unacknowledged this long.
  unsigned user_timeout_ms = 0;
  // SO_SNDBUF / SO_RCVBUF (0 = leave them, and the kernel's autotuning, alone).
  int send_buffer_bytes = 0;
  int recv_buffer_bytes = 0;
};

// A listening socket bound to `bind` (port 0 picks one), non-blocking and
// close-on-exec, with SO_REUSEADDR. An IPv6 socket sets IPV6_V6ONLY to
// `ipv6_only` explicitly rather than inheriting net.ipv6.bindv6only.
Result<int> OpenListener(const NetAddress& bind, bool ipv6_only, int backlog);

struct Accepted {
  int fd = -1;        // non-blocking, close-on-exec; the caller owns it
  NetAddress peer;    // IPv4 peers of a dual-stack socket come back as IPv4
};

// One pending connection, or nullopt when there is none (EAGAIN). Errors the
// kernel reports for a connection that died in the queue (ECONNABORTED,
// EPROTO...) are also nullopt: they concern that connection, not the socket.
Result<std::optional<Accepted>> Accept(int listen_fd);

// A non-blocking socket with a connect to `to` under way. *done is true when
// the connect already completed (possible on loopback); otherwise the socket
// becomes writable when it finishes, and FinishConnect tells how. A `from`
// of the same family with a specific (non-wildcard) IP is bound first (port
// 0), so the peer sees that source address; otherwise the route picks it.
// On failure, *error (if given) receives the errno, for PeerGone.
Result<int> StartConnect(const NetAddress& to, bool* done, const NetAddress& from = NetAddress(),
                         int* error = nullptr);

// The outcome of a connect StartConnect began (SO_ERROR): ok, or the error
// naming `to` ("connect 127.0.0.1:4000: Connection refused"), its errno in
// *error if given.
Status FinishConnect(int fd, const NetAddress& to, int* error = nullptr);

// True when errno `err` is the kernel's word that nobody is there: no
// process listens on the port (ECONNREFUSED: the peer host answered with a
// reset) or no route leads to the host (EHOSTUNREACH, ENETUNREACH,
// EHOSTDOWN: an ICMP error or a missing route). Not a timeout: silence
// (ETIMEDOUT) may be a paused peer, and says nothing.
bool PeerGone(int err);

// Applies `options`; the first failure names the option.
Status ApplyOptions(int fd, const SocketOptions& options);

// getsockname / getpeername as NetAddress (v4-mapped IPv6 becomes IPv4).
Result<NetAddress> LocalAddressOf(int fd);
Result<NetAddress> PeerAddressOf(int fd);

// Marks what `fd` sends from now on with the TOS byte `tos` (DSCP << 2):
// IP_TOS, and IPV6_TCLASS on an IPv6 socket (which may carry IPv4-mapped
// traffic too, so both are set there). Fails only when neither applies.
Status SetTrafficClass(int fd, uint8_t tos);

// Reads an int-valued socket option back (tests and diagnostics).
Result<int> GetIntOption(int fd, int level, int name);

}  // namespace wharf::transport::tcp
