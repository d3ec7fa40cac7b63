// transport/udp/udp_path_errors.h: the kernel's ICMP reports for a UDP
// socket. EnableRecvErr asks for them (IP_RECVERR / IPV6_RECVERR), which
// queues one entry per ICMP error on the socket's error queue and makes the
// socket poll with EPOLLERR; ReadPathErrors drains that queue
// (MSG_ERRQUEUE) into transport::PathErrors. UdpDatagram calls it only after
// a send or receive failed with an error the kernel raises for such a report,
// so a socket with no errors pays nothing. No other state lives here.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <functional>
#include <optional>
#include <span>

#include "transport/datagram.h"
#include "transport/udp/udp_departures.h"

namespace wharf::transport::udp {

// Turns on IP_RECVERR (an IPv4 socket, or a dual-stack IPv6 one, whose IPv4
// peers' reports come through the IPv4 path) and IPV6_RECVERR (an IPv6
// socket). False when the kernel refuses; the socket then still works and
// only hears of a refusal as an ECONNREFUSED on a connected socket.
bool EnableRecvErr(int fd, bool ipv6, bool dual_stack);

// Errnos with which a send or receive reports an ICMP error that arrived for
// the socket (sk_err): the cue to read the error queue.
bool IsPathErrno(int err);

// Reads up to out.size() ICMP reports from fd's error queue (non-blocking);
// returns how many were stored. Transmit stamps (udp_departures.h) found on
// the way go to `on_stamp` (dropped when it is empty), which returns
// whether to read on (false: its caller has what it waited for, and the
// read that would find the queue empty is spared); other entries are
// consumed and skipped. `more` is set when the queue may still hold entries
// (out filled up, or on_stamp stopped the reading).
size_t ReadPathErrors(int fd, std::span<PathError> out, bool* more,
                      const std::function<bool(const TransmitStamp&)>& on_stamp = {});

// Decodes one error-queue message: `name` is the original destination the
// kernel wrote into msg_name, the control messages hold the
// sock_extended_err and the reporter. nullopt when it holds no ICMP or local
// error report. Exposed for tests.
std::optional<PathError> ParsePathError(const msghdr& msg);

}  // namespace wharf::transport::udp
