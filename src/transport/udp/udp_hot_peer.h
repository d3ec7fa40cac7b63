// transport/udp/udp_hot_peer.h: the hot-peer socket, a second UDP socket
// bound to the same local address and port as UdpDatagram's own and
// connected to the one peer it has been sending to lately.
//
// Why: the kernel looks up the route on every send from an unconnected
// socket (about 0.4 us per datagram on loopback here) but caches it in a
// connected one. UdpDatagram's socket serves every peer, so it cannot be
// connected; a ping-pong with one peer pays that lookup on each side of
// every round trip. Both sockets carry SO_REUSEPORT, so the connected one
// can share the port: packets go out with the same source address and port,
// the kernel delivers the peer's packets to the connected socket (an exact
// match beats a wildcard one) and everyone else's to the main socket, and
// UdpDatagram reads both. Nothing changes on the wire.
//
// The price: a second socket to read on every receive, and a short race
// when the hot peer changes: the old socket is read until empty and then
// closed, and a datagram that reaches it between those two calls is lost
// (the protocol's resends recover it). Hence the hysteresis: a peer becomes
// hot only after kHotAfterSends single-datagram sends in a row.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>

#include "transport/net_address.h"
#include "wharf/result.h"

namespace wharf::transport::udp {

// Decides when a destination has become hot: after `threshold` sends in a
// row to it. Pure bookkeeping, no sockets.
class HotPeerTracker {
 public:
  explicit HotPeerTracker(size_t threshold) : threshold_(threshold) {}
  // Records a send to `to`; true exactly when this send completes the run
  // that makes `to` hot.
  bool NoteSend(const NetAddress& to) {
    if (run_ > 0 && to == candidate_) {
      return ++run_ == threshold_;
    }
    candidate_ = to;
    run_ = 1;
    return run_ == threshold_;
  }

 private:
  size_t threshold_;
  NetAddress candidate_;
  size_t run_ = 0;
};

// What the hot socket must share with the main one.
struct HotSocketSetup {
  NetAddress local;  // the main socket's bound address and port
  bool ipv6 = false;
  bool dual_stack = false;
  int recv_buffer_bytes = 0;  // 0: kernel default
  int send_buffer_bytes = 0;
  bool gro = false;
  int tos_v4 = 0;  // the main socket's default marking
  int tos_v6 = 0;
};

// Opens a non-blocking socket bound to setup.local with SO_REUSEPORT and
// connected to `peer` (as the kernel wants it for the socket's family:
// v4-mapped on a dual-stack socket); its fd, which the caller owns. Fails
// when the kernel refuses any step (the caller then keeps sending from the
// main socket).
Result<int> OpenHotSocket(const HotSocketSetup& setup, const sockaddr_storage& peer,
                          socklen_t peer_len);

// Binds `fd` (with SO_REUSEPORT set) to `address` such that no other socket
// was bound there: a plain socket binds the address first (port 0 picks a
// free port) and is closed, then `fd` binds the same port. Without that
// check a second process binding the same port with SO_REUSEPORT would
// silently share its datagrams. Returns the bind error a plain bind gives.
Status BindExclusiveReusePort(int fd, const NetAddress& address, bool ipv6_only);

}  // namespace wharf::transport::udp
