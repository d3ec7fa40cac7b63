// stream/peer.h: Peer, what the TCP transport knows about one remote
// transport, named by its identity address (IP + listening port): its
// connections in both directions, our client RPCs to it, reconnect backoff,
// liveness and the ack floor we owe it. Also ClientRpc (one of our RPCs) and
// PeerTable. The server side's memory of a peer as a client is ServerTable.
//
// Identity: an outbound connection's peer is the address we dialled; an
// inbound one's is (source IP, listen port declared in its HELLO). So a
// server that answers a client, or sends it a request of its own, names it by
// the address the client listens on, and either side reuses the other's
// connections.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <set>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "stream/config.h"
#include "stream/send_queue.h"
#include "transport/net_address.h"
#include "wharf/buffer.h"

namespace wharf::stream {

class Connection;
struct Peer;

// One of our RPCs as a client, from SendRequest until its response, failure
// or cancellation. Owned and managed by ClientRpcs.
struct ClientRpc {
  uint64_t id = 0;
  uint64_t cookie = 0;
  Buffer request;        // kept whole until the RPC ends: re-sent after a reconnect
  Peer* peer = nullptr;
  TimeNs start_ns = 0;
  // The connection carrying the request (queued or written), or nullptr
  // while it waits for one (in peer->waiting).
  Connection* conn = nullptr;
  SendQueue::Handle handle = 0;  // while queued on conn
  // The server instance that may hold the request (some of it was written to
  // a connection to it), 0 if none. A request is re-sent only to that same
  // instance: a restarted server may have run it, so it is not run twice.
  uint64_t server_instance = 0;
  bool queued_before = false;  // for requests_resent
};

// Owned by PeerTable. Connections are borrowed (owned by ConnectionTable) and
// removed from `connections` when they close. The client fields (RPCs,
// pings, acks) are managed by ClientRpcs; the rest by the transport.
struct Peer {
  transport::NetAddress identity;
  uint64_t instance = 0;  // the peer's instance id, from its latest HELLO (0: none yet)
  std::vector<Connection*> connections;  // not closed, both directions

  // Our client RPCs to it (ids ascending, so also by start time) and those
  // of them waiting for a connection (oldest first). ClientRpcs.
  std::set<uint64_t> outstanding;
  std::deque<uint64_t> waiting;

  // Liveness: when it last sent a byte or accepted our connect.
  TimeNs last_heard_ns = 0;
  TimeNs last_ping_ns = 0;

  // Dialling: the next attempt not before next_dial_ns; the wait after the
  // next failure is backoff_ns (0 = reconnect_min).
  TimeNs next_dial_ns = 0;
  DurationNs backoff_ns = 0;
  bool lost_connection = false;  // a connection died or a dial failed since the last handshake

  // Acks: the highest floor the peer has been told, and when an ACK frame is
  // due if no request carries a higher one first. ClientRpcs.
  uint64_t floor_sent = 0;
  TimeNs ack_due_ns = kNever;

  // When its last connection closed (kNever while it has one): its server
  // state is dropped, and the Peer itself, after 2 x peer_timeout.
  TimeNs disconnected_since_ns = kNever;

  // The TOS byte everything to it is marked with (-1: the socket's
  // default): the class selector of the latest priority a message to or
  // from it asked for (one stream per peer: the marking is the peer's, not
  // a message's). Every connection of the peer gets it.
  int tos = -1;

  size_t CountOpen() const;
  size_t CountInboundOpen() const;
  size_t CountOutboundLive() const;  // dialled and not closed (any state)
  // The open connection with the fewest queued bytes, or nullptr.
  Connection* LeastLoaded() const;
  void RemoveConnection(const Connection* conn);

  // Backoff: a dial failed or a connection died at `now`.
  void OnConnectionLost(TimeNs now, const TcpConfig& config);
  // A handshake completed (or nothing waits any more): the next loss
  // retries after reconnect_min again.
  void OnHandshake() {
    backoff_ns = 0;
    next_dial_ns = 0;
  }
};

// Owned by the transport. Single-threaded.
class PeerTable {
 public:
  Peer& Get(const transport::NetAddress& identity);
  Peer* Find(const transport::NetAddress& identity);
  void Erase(const transport::NetAddress& identity) { peers_.erase(identity); }
  size_t size() const { return peers_.size(); }
  template <typename Fn>
  void ForEach(Fn&& fn) {
    for (auto& [identity, peer] : peers_) fn(*peer);
  }
  // Identities of every peer (to iterate while erasing).
  std::vector<transport::NetAddress> Identities() const;

 private:
  std::unordered_map<transport::NetAddress, std::unique_ptr<Peer>> peers_;
};

}  // namespace wharf::stream
