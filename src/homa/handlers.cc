// HomaHost's packet handlers: dispatch by dport to an endpoint, then one
// function per packet type. Every packet is input from the network: anything
// unexpected is counted and dropped.
#include <string>
#include <variant>
#include <vector>

#include "homa/homa_endpoint.h"
#include "homa/homa_host.h"

namespace wharf::homa {
namespace {

// Packets from a client carry an even id; packets from a server the odd one.
bool FromClient(const wire::CommonHeader& common) { return (common.rpc_id & 1) == 0; }

}  // namespace

void HomaHost::HandleDatagram(const transport::NetAddress& from,
                                   std::span<const std::byte> bytes) {
  ++stats_.packets_received;
  Result<wire::Packet> packet = wire::Decode(bytes);
  if (!packet.ok()) {
    ++stats_.malformed;
    return;
  }
  const wire::CommonHeader& common = packet->common;
  // Only the endpoint id is checked, never the UDP address or port the
  // packet arrived on or came from: a NAT or relay may have rewritten them.
  HomaEndpoint* endpoint = FindEndpoint(common.dport);
  if (endpoint == nullptr) {
    // No such endpoint here: whatever RPC the packet is about, we hold
    // nothing for it, and a stray id must not create state.
    ++stats_.wrong_port;
    HandleStranger(from, *packet);
    return;
  }
  HomaEndpoint& ep = *endpoint;
  const wire::Body& body = packet->body;
  const auto* data = std::get_if<wire::Data>(&body);
  Peer* found = nullptr;
  if (!FromClient(common)) {
    // About one of our client RPCs: its peer is the server we called (the
    // reply may come from another of its addresses); else whatever we know.
    std::unique_ptr<Rpc>* rpc = ep.client_rpcs_.Find(common.rpc_id ^ 1);
    if (rpc != nullptr) {
      found = (*rpc)->peer;
    } else if (HeldByAnotherEndpoint(ep, common.rpc_id ^ 1)) {
      // Ids are unique over the host: this is another endpoint's RPC, and
      // the server addressed the wrong one of ours.
      ++stats_.endpoint_mismatch;
      return;
    } else {
      found = peers_.Find(from);
    }
  } else if (data != nullptr) {
    // Request data is the only packet that may start state here; a full
    // table drops it (counted by the table), and the client retries.
    found = PeerFor(from);
    if (found == nullptr) return;
  } else {
    found = peers_.Find(from);
  }
  if (found == nullptr) {
    ++stats_.from_stranger;
    HandleStranger(from, *packet);
    return;
  }
  Peer& peer = *found;
  peer.last_heard_ns = now_ns_;
  peer.probes_unanswered = 0;
  if (data != nullptr) {
    HandleData(ep, peer, common, *data);
  } else if (const auto* grant = std::get_if<wire::Grant>(&body)) {
    HandleGrant(ep, peer, common, *grant);
  } else if (const auto* resend = std::get_if<wire::Resend>(&body)) {
    HandleResend(ep, peer, common, *resend);
  } else if (std::holds_alternative<wire::RpcUnknown>(body)) {
    HandleRpcUnknown(ep, peer, common);
  } else if (std::holds_alternative<wire::Busy>(body)) {
    HandleBusy(ep, peer, common);
  } else if (const auto* cutoffs = std::get_if<wire::Cutoffs>(&body)) {
    HandleCutoffs(peer, *cutoffs);
  } else if (std::holds_alternative<wire::NeedAck>(body)) {
    HandleNeedAck(ep, peer, common);
  } else if (const auto* acks = std::get_if<wire::AckList>(&body)) {
    // An ACK's rpc_id is the client's ack floor for the endpoint it is
    // addressed to: everything below it is finished (one packet releases a
    // whole burst).
    if (common.rpc_id != 0) {
      AdvanceFloor(peer, EndpointPair(common.dport, common.sport), common.rpc_id);
    }
    for (uint16_t i = 0; i < acks->count; ++i) HandleAck(peer, common.sport, acks->acks[i]);
  }
}

void HomaHost::HandleStranger(const transport::NetAddress& from, const wire::Packet& packet) {
  const wire::CommonHeader& common = packet.common;
  if (std::holds_alternative<wire::Resend>(packet.body)) {
    // A client asking about an RPC we hold nothing for (we forgot the peer,
    // or never heard the request): RPC_UNKNOWN makes it restart.
    ++stats_.resends_received;
    EmitControl(from, common.dport, common.sport, common.rpc_id ^ 1, wire::RpcUnknown{});
    ++stats_.rpc_unknown_sent;
  } else if (std::holds_alternative<wire::NeedAck>(packet.body)) {
    // A server asking about an RPC we never made or long finished: ack just
    // that one, with no floor (rpc_id 0), which claims nothing else.
    wire::AckList acks;
    acks.acks[0] = {common.rpc_id ^ 1, common.sport};
    acks.count = 1;
    EmitControl(from, common.dport, common.sport, 0, acks);
    ++stats_.acks_sent;
  }
}

void HomaHost::HandlePathError(const transport::PathError& error) {
  ++stats_.path_errors;
  if (!error.unreachable()) return;  // advisory (e.g. fragmentation needed)
  Peer* peer = peers_.Find(error.to);
  if (peer == nullptr) return;
  ++stats_.peers_unreachable;
  // Collect first: failing and destroying unlinks RPCs from the list.
  std::vector<Rpc*> doomed;
  for (Rpc* rpc = oldest_rpc_; rpc != nullptr; rpc = rpc->newer) {
    if (rpc->peer == peer) doomed.push_back(rpc);
  }
  const std::string reason =
      std::string(transport::PathError::KindName(error.kind)) +
      (error.reporter.family() != transport::NetAddress::Family::kNone
           ? " (reported by " + error.reporter.ToString() + ")"
           : std::string());
  for (Rpc* rpc : doomed) {
    if (rpc->is_client()) {
      ++stats_.unreachable_failures;
      FailClientRpc(*rpc, UnavailableError("homa: " + peer->addr.ToString() + ": " + reason +
                                           " (RPC " + std::to_string(rpc->id) +
                                           "); peer presumed dead"));
    } else {
      DestroyServerRpc(*rpc, /*tombstone=*/true);
    }
  }
}

ClientRecord* HomaHost::RecordFor(Peer& peer, uint32_t pair) {
  auto it = peer.clients.find(pair);
  if (it != peer.clients.end()) return &it->second;
  if (peer.clients.size() >= config_.max_clients_per_peer) {
    ++stats_.clients_refused;
    return nullptr;
  }
  return &peer.clients[pair];
}

Rpc* HomaHost::FindRpcFor(HomaEndpoint& ep, Peer& peer, const wire::CommonHeader& common) {
  if (FromClient(common)) {
    auto record = peer.clients.find(EndpointPair(ep.id_, common.sport));
    return record == peer.clients.end() ? nullptr : record->second.Find(common.rpc_id);
  }
  std::unique_ptr<Rpc>* rpc = ep.client_rpcs_.Find(common.rpc_id ^ 1);
  return rpc == nullptr ? nullptr : rpc->get();
}

void HomaHost::HandleData(HomaEndpoint& ep, Peer& peer, const wire::CommonHeader& common,
                          const wire::Data& data) {
  ++stats_.data_received;
  // Acks and the floor ride on DATA in either direction; handle them first,
  // they may release other RPCs. The floor goes first: an ack below it then
  // needs no tombstone (the floor covers it), which saves inserting one
  // only to erase it again for nearly every RPC.
  if (FromClient(common) && data.header.ack_floor != 0) {
    AdvanceFloor(peer, EndpointPair(ep.id_, common.sport), data.header.ack_floor);
  }
  if (data.header.ack.client_id != 0) HandleAck(peer, common.sport, data.header.ack);
  // A sender using stale cutoffs gets ours (at most once per peer per tick).
  if (data.header.cutoff_version != config_.cutoff_version &&
      peer.cutoffs_sent_tick != tick_count_) {
    peer.cutoffs_sent_tick = tick_count_;
    wire::Cutoffs cutoffs;
    cutoffs.unsched_cutoffs = config_.unsched_cutoffs;
    cutoffs.version = config_.cutoff_version;
    EmitControl(peer.addr, ep.id_, common.sport, common.rpc_id ^ 1, cutoffs);
    ++stats_.cutoffs_sent;
  }
  if (FromClient(common)) {
    HandleRequestData(ep, peer, common, data);
  } else {
    HandleResponseData(ep, peer, common, data);
  }
}

void HomaHost::HandleRequestData(HomaEndpoint& ep, Peer& peer, const wire::CommonHeader& common,
                                 const wire::Data& data) {
  ClientRecord* known = RecordFor(peer, EndpointPair(ep.id_, common.sport));
  if (known == nullptr) return;
  ClientRecord& record = *known;
  Rpc* found = record.Find(common.rpc_id);
  if (found == nullptr) {
    // At-most-once: a finished RPC is never re-created by a late packet.
    if (record.IsFinished(common.rpc_id)) {
      ++stats_.late_duplicates;
      return;
    }
    if (data.header.message_length > config_.max_message_bytes) {
      // Refuse it once, explicitly: the RPC goes to the application as a
      // failed request, which answers with the error. From then on it is an
      // ordinary RPC (acks, at-most-once); its other packets are duplicates.
      ++stats_.oversize_dropped;
      Rpc& rpc = NewServerRpc(ep, peer, record, common.sport, common.rpc_id,
                              RpcState::kServerInService);
      rpc.Heard();
      HomaEvent event;
      event.kind = HomaEvent::Kind::kRequest;
      event.client_id = common.rpc_id;
      event.server_key = {peer.addr, common.sport, common.rpc_id};
      event.status = ResourceExhaustedError(
          "request of " + std::to_string(data.header.message_length) +
          " bytes is over the server's homa.max_message_bytes (" +
          std::to_string(config_.max_message_bytes) + ")");
      ep.PushEvent(std::move(event));
      return;
    }
    if (!ReserveIncoming(data.header.message_length)) {
      ++stats_.memory_dropped;
      return;
    }
    found = &NewServerRpc(ep, peer, record, common.sport, common.rpc_id,
                          RpcState::kServerReceiving);
    StartIncoming(*found, ep, data);
  }
  Rpc& rpc = *found;
  rpc.Heard();
  if (rpc.state != RpcState::kServerReceiving) {
    ++stats_.duplicate_data;  // the request is complete; this is a copy
    return;
  }
  if (data.header.message_length != rpc.in->length()) {
    ++stats_.malformed;  // inconsistent with earlier packets of this message
    return;
  }
  if (rpc.in->AddData(data.header.offset, data.payload, data.header.incoming) == 0 &&
      data.header.message_length != 0) {
    ++stats_.duplicate_data;
  }
  UpdateOutstanding(rpc);
  if (rpc.in->complete()) {
    DeliverRequest(rpc, {peer.addr, common.sport, common.rpc_id});
  } else if (rpc.in->NeedsGrants()) {
    grants_.Upsert(rpc.handle, peer.id, rpc.in->bytes_remaining(), rpc.in->birth_ns(), &rpc);
    grants_dirty_ = true;
  }
}

void HomaHost::HandleResponseData(HomaEndpoint& ep, Peer& peer, const wire::CommonHeader& common,
                                  const wire::Data& data) {
  std::unique_ptr<Rpc>* found = ep.client_rpcs_.Find(common.rpc_id ^ 1);
  if (found == nullptr) {
    ++stats_.duplicate_data;  // finished or cancelled; the server gets our ack
    return;
  }
  Rpc& rpc = **found;
  rpc.Heard();
  if (!rpc.in) {
    if (data.header.message_length > config_.max_message_bytes) {
      ++stats_.oversize_dropped;
      FailClientRpc(rpc, ResourceExhaustedError(
                             "homa: response of " + std::to_string(data.header.message_length) +
                             " bytes from " + peer.addr.ToString() +
                             " exceeds homa.max_message_bytes (" +
                             std::to_string(config_.max_message_bytes) + ")"));
      return;
    }
    if (!ReserveIncoming(data.header.message_length)) {
      ++stats_.memory_dropped;
      return;
    }
    StartIncoming(rpc, ep, data);
    rpc.state = RpcState::kClientReceiving;
    // A response means the server holds the whole request: stop sending it.
    DequeueFromSend(rpc);
    FlushBorrowed();  // a held batch may still point into the request
    rpc.out.reset();
  }
  if (data.header.message_length != rpc.in->length()) {
    ++stats_.malformed;
    return;
  }
  if (rpc.in->AddData(data.header.offset, data.payload, data.header.incoming) == 0 &&
      data.header.message_length != 0) {
    ++stats_.duplicate_data;
  }
  UpdateOutstanding(rpc);
  if (rpc.in->complete()) {
    HomaEvent event;
    event.kind = HomaEvent::Kind::kResponse;
    event.client_id = rpc.id;
    event.cookie = rpc.cookie;
    event.message = rpc.in->TakeMessage();
    ++stats_.responses_delivered;
    ep.PushEvent(std::move(event));
    FinishClientRpc(rpc);
  } else if (rpc.in->NeedsGrants()) {
    grants_.Upsert(rpc.handle, peer.id, rpc.in->bytes_remaining(), rpc.in->birth_ns(), &rpc);
    grants_dirty_ = true;
  }
}

void HomaHost::HandleGrant(HomaEndpoint& ep, Peer& peer, const wire::CommonHeader& common,
                           const wire::Grant& grant) {
  Rpc* rpc = FindRpcFor(ep, peer, common);
  if (rpc == nullptr || !rpc->out) return;
  rpc->Heard();
  if (rpc->out->HandleGrant(grant.offset, grant.priority)) {
    QueueForSend(*rpc);
  } else if (!rpc->out->HasPacketReady()) {
    // A repeated grant is the receiver's keep-alive while it serves other
    // messages first: answer that we are still here.
    EmitControl(peer.addr, rpc->local_port, common.sport, rpc->id, wire::Busy{});
    ++stats_.busy_sent;
  }
}

void HomaHost::HandleResend(HomaEndpoint& ep, Peer& peer, const wire::CommonHeader& common,
                            const wire::Resend& resend) {
  ++stats_.resends_received;
  Rpc* rpc = FindRpcFor(ep, peer, common);
  if (rpc == nullptr) {
    // We never had it (its request was lost) or no longer have it: RPC_UNKNOWN
    // makes a client restart and a server discard. Also for an RPC we
    // finished: a client that asks still waits for it (we timed it out), and
    // its restarts stay harmless, because request packets of finished RPCs
    // are dropped; homa.max_restarts then ends its wait.
    EmitControl(peer.addr, ep.id_, common.sport, common.rpc_id ^ 1, wire::RpcUnknown{});
    ++stats_.rpc_unknown_sent;
    return;
  }
  rpc->Heard();
  bool all_sent = false;
  if (rpc->out) {
    all_sent = rpc->out->HandleResend(resend.offset, resend.length, resend.priority);
    QueueForSend(*rpc);
  }
  if (!all_sent) {
    // Alive, but the bytes are not ready (handler still running, or held
    // back by the pacer): keep the peer from timing us out.
    EmitControl(peer.addr, rpc->local_port, common.sport, rpc->id, wire::Busy{});
    ++stats_.busy_sent;
  }
}

void HomaHost::HandleRpcUnknown(HomaEndpoint& ep, Peer& peer, const wire::CommonHeader& common) {
  Rpc* rpc = FindRpcFor(ep, peer, common);
  if (rpc == nullptr) return;
  if (!rpc->is_client()) {
    // The client no longer wants this RPC.
    DestroyServerRpc(*rpc, /*tombstone=*/true);
    return;
  }
  if (rpc->state == RpcState::kClientSending && rpc->out) {
    // The server never got our request (or dropped it): send it all again,
    // but not forever: a server that keeps refusing it (e.g. the request is
    // over its homa.max_message_bytes) makes the RPC fail.
    if (++rpc->restarts > config_.max_restarts) {
      FailClientRpc(*rpc, UnavailableError(
                              "homa: server " + peer.addr.ToString() + " did not keep request " +
                              std::to_string(rpc->id) + " after " + std::to_string(rpc->restarts) +
                              " restarts (it may have timed the RPC out)"));
      return;
    }
    rpc->out->Restart();
    rpc->Heard();
    ++stats_.restarts;
    QueueForSend(*rpc);
    return;
  }
  FailClientRpc(*rpc, UnavailableError("homa: server " + peer.addr.ToString() +
                                       " lost RPC " + std::to_string(rpc->id) +
                                       " while responding (did it restart?)"));
}

void HomaHost::HandleBusy(HomaEndpoint& ep, Peer& peer, const wire::CommonHeader& common) {
  if (Rpc* rpc = FindRpcFor(ep, peer, common)) rpc->Heard();
}

void HomaHost::HandleCutoffs(Peer& peer, const wire::Cutoffs& cutoffs) {
  peer.cutoffs = cutoffs.unsched_cutoffs;
  peer.cutoff_version = cutoffs.version;
}

void HomaHost::HandleNeedAck(HomaEndpoint& ep, Peer& peer, const wire::CommonHeader& common) {
  if (FromClient(common)) return;  // only servers ask for acks
  uint64_t client_id = common.rpc_id ^ 1;
  if (ep.client_rpcs_.Contains(client_id)) return;  // still in progress: we will RESEND
  // Finished here: answer with everything this endpoint owes that server
  // port, the asked id included, and its floor.
  OweAck(peer, {client_id, common.sport, ep.id_});
  SendAcks(peer, ep.id_, common.sport);
}

// Acks and floors usually ride on the next request's DATA, so freeing the
// RPCs they finish would sit between that request's arrival and its
// handler. The floor itself is raised at once (it decides whether a packet
// is a late duplicate); the freeing waits for the next Poll, which runs
// while the handler's response is already on its way. Until then a
// finished RPC is still in `live`, where a duplicate packet finds it and is
// dropped as one, as before.
void HomaHost::HandleAck(Peer& peer, uint16_t client_port, const wire::Ack& ack) {
  // The ack names its server endpoint, which need not be the packet's dport
  // (an ack rides on any DATA from the client endpoint that owes it).
  if (FindEndpoint(ack.server_port) == nullptr) return;
  ++stats_.acks_received;
  deferred_releases_.push_back(
      {&peer, EndpointPair(ack.server_port, client_port), ack.client_id, /*is_floor=*/false});
}

void HomaHost::AdvanceFloor(Peer& peer, uint32_t pair, uint64_t floor) {
  // A client we hold no record of has nothing here to finish.
  auto it = peer.clients.find(pair);
  if (it == peer.clients.end()) return;
  ClientRecord& record = it->second;
  if (floor <= record.floor) return;  // floors only rise; older packets carry lower ones
  record.floor = floor;
  deferred_releases_.push_back({&peer, pair, floor, /*is_floor=*/true});
}

void HomaHost::ReleaseFinished() {
  // Index loop: nothing below adds to the list, but keep it robust.
  for (size_t i = 0; i < deferred_releases_.size(); ++i) {
    const DeferredRelease r = deferred_releases_[i];
    if (!r.is_floor) {
      DestroyServerRpc(*r.peer, r.pair, r.id, /*tombstone=*/true);
      continue;
    }
    auto it = r.peer->clients.find(r.pair);
    if (it == r.peer->clients.end()) continue;
    ClientRecord& record = it->second;
    record.tombstones.erase(record.tombstones.begin(), record.tombstones.lower_bound(record.floor));
    // RPCs below the floor are finished as far as the client is concerned.
    while (!record.live.empty() && record.live.begin()->first < record.floor) {
      DestroyServerRpc(*r.peer, r.pair, record.live.begin()->first, /*tombstone=*/false);
    }
  }
  deferred_releases_.clear();
}

}  // namespace wharf::homa
