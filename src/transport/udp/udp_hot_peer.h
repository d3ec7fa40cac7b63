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
// The price: a second socket to read on every receive. The socket follows
// the traffic: when another peer takes over (a server whose first client
// left, or a client whose sizing probe went to another server), the socket
// is connected to the new peer instead. Connecting again moves the socket in
// the kernel's lookup without touching its queue, so datagrams the old peer
// sent before are still read from it and later ones reach the main socket:
// nothing is lost, and the fd stays the same (so do the epoll sets that hold
// it). A stale hot peer costs more than none (every poll reads an empty
// socket, and the main one only every few polls), hence the hand-over; and
// a peer becomes hot only after kHotAfterSends single-datagram sends in a
// row, and takes over only from one that has had none for
// kHandOverAfterIdleSends, so that two peers served in turns never make the
// socket flap between them.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>

#include "transport/net_address.h"
#include "wharf/result.h"

namespace wharf::transport::udp {

// Decides which destination is hot: the first after `threshold` sends in a
// row to it; a later one after such a run once the hot peer has had no send
// for `idle_sends` sends. Counts single-datagram sends only (the ones the
// hot socket carries). Pure bookkeeping, no sockets.
class HotPeerTracker {
 public:
  HotPeerTracker(size_t threshold, size_t idle_sends)
      : threshold_(threshold), idle_sends_(idle_sends) {}
  // Records a send to `to`; true when `to` should become the hot peer now.
  // The caller then calls MadeHot (or, if it could not, nothing: the run
  // starts over either way, so a failure is retried after another run).
  bool NoteSend(const NetAddress& to);
  // `to` is the hot peer from now on.
  void MadeHot(const NetAddress& to);
  bool has_hot() const { return has_hot_; }

 private:
  size_t threshold_;
  size_t idle_sends_;
  NetAddress candidate_;
  size_t run_ = 0;
  bool has_hot_ = false;
  NetAddress hot_;
  // Sends to other peers since the last one to hot_.
  size_t sends_since_hot_ = 0;
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

// Connects the hot-peer socket `fd` to another peer (the kernel address as
// for OpenHotSocket). On failure it stays connected to the peer it had.
Status ConnectHotSocket(int fd, const sockaddr_storage& peer, socklen_t peer_len);

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
