// homa/rpc_registry.h: RpcRegistry, the live RPCs of one host (every endpoint
// of one socket): the table of client RPCs by id, the making and freeing of
// server RPCs (which their client's record in the peer table holds), the list
// of all live RPCs in creation order that the timer walks, their counts, and
// the pool of spare Rpc objects that keeps the steady state free of
// allocations.
//
// It decides nothing about packets, grants or sending: the host takes an RPC
// out of the send queue and the grant scheduler (and flushes the transmit
// batch that may borrow its bytes) before it asks the registry to free it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "base/node_recycler.h"
#include "homa/id_map.h"
#include "homa/peer_table.h"
#include "homa/rpc.h"

namespace wharf::homa {

class HomaEndpoint;

// Owned by HomaHost. Owns its client RPCs and the spare ones; borrows the
// peers (the peer table outlives every RPC) and the endpoints (which end
// their RPCs when they close). Single-threaded: the host's thread.
class RpcRegistry {
 public:
  // Client ids start at `first_client_id` (even) and rise by 2.
  explicit RpcRegistry(uint64_t first_client_id);
  RpcRegistry(const RpcRegistry&) = delete;
  RpcRegistry& operator=(const RpcRegistry&) = delete;

  // --- client RPCs (owned here, by id: ids are unique over the host) ---

  // A new client RPC of endpoint `ep` (whose id is `ep_id`) to `peer`'s
  // endpoint `server_port`, in kClientSending, with the next client id,
  // which joins the ids the ack floor is computed from.
  Rpc& NewClientRpc(HomaEndpoint* ep, uint16_t ep_id, Peer& peer, uint16_t server_port);
  // Our client RPC `id` (of any endpoint), or nullptr.
  Rpc* FindClient(uint64_t id) {
    std::unique_ptr<Rpc>* rpc = clients_.Find(id);
    return rpc == nullptr ? nullptr : rpc->get();
  }
  // Frees client `rpc`: off the list, its id finished for the floor, the
  // object reset for reuse. Precondition: it is in neither the send queue
  // nor the grant scheduler, and nothing borrows its bytes.
  void EraseClient(Rpc& rpc);
  // The ack floor our endpoint `client_port` reports to `peer`'s
  // `server_port`: its smallest unfinished client id there, or the next id
  // when it has none.
  uint64_t ClientFloor(Peer& peer, uint16_t client_port, uint16_t server_port);

  // --- server RPCs (owned by their ClientRecord in the peer table) ---

  // A new server RPC of endpoint `ep` (id `ep_id`) for client RPC
  // `client_id` of `peer`'s endpoint `client_port`, held by `record`.
  Rpc& NewServerRpc(HomaEndpoint* ep, uint16_t ep_id, Peer& peer, ClientRecord& record,
                    uint16_t client_port, uint64_t client_id, RpcState state);
  // Frees the server RPC at `it` in `record.live` (the map node is kept for
  // reuse). Same precondition as EraseClient.
  void EraseServer(ClientRecord& record, decltype(ClientRecord::live)::iterator it);

  // A server RPC whose response is fully sent: kServerAwaitAck, no longer
  // part of the unanswered window.
  void MarkAwaitingAck(Rpc& rpc) {
    rpc.state = RpcState::kServerAwaitAck;
    ++num_awaiting_ack_;
  }

  // --- every live RPC ---

  // The oldest live RPC; Rpc::newer leads on to the newest. Freeing an RPC
  // unlinks only that one.
  Rpc* oldest() const { return oldest_; }
  size_t num_live() const { return num_live_; }
  size_t num_client_rpcs() const { return clients_.size(); }
  size_t num_server_rpcs() const { return num_server_; }
  // Live RPCs but for answered ones awaiting their ack.
  size_t unanswered() const { return num_live_ - num_awaiting_ack_; }
  // The most unanswered RPCs at once since the window before last began
  // (the transmit batch's head is cut from it).
  size_t recent_unanswered_peak() const { return std::max(peak_, peak_before_); }
  // Starts a new window (the timer does, every tick).
  void StartPeakWindow() {
    peak_before_ = peak_;
    peak_ = unanswered();
  }

  // The live client and server RPCs of endpoint `ep`. Walks every RPC: for
  // tests and diagnostics, not for a per-packet path.
  struct Counts {
    size_t client = 0;
    size_t server = 0;
  };
  Counts CountOf(const HomaEndpoint* ep) const;

 private:
  // A fresh Rpc: a spare one when there is one (an allocation per RPC
  // showed in the round-trip profile).
  std::unique_ptr<Rpc> Allocate();
  // Drops rpc's messages now and keeps the object, up to kMaxSpareRpcs.
  void Recycle(std::unique_ptr<Rpc> rpc);
  // Fills in a new RPC and links it in as the newest.
  void Link(Rpc& rpc, HomaEndpoint* ep, uint16_t ep_id, uint64_t id, RpcState state, Peer& peer,
            uint16_t peer_port);
  void Unlink(Rpc& rpc);

  static constexpr size_t kMaxSpareRpcs = 64;

  // Client RPCs by our id (owning).
  IdMap<std::unique_ptr<Rpc>> clients_;
  // The next client id (even) and the next Rpc::handle.
  uint64_t next_client_id_;
  uint64_t next_handle_ = 1;
  // Finished Rpc objects kept for reuse (reset), client and server alike,
  // and the map nodes of ClientRecord::live entries.
  std::vector<std::unique_ptr<Rpc>> spare_rpcs_;
  NodeRecycler<std::map<uint64_t, std::unique_ptr<Rpc>>> live_nodes_;
  // Every live RPC, oldest first, linked through Rpc::older/newer: the
  // timer's walk, in a deterministic order.
  Rpc* oldest_ = nullptr;
  Rpc* newest_ = nullptr;
  size_t num_live_ = 0;          // the list's length
  size_t num_awaiting_ack_ = 0;  // of which in kServerAwaitAck
  size_t num_server_ = 0;        // of which server RPCs
  // The most unanswered RPCs during this window and the one before (see
  // recent_unanswered_peak).
  size_t peak_ = 0;
  size_t peak_before_ = 0;
};

}  // namespace wharf::homa
