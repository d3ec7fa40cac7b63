// transport/udp/udp_socket_options.h: the socket-option probes and the
// control-message (cmsg) encoding and decoding that UdpDatagram needs:
// buffer sizing, UDP GSO/GRO detection, per-packet TOS/TCLASS, the GRO
// segment size on receive. Plain functions over a file descriptor; no state
// and no batching logic (that is udp_datagram.cc and udp_gso_plan.cc).
#pragma once

#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/socket.h>
#include <time.h>

#include <cstddef>
#include <cstdint>
#include <optional>

#include "wharf/result.h"

// Older libc headers predate UDP GSO (Linux 4.18) and GRO (5.0); the values
// are kernel ABI and never change, so we supply them rather than depend on
// <linux/udp.h>. Whether the running kernel accepts them is probed at Open.
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

namespace wharf::transport::udp {

// Which socket buffer to size.
enum class BufferKind : uint8_t { kReceive, kSend };

// Asks for `bytes` of socket buffer. Tries the *BUFFORCE option first (needs
// CAP_NET_ADMIN; ignores net.core.[rw]mem_max) and falls back to the plain
// option, which the kernel silently clamps to the sysctl maximum. Returns the
// size the kernel reports afterwards (it doubles the request to account for
// bookkeeping overhead, so this is about 2 * min(bytes, limit)).
Result<int> SetBufferBytes(int fd, BufferKind kind, int bytes);

// True when the kernel understands UDP_SEGMENT. Setting the socket-wide GSO
// size to 0 is a no-op on kernels that have it and ENOPROTOOPT on those that
// do not, so the probe leaves the socket unchanged either way.
bool ProbeGso(int fd);

// Turns on UDP_GRO so that the kernel may hand us several same-sized
// datagrams from one sender in one buffer. False when the kernel refuses.
bool EnableGro(int fd);

// Room one outgoing message needs for its control messages: a UDP_SEGMENT
// (uint16_t) and an IP_TOS or IPV6_TCLASS (int).
inline constexpr size_t kSendControlBytes =
    CMSG_SPACE(sizeof(uint16_t)) + CMSG_SPACE(sizeof(int)) * 2;
// Room one incoming message needs: the UDP_GRO segment size (int) and a
// receive timestamp (SCM_TIMESTAMPING: three timespecs), with slack so that
// an unexpected extra cmsg sets MSG_CTRUNC instead of hiding the ones we
// want.
inline constexpr size_t kReceiveControlBytes =
    CMSG_SPACE(sizeof(int)) * 4 + CMSG_SPACE(3 * sizeof(timespec));

// Asks the kernel to stamp every datagram `fd` receives with its software
// receive time (SO_TIMESTAMPING, SOF_TIMESTAMPING_RX_SOFTWARE), delivered as
// an SCM_TIMESTAMPING control message. False when the kernel refuses.
bool EnableReceiveTimestamps(int fd);
// Sets fd's SO_TIMESTAMPING to software receive stamps when `receive`, and
// when `transmit` to numbered transmit stamps (OPT_ID, OPT_TSONLY) for the
// sends that ask with WriteSendControl's `stamp` (the socket asks for none
// by itself). One option holds both, so this sets the union. False when
// the kernel refuses.
bool EnableTimestamps(int fd, bool receive, bool transmit);
// CLOCK_MONOTONIC - CLOCK_REALTIME now, in ns: added to a kernel software
// stamp (realtime) it gives the monotonic time the protocol runs on. Read
// anew for each batch of stamps, so that a step of the realtime clock
// moves no more than the stamps read around it.
int64_t RealtimeToMonotonicNs();
// The software stamp in `msg`'s control messages (SCM_TIMESTAMPING: a
// received datagram's receive time, or an error-queue entry's transmit
// time), ns on CLOCK_REALTIME; nullopt when there is none.
std::optional<int64_t> ReadSoftwareTimestamp(const msghdr& msg);

// WriteSendControl's `tos` when the socket's own TOS / traffic class applies.
inline constexpr int kSocketTos = -1;

// Writes the control messages for one outgoing message into `control`
// (kSendControlBytes, aligned for cmsghdr) and returns the length to store
// in msg_controllen (0 when neither is needed).
//   gso_size: segment size for a coalesced message, 0 for a plain one.
//   tos: the IPv4 TOS / IPv6 traffic class byte (0..255), or kSocketTos to
//     leave the socket's (see SetSocketTos).
//   ipv4_header: whether the packet goes out with an IPv4 header (a v4
//     socket, or a dual-stack v6 socket sending to a v4-mapped address,
//     which the kernel routes through its IPv4 path and so reads IP_TOS).
//   stamp: ask for this message's software transmit stamp (the socket must
//     have transmit stamps on: EnableTimestamps).
size_t WriteSendControl(std::byte* control, uint16_t gso_size, int tos, bool ipv4_header,
                        bool stamp = false);

// Sets the TOS (packets with an IPv4 header) or traffic class (IPv6 header)
// that the socket's packets carry when no control message says otherwise,
// so that the most common marking costs no per-packet control message.
// False when the kernel refuses (the default, 0, then stays).
bool SetSocketTos(int fd, bool ipv4_header, uint8_t tos);

// Sends every packet with Don't Fragment set and at the device's MTU,
// ignoring path MTU estimates (IP_PMTUDISC_PROBE; IPV6_PMTUDISC_PROBE too
// on a v6 socket). Homa cuts messages into packets that fit the MTU itself
// and never wants the kernel to fragment them; and with DF the kernel gives
// an unconnected socket's IPv4 packets id 0 instead of hashing one per
// packet (about 50 ns of each send on loopback). False when refused.
bool SetDontFragment(int fd, bool ipv6);

// The GRO segment size carried by a received message, or nullopt when the
// kernel delivered a single datagram.
std::optional<size_t> ReadGroSegmentBytes(const msghdr& msg);

}  // namespace wharf::transport::udp
