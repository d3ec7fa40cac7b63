// Peer: connection counts, pool choice and reconnect backoff; PeerTable.
#include "stream/peer.h"

#include <algorithm>

#include "stream/connection.h"

namespace wharf::stream {

size_t Peer::CountOpen() const {
  return static_cast<size_t>(
      std::count_if(connections.begin(), connections.end(), [](const Connection* c) { return c->open(); }));
}

size_t Peer::CountInboundOpen() const {
  return static_cast<size_t>(std::count_if(connections.begin(), connections.end(), [](const Connection* c) {
    return c->open() && !c->outbound();
  }));
}

size_t Peer::CountOutboundLive() const {
  return static_cast<size_t>(std::count_if(connections.begin(), connections.end(), [](const Connection* c) {
    return c->outbound() && !c->closed();
  }));
}

Connection* Peer::LeastLoaded() const {
  Connection* best = nullptr;
  uint64_t best_bytes = 0;
  for (Connection* c : connections) {
    if (!c->open()) continue;
    const uint64_t bytes = c->queue().queued_bytes();
    if (best == nullptr || bytes < best_bytes) {
      best = c;
      best_bytes = bytes;
    }
  }
  return best;
}

void Peer::RemoveConnection(const Connection* conn) {
  connections.erase(std::remove(connections.begin(), connections.end(), conn), connections.end());
}

void Peer::OnConnectionLost(TimeNs now, const TcpConfig& config) {
  lost_connection = true;
  if (backoff_ns == 0) backoff_ns = config.reconnect_min_ns;
  next_dial_ns = now + backoff_ns;
  backoff_ns = std::min(backoff_ns * 2, config.reconnect_max_ns);
}

Peer& PeerTable::Get(const transport::NetAddress& identity) {
  auto& slot = peers_[identity];
  if (!slot) {
    slot = std::make_unique<Peer>();
    slot->identity = identity;
  }
  return *slot;
}

Peer* PeerTable::Find(const transport::NetAddress& identity) {
  auto it = peers_.find(identity);
  return it == peers_.end() ? nullptr : it->second.get();
}

std::vector<transport::NetAddress> PeerTable::Identities() const {
  std::vector<transport::NetAddress> out;
  out.reserve(peers_.size());
  for (const auto& [identity, peer] : peers_) out.push_back(identity);
  return out;
}

}  // namespace wharf::stream
