// RpcRegistry: making, finding and freeing the live RPCs of a host, and the
// list and counts over all of them.
#include "homa/rpc_registry.h"

#include <utility>

namespace wharf::homa {

RpcRegistry::RpcRegistry(uint64_t first_client_id) : next_client_id_(first_client_id) {}

std::unique_ptr<Rpc> RpcRegistry::Allocate() {
  if (spare_rpcs_.empty()) return std::make_unique<Rpc>();
  std::unique_ptr<Rpc> rpc = std::move(spare_rpcs_.back());
  spare_rpcs_.pop_back();
  return rpc;
}

void RpcRegistry::Recycle(std::unique_ptr<Rpc> rpc) {
  if (!kRecycleMemory || spare_rpcs_.size() >= kMaxSpareRpcs) return;
  *rpc = Rpc{};  // drops the messages now; keeps the allocation
  spare_rpcs_.push_back(std::move(rpc));
}

void RpcRegistry::Link(Rpc& rpc, HomaEndpoint* ep, uint16_t ep_id, uint64_t id, RpcState state,
                       Peer& peer, uint16_t peer_port) {
  rpc.id = id;
  rpc.handle = next_handle_++;
  rpc.state = state;
  rpc.peer = &peer;
  ++peer.live_rpcs;
  rpc.peer_addr = peer.addr;
  rpc.peer_port = peer_port;
  rpc.endpoint = ep;
  rpc.local_port = ep_id;
  // Newest at the end of the list of all RPCs.
  rpc.older = newest_;
  rpc.newer = nullptr;
  if (newest_ != nullptr) {
    newest_->newer = &rpc;
  } else {
    oldest_ = &rpc;
  }
  newest_ = &rpc;
  ++num_live_;
  peak_ = std::max(peak_, unanswered());
}

void RpcRegistry::Unlink(Rpc& rpc) {
  --rpc.peer->live_rpcs;
  (rpc.older != nullptr ? rpc.older->newer : oldest_) = rpc.newer;
  (rpc.newer != nullptr ? rpc.newer->older : newest_) = rpc.older;
  rpc.older = rpc.newer = nullptr;
  --num_live_;
  if (rpc.state == RpcState::kServerAwaitAck) --num_awaiting_ack_;
}

Rpc& RpcRegistry::NewClientRpc(HomaEndpoint* ep, uint16_t ep_id, Peer& peer, uint16_t server_port) {
  const uint64_t id = next_client_id_;
  next_client_id_ += 2;
  Rpc& rpc = *clients_.Insert(id, Allocate());
  Link(rpc, ep, ep_id, id, RpcState::kClientSending, peer, server_port);
  peer.outstanding[EndpointPair(ep_id, server_port)].Add(id);
  return rpc;
}

void RpcRegistry::EraseClient(Rpc& rpc) {
  Unlink(rpc);
  Peer& peer = *rpc.peer;
  auto out = peer.outstanding.find(EndpointPair(rpc.local_port, rpc.peer_port));
  if (out != peer.outstanding.end()) out->second.Remove(rpc.id);
  std::unique_ptr<Rpc> owned = std::move(*clients_.Find(rpc.id));
  clients_.Erase(owned->id);
  Recycle(std::move(owned));  // rpc is gone (reset) from here on
}

uint64_t RpcRegistry::ClientFloor(Peer& peer, uint16_t client_port, uint16_t server_port) {
  auto it = peer.outstanding.find(EndpointPair(client_port, server_port));
  if (it == peer.outstanding.end() || it->second.empty()) return next_client_id_;
  return it->second.Floor();
}

Rpc& RpcRegistry::NewServerRpc(HomaEndpoint* ep, uint16_t ep_id, Peer& peer, ClientRecord& record,
                               uint16_t client_port, uint64_t client_id, RpcState state) {
  Rpc& rpc = *live_nodes_.Insert(record.live, client_id, Allocate())->second;
  Link(rpc, ep, ep_id, client_id ^ 1, state, peer, client_port);
  ++num_server_;
  return rpc;
}

void RpcRegistry::EraseServer(ClientRecord& record, decltype(ClientRecord::live)::iterator it) {
  Unlink(*it->second);
  // The rpc goes to the spare pool and the map node is kept, both for reuse.
  live_nodes_.Erase(record.live, it,
                    [this](std::unique_ptr<Rpc>& rpc) { Recycle(std::move(rpc)); });
  --num_server_;
}

RpcRegistry::Counts RpcRegistry::CountOf(const HomaEndpoint* ep) const {
  Counts counts;
  for (const Rpc* rpc = oldest_; rpc != nullptr; rpc = rpc->newer) {
    if (rpc->endpoint != ep) continue;
    ++(rpc->is_client() ? counts.client : counts.server);
  }
  return counts;
}

}  // namespace wharf::homa
