// homa/rpc.h: Rpc, the state of one request/response exchange on either side.
// Owned by the host's RpcRegistry (client side) or by its client's record in
// the host's peer table (server side; made and freed by the registry);
// everything else borrows it. Each field names the part of the host that
// manages it. Single-threaded (the host's).
#pragma once

#include <cstdint>
#include <optional>

#include "base/clock.h"
#include "homa/incoming.h"
#include "homa/outgoing.h"
#include "transport/net_address.h"

namespace wharf::homa {

struct Peer;
class HomaEndpoint;

// State machine. Client: kClientSending -> kClientReceiving -> (deleted once
// the response is complete, failed or cancelled). Server: kServerReceiving ->
// kServerInService (request handed to the application) -> kServerSending ->
// kServerAwaitAck -> (deleted when the client acknowledges; a tombstone keeps
// late duplicates from re-creating it).
enum class RpcState : uint8_t {
  kClientSending,    // request going out; no response byte yet
  kClientReceiving,  // response arriving
  kServerReceiving,  // request arriving
  kServerInService,  // request delivered; waiting for SendResponse
  kServerSending,    // response going out
  kServerAwaitAck,   // response fully sent; kept until the client acks
};

const char* RpcStateName(RpcState state);

struct Rpc {
  // Our id: even on the client; client id ^ 1 on the server. Packets we send
  // carry it; packets from the peer carry id ^ 1.
  uint64_t id = 0;
  // Host-wide unique, in creation order: breaks ties in the grant and
  // send queues (older first), and keys the GrantRanking. RpcRegistry.
  uint64_t handle = 0;
  RpcState state = RpcState::kClientSending;
  transport::NetAddress peer_addr;
  uint16_t peer_port = 0;
  Peer* peer = nullptr;  // borrowed from the peer table, which outlives RPCs
  // Our endpoint the RPC belongs to (borrowed: an endpoint ends its RPCs
  // when it closes), and its id: the sport of every packet we send for it.
  HomaEndpoint* endpoint = nullptr;
  uint16_t local_port = 0;
  // Opaque to the protocol; returned in completion events (client side).
  uint64_t cookie = 0;
  // Client: the request's first DATA packet asks for its transmit stamp
  // (cleared once it left), and the stamp, on the monotonic clock (0:
  // none yet), which the response's event carries.
  bool stamp_departure = false;
  TimeNs departed_ns = 0;

  std::optional<OutgoingMessage> out;
  std::optional<IncomingMessage> in;

  // Timer ticks since the peer last sent anything for this RPC (reset by
  // Heard; counted by LivenessTimer).
  int silent_ticks = 0;
  // Ticks since our last RESEND (or NEED_ACK) for it; starts "long ago".
  // A probe held back by a per-tick budget stays due, so budgets delay
  // probes but never starve an RPC. LivenessTimer.
  int ticks_since_probe = 1 << 20;
  // Bytes of `in` granted (or sent unscheduled) but not yet received; its
  // share of the host's total, which max_incoming_bytes bounds.
  // GrantScheduler.
  uint64_t outstanding_bytes = 0;
  // Client: times the request was restarted after RPC_UNKNOWN.
  int restarts = 0;
  // Place in the Sender's SRPT SendQueue: heap index (-1 when not queued)
  // and the untransmitted bytes it is ranked by.
  int64_t send_index = -1;
  uint32_t send_key = 0;
  // Neighbours in the RpcRegistry's list of all live RPCs (every
  // endpoint's), oldest first (the timer walks it; the tables that own RPCs
  // are not ordered).
  Rpc* older = nullptr;
  Rpc* newer = nullptr;

  bool is_client() const { return (id & 1) == 0; }
  // The peer sent something about this RPC.
  void Heard() { silent_ticks = 0; }
  uint64_t client_id() const { return id & ~uint64_t{1}; }
};

}  // namespace wharf::homa
