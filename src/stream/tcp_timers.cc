// TcpMessageTransport's timers: handshake deadlines, idle connections, peer
// death by silence, PINGs, delayed ACKs, reconnects, and forgetting peers
// that went away. Tick runs
// what is due and computes when it must run next; state changes that may
// bring a deadline forward set timers_dirty_, which makes the next Poll tick.
#include <algorithm>
#include <string>
#include <vector>

#include "stream/tcp_transport.h"

namespace wharf::stream {

bool TcpMessageTransport::NeedsDial(const Peer& peer) const {
  // Connections it opened to us serve as well as ours, both ways.
  return !peer.outstanding.empty() && peer.CountInboundOpen() == 0 &&
         peer.CountOutboundLive() < static_cast<size_t>(config_.connections_per_peer);
}

TimeNs TcpMessageTransport::IdleDeadline(const Connection& conn) const {
  const Peer* peer = conn.peer;
  if (peer == nullptr || !peer->outstanding.empty() || conn.queue().HasWork()) return kNever;
  // Its requests that our application still holds: the client waits (and
  // pings), so it is not idle; answered but unacknowledged ones do not count.
  if (const ClientRecord* record = table_.Find(peer->identity); record != nullptr) {
    if (record->in_progress > 0) return kNever;
  }
  return conn.last_read_ns + config_.idle_timeout_ns;
}

int TcpMessageTransport::Tick() {
  timers_dirty_ = false;
  int work = 0;
  TimeNs next = kNever;
  // Handshakes (and connects) that did not finish in time.
  std::vector<Connection*> late;
  std::vector<Connection*> idle;
  for (auto& [id, conn] : conns_) {
    if (conn->open()) {
      const TimeNs idle_at = IdleDeadline(*conn);
      if (idle_at <= now_) {
        idle.push_back(conn.get());
      } else {
        next = std::min(next, idle_at);
      }
      continue;
    }
    if (conn->deadline_ns <= now_) {
      late.push_back(conn.get());
    } else {
      next = std::min(next, conn->deadline_ns);
    }
  }
  for (Connection* conn : late) {
    const CloseKind kind = conn->state() == Connection::State::kConnecting
                               ? CloseKind::kConnectFailed
                               : CloseKind::kTimeout;
    Close(*conn,
          DeadlineExceededError("no handshake from " + conn->remote().ToString() + " within " +
                                std::to_string(config_.peer_timeout_ns / kNsPerMs) +
                                " ms (tcp.peer_timeout)"),
          kind);
    ++work;
  }
  for (Connection* conn : idle) {
    Close(*conn,
          UnavailableError("nothing pending and nothing heard for " +
                           std::to_string(config_.idle_timeout_ns / kNsPerMs) +
                           " ms (tcp.idle_timeout)"),
          CloseKind::kIdle);
    ++work;
  }
  for (const transport::NetAddress& identity : peers_.Identities()) {
    Peer* peer = peers_.Find(identity);
    if (peer != nullptr) work += TickPeer(*peer, &next);
  }
  // Received-message blocks nobody took for a while go back to the system.
  (void)pool_->ReleaseIdle(now_);
  if (pool_->HasKeptBlocks()) {
    next = std::min(next, now_ + transport::LargeBufferPool::kIdleIntervalNs);
  }
  // Work done above (a new dial, a close) may have set new deadlines.
  if (timers_dirty_) next = now_;
  timers_dirty_ = false;
  next_timer_ns_ = next;
  return work;
}

int TcpMessageTransport::TickPeer(Peer& peer, TimeNs* next) {
  int work = 0;
  const DurationNs timeout = config_.peer_timeout_ns;

  // Peer death: an RPC fails once neither it nor its peer has shown any
  // sign of life for the timeout. Ids ascend with start time, so the first
  // survivor bounds the rest.
  if (!peer.outstanding.empty()) {
    std::vector<uint64_t> dead;
    for (uint64_t id : peer.outstanding) {
      const ClientRpc* rpc = FindClientRpc(id);
      const TimeNs since = std::max(peer.last_heard_ns, rpc != nullptr ? rpc->start_ns : now_);
      if (since + timeout > now_) {
        *next = std::min(*next, since + timeout);
        break;
      }
      dead.push_back(id);
    }
    for (uint64_t id : dead) {
      ClientRpc* rpc = FindClientRpc(id);
      if (rpc == nullptr) continue;
      ++stats_.client_timeouts;
      FailClientRpc(*rpc, UnavailableError("tcp: no answer from " + peer.identity.ToString() +
                                           " for " + std::to_string(timeout / kNsPerMs) +
                                           " ms (RPC " + std::to_string(id) +
                                           "); peer presumed dead (tcp.peer_timeout)"));
      ++work;
    }
    if (!dead.empty()) {
      // Whatever connections it has are as silent as it is.
      std::vector<Connection*> conns = peer.connections;
      for (Connection* c : conns) {
        Close(*c, UnavailableError("peer presumed dead"), CloseKind::kTimeout);
      }
    }
  }

  // PING a quiet peer we are waiting on. Every live connection gets one: a
  // silently dead path shows up as the peer's silence.
  if (!peer.outstanding.empty()) {
    const ClientRpc* oldest = FindClientRpc(*peer.outstanding.begin());
    const TimeNs quiet_since = std::max({peer.last_heard_ns, peer.last_ping_ns,
                                         oldest != nullptr ? oldest->start_ns : now_});
    const TimeNs due = quiet_since + config_.ping_interval_ns;
    if (due <= now_) {
      bool sent = false;
      for (Connection* c : peer.connections) {
        if (c->state() != Connection::State::kOpen && c->state() != Connection::State::kHandshake) {
          continue;
        }
        c->queue().AddControl({.type = wire::StreamFrameType::kPing, .rpc_id = next_ping_nonce_++});
        MarkDirty(*c);
        ++stats_.pings_sent;
        sent = true;
      }
      if (sent) {
        peer.last_ping_ns = now_;
        ++work;
      }
      *next = std::min(*next, now_ + config_.ping_interval_ns);
    } else {
      *next = std::min(*next, due);
    }
  }

  // Delayed ACK: no request carried the risen floor in time.
  if (peer.ack_due_ns != kNever) {
    if (peer.ack_due_ns <= now_) {
      peer.ack_due_ns = kNever;
      const uint64_t floor = ClientFloor(peer);
      Connection* conn = peer.LeastLoaded();
      if (floor > peer.floor_sent && conn != nullptr) {
        conn->queue().AddControl({.type = wire::StreamFrameType::kAck, .ack_floor = floor});
        MarkDirty(*conn);
        peer.floor_sent = floor;
        ++stats_.acks_sent;
        ++work;
      }
    } else {
      *next = std::min(*next, peer.ack_due_ns);
    }
  }

  // Reconnect, with backoff, while RPCs wait on it.
  while (NeedsDial(peer)) {
    if (now_ < peer.next_dial_ns) {
      *next = std::min(*next, peer.next_dial_ns);
      break;
    }
    const size_t before = peer.CountOutboundLive();
    Dial(peer);
    ++work;
    if (peer.CountOutboundLive() == before) {
      *next = std::min(*next, peer.next_dial_ns);
      break;
    }
  }

  // A peer gone for 2 x peer_timeout: it has given up on its RPCs with us,
  // so its at-most-once state can go, and the peer itself once idle.
  if (peer.connections.empty()) {
    if (peer.disconnected_since_ns == kNever) peer.disconnected_since_ns = now_;
    const TimeNs forget_at = peer.disconnected_since_ns + 2 * timeout;
    if (forget_at <= now_) {
      if (table_.Erase(peer.identity,
                       [&](uint64_t id, ServedRpc& served) { DetachResponse(id, served); })) {
        ++stats_.clients_expired;
      }
      if (peer.outstanding.empty()) {
        ++stats_.peers_expired;
        peers_.Erase(peer.identity);  // destroys peer
        return work + 1;
      }
    } else {
      *next = std::min(*next, forget_at);
    }
  }
  return work;
}

}  // namespace wharf::stream
