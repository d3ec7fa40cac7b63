// HomaHost: construction and endpoints, the endpoints' calls, Poll, the
// packet handlers (one per packet type: every packet is input from the
// network, and anything unexpected is counted and dropped), and the RPC
// lifecycle that keeps the host's parts in step.
#include "homa/homa_host.h"

#include <algorithm>
#include <string>
#include <variant>
#include <vector>

#include "homa/homa_endpoint.h"
#include "wire/endpoint_id.h"

namespace wharf::homa {
namespace {

constexpr size_t kRxBatch = 32;          // datagrams per Receive() call
constexpr int kMaxRxBatchesPerPoll = 8;  // bound the work of one Poll
// Path errors taken from the transport per Poll.
constexpr size_t kPathErrorBatch = 16;

// Packets from a client carry an even id; packets from a server the odd one.
bool FromClient(const wire::CommonHeader& common) { return (common.rpc_id & 1) == 0; }

// Client ids start from the wall clock so that a restarted client's ids
// exceed every id of its previous incarnation: servers may still hold an
// at-most-once floor for this address and endpoint (docs/protocol.md).
uint64_t FirstClientId(const Clock& clock) {
  return std::max<uint64_t>(2, static_cast<uint64_t>(clock.WallNs())) & ~uint64_t{1};
}

Status CheckPriority(transport::MessagePriority priority) {
  if (transport::IsMessagePriority(priority)) return OkStatus();
  return InvalidArgumentError("homa: priority " + std::to_string(priority) + " is outside 0..7");
}

}  // namespace

Result<std::unique_ptr<HomaHost>> HomaHost::Create(const HomaConfig& config,
                                                   transport::Datagram* net, const Clock& clock) {
  if (net == nullptr) return InvalidArgumentError("homa: no datagram transport");
  WHARF_RETURN_IF_ERROR(ValidateConfig(config, net->MaxDatagramBytes()));
  return std::unique_ptr<HomaHost>(new HomaHost(config, net, clock));
}

HomaHost::HomaHost(const HomaConfig& config, transport::Datagram* net, const Clock& clock)
    : config_(config),
      net_(net),
      clock_(clock),
      max_datagram_bytes_(net->MaxDatagramBytes()),
      peers_(config_),
      rpcs_(FirstClientId(clock)),
      grants_(config, max_datagram_bytes_),
      tx_(net, config.control_priority, &stats_),
      sender_(config, clock, &tx_, &rpcs_, &stats_),
      timer_(config, clock.NowNs()),
      releases_([this](Peer& peer, uint32_t pair, uint64_t client_id, bool tombstone) {
        DestroyServerRpc(peer, pair, client_id, tombstone);
      }) {
  rx_batch_.resize(kRxBatch);
  path_errors_.resize(kPathErrorBatch);
  departures_.resize(kPathErrorBatch);
}

HomaHost::~HomaHost() {
  // Endpoints still open lose their RPCs now and their host: their calls
  // fail from here on instead of touching freed state.
  while (HomaEndpoint* ep = endpoints_.any()) ep->OnHostDestroyed();
}

// -------------------------------------------------------------- endpoints

Result<std::unique_ptr<HomaEndpoint>> HomaHost::OpenEndpoint(uint16_t id) {
  return HomaEndpoint::Open(*this, id);
}

Result<std::unique_ptr<HomaEndpoint>> HomaHost::OpenEndpoint(std::string_view name) {
  const uint16_t id = wire::EndpointIdForName(name);
  Result<std::unique_ptr<HomaEndpoint>> ep = OpenEndpoint(id);
  if (!ep.ok() && !name.empty()) {
    return AlreadyExistsError("homa: endpoint '" + std::string(name) + "' takes id " +
                              std::to_string(id) + ", which is already open on " +
                              net_->LocalAddress().ToString() +
                              " (two names that hash alike cannot share a socket)");
  }
  return ep;
}

Status HomaHost::Register(HomaEndpoint& ep) {
  if (endpoints_.Add(ep.endpoint_id(), &ep)) return OkStatus();
  return AlreadyExistsError("homa: endpoint " + std::to_string(ep.endpoint_id()) +
                            " is already open on " + net_->LocalAddress().ToString());
}

void HomaHost::CloseEndpoint(HomaEndpoint& ep, const Status& status) {
  if (endpoints_.Find(ep.endpoint_id()) != &ep) return;
  // What the endpoint asked to send goes out before its messages are freed.
  tx_.Flush();
  // Acks and floors already received may name its RPCs: apply them first.
  if (!releases_.empty()) releases_.Release();
  // Collect first: failing and destroying unlinks RPCs from the list.
  std::vector<Rpc*> doomed;
  for (Rpc* rpc = rpcs_.oldest(); rpc != nullptr; rpc = rpc->newer) {
    if (rpc->endpoint == &ep) doomed.push_back(rpc);
  }
  for (Rpc* rpc : doomed) {
    if (rpc->is_client()) {
      FailClientRpc(*rpc, status);  // its ack tells the server to forget it
    } else {
      DestroyServerRpc(*rpc, /*tombstone=*/true);
    }
  }
  endpoints_.Remove(ep.endpoint_id(), &ep);
}

// ------------------------------------------------------ the endpoints' calls

Result<uint64_t> HomaHost::SendRequest(HomaEndpoint& ep, const transport::NetAddress& server,
                                       uint16_t server_port, Buffer request, uint64_t cookie,
                                       const transport::SendOptions& options) {
  if (server.family() == transport::NetAddress::Family::kNone) {
    return InvalidArgumentError("homa: request to an empty address");
  }
  WHARF_RETURN_IF_ERROR(CheckPriority(options.priority));
  if (request.size() > config_.max_message_bytes) {
    return InvalidArgumentError("homa: request of " + std::to_string(request.size()) +
                                " bytes exceeds homa.max_message_bytes (" +
                                std::to_string(config_.max_message_bytes) + ")");
  }
  Peer* found = PeerFor(server);
  if (found == nullptr) {
    return ResourceExhaustedError("homa: cannot call " + server.ToString() + ": " +
                                  std::to_string(peers_.size()) +
                                  " peers with live RPCs fill homa.max_peers");
  }
  Peer& peer = *found;
  peers_.LearnPath(peer, *net_, max_datagram_bytes_);
  Rpc& rpc = rpcs_.NewClientRpc(&ep, ep.endpoint_id(), peer, server_port);
  rpc.cookie = cookie;
  rpc.stamp_departure = options.stamp_departure;
  const uint32_t length = static_cast<uint32_t>(request.size());
  rpc.out.emplace(std::move(request), config_.unsched_bytes, peer.payload_bytes,
                  peer.UnschedPriority(length, options.priority));
  sender_.Queue(rpc);
  sender_.Pump(&now_ns_, /*clock_fresh=*/false);
  FlushUnlessHeld();
  // A loopback or software path stamps the packet inside the send: taking
  // the stamp now spares the loop the wake-up its error queue would cause.
  if (options.stamp_departure) TakeDepartures();
  return rpc.id;
}

Status HomaHost::SendResponse(HomaEndpoint& ep, const ServerRpcKey& key, Buffer response,
                              transport::MessagePriority priority) {
  WHARF_RETURN_IF_ERROR(CheckPriority(priority));
  Rpc* found = FindServerRpc(ep, key);
  if (found == nullptr) {
    return NotFoundError("homa: RPC " + std::to_string(key.client_id) + " from " +
                         key.client.ToString() +
                         " is gone (the client finished, cancelled or timed out)");
  }
  Rpc& rpc = *found;
  if (rpc.state != RpcState::kServerInService) {
    return FailedPreconditionError("homa: RPC " + std::to_string(key.client_id) + " from " +
                                   key.client.ToString() + " was already answered");
  }
  if (response.size() > config_.max_message_bytes) {
    return InvalidArgumentError("homa: response of " + std::to_string(response.size()) +
                                " bytes exceeds homa.max_message_bytes (" +
                                std::to_string(config_.max_message_bytes) + ")");
  }
  peers_.LearnPath(*rpc.peer, *net_, max_datagram_bytes_);
  const uint32_t length = static_cast<uint32_t>(response.size());
  rpc.out.emplace(std::move(response), config_.unsched_bytes, rpc.peer->payload_bytes,
                  rpc.peer->UnschedPriority(length, priority));
  rpc.state = RpcState::kServerSending;
  rpc.Heard();
  sender_.Queue(rpc);
  sender_.Pump(&now_ns_, /*clock_fresh=*/false);
  FlushUnlessHeld();
  return OkStatus();
}

bool HomaHost::Cancel(HomaEndpoint& ep, uint64_t client_id) {
  Rpc* rpc = rpcs_.FindClient(client_id);
  if (rpc == nullptr || rpc->endpoint != &ep) return false;
  FinishClientRpc(*rpc);
  return true;
}

// ------------------------------------------------------------------- Poll

PollResult HomaHost::Poll() {
  PollResult result;
  const TimeNs now = now_ns_ = clock_.NowNs();
  result.now = now;
  if (!releases_.empty()) releases_.Release();
  // Before the receives: a request's departure is then known when its
  // response completes in this same Poll.
  TakeDepartures();
  for (int batch = 0; batch < kMaxRxBatchesPerPoll; ++batch) {
    Result<size_t> got = net_->Receive(rx_batch_);
    if (!got.ok() || *got == 0) break;
    for (size_t i = 0; i < *got; ++i) {
      rx_received_ns_ = rx_batch_[i].received_ns;
      HandleDatagram(rx_batch_[i].from, rx_batch_[i].bytes);
    }
    rx_received_ns_ = 0;
    result.work += static_cast<int>(*got);
    if (*got < rx_batch_.size()) break;
  }
  // Free (a flag test) unless the kernel reported an error.
  if (size_t errors = net_->TakePathErrors(path_errors_); errors > 0) {
    for (size_t i = 0; i < errors; ++i) HandlePathError(path_errors_[i]);
    result.work += static_cast<int>(errors);
  }
  if (grants_.pass_due()) SendGrants();
  if (timer_.Due(now)) {
    releases_.Release();  // the timer must not probe an RPC already acked
    const uint64_t sent_before = stats_.packets_sent;
    Tick(now);
    rpcs_.StartPeakWindow();
    // A tick that sent nothing (the common, idle one) is not progress: a
    // host that spins after work must not spin after every tick.
    if (stats_.packets_sent != sent_before) ++result.work;
  }
  result.work += sender_.Pump(&now_ns_, /*clock_fresh=*/true);
  tx_.Flush();

  result.next_deadline = NextDeadline();
  if (!sender_.idle()) result.next_deadline = std::max(now, result.next_deadline);
  return result;
}

bool HomaHost::Idle() const { return sender_.idle() && releases_.empty() && rpcs_.num_live() == 0; }

TimeNs HomaHost::NextDeadline() const {
  TimeNs next = timer_.NextDeadline(Idle());
  if (!sender_.idle()) next = std::min(next, sender_.NextSendTime());
  return next;
}

std::vector<std::pair<std::string, uint64_t>> HomaHost::Counters() const {
  std::vector<std::pair<std::string, uint64_t>> all;
  AppendCounters(stats_, &all);
  all.push_back({"homa.peers", peers_.size()});
  all.push_back({"homa.peers_created", peers_.stats().created});
  all.push_back({"homa.peers_freed", peers_.stats().freed});
  all.push_back({"homa.peers_refused", peers_.stats().refused});
  all.push_back({"homa.endpoints", endpoints_.size()});
  const transport::LargeBufferPool::Stats pool = receive_pool_->stats();
  all.push_back({"homa.receive_buffers_reused", pool.reused});
  all.push_back({"homa.receive_buffers_allocated", pool.allocated});
  all.push_back({"homa.receive_pool_bytes", pool.kept_bytes});
  all.push_back({"homa.receive_pool_freed_idle", pool.freed_idle});
  net_->AppendCounters(&all);  // the socket's own, after the protocol's
  return all;
}

void HomaHost::TakeDepartures() {
  while (true) {
    const size_t n = net_->TakeDepartures(departures_);
    for (size_t i = 0; i < n; ++i) {
      // The token is the client RPC's id; a finished or cancelled one is
      // gone, and its stamp with it.
      if (Rpc* rpc = rpcs_.FindClient(departures_[i].token)) {
        rpc->departed_ns = departures_[i].sent_ns;
      }
    }
    if (n < departures_.size()) return;
  }
}

// ------------------------------------------------------- packet handlers

void HomaHost::HandleDatagram(const transport::NetAddress& from, std::span<const std::byte> bytes) {
  ++stats_.packets_received;
  Result<wire::Packet> packet = wire::Decode(bytes);
  if (!packet.ok()) {
    ++stats_.malformed;
    return;
  }
  const wire::CommonHeader& common = packet->common;
  // Only the endpoint id is checked, never the UDP address or port the
  // packet arrived on or came from: a NAT or relay may have rewritten them.
  HomaEndpoint* endpoint = endpoints_.Find(common.dport);
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
    if (Rpc* rpc = rpcs_.FindClient(common.rpc_id ^ 1)) {
      if (rpc->endpoint != &ep) {
        // Ids are unique over the host: this is another endpoint's RPC, and
        // the server addressed the wrong one of ours.
        ++stats_.endpoint_mismatch;
        return;
      }
      found = rpc->peer;
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
    if (Rpc* rpc = FindRpcFor(ep, peer, common)) rpc->Heard();
  } else if (const auto* cutoffs = std::get_if<wire::Cutoffs>(&body)) {
    peer.cutoffs = cutoffs->unsched_cutoffs;
    peer.cutoff_version = cutoffs->version;
  } else if (std::holds_alternative<wire::NeedAck>(body)) {
    HandleNeedAck(ep, peer, common);
  } else if (const auto* acks = std::get_if<wire::AckList>(&body)) {
    // An ACK's rpc_id is the client's ack floor for the endpoint it is
    // addressed to: everything below it is finished (one packet releases a
    // whole burst).
    if (common.rpc_id != 0) {
      releases_.RaiseFloor(peer, EndpointPair(common.dport, common.sport), common.rpc_id);
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
    tx_.AddControl(from, common.dport, common.sport, common.rpc_id ^ 1, wire::RpcUnknown{});
    ++stats_.rpc_unknown_sent;
  } else if (std::holds_alternative<wire::NeedAck>(packet.body)) {
    // A server asking about an RPC we never made or long finished: ack just
    // that one, with no floor (rpc_id 0), which claims nothing else.
    wire::AckList acks;
    acks.acks[0] = {common.rpc_id ^ 1, common.sport};
    acks.count = 1;
    tx_.AddControl(from, common.dport, common.sport, 0, acks);
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
  for (Rpc* rpc = rpcs_.oldest(); rpc != nullptr; rpc = rpc->newer) {
    if (rpc->peer == peer) doomed.push_back(rpc);
  }
  const std::string reason = std::string(transport::PathError::KindName(error.kind)) +
                             (error.reporter.family() != transport::NetAddress::Family::kNone
                                  ? " (reported by " + error.reporter.ToString() + ")"
                                  : std::string());
  for (Rpc* rpc : doomed) {
    if (rpc->is_client()) {
      ++stats_.unreachable_failures;
      FailClientRpc(*rpc,
                    UnavailableError("homa: " + peer->addr.ToString() + ": " + reason + " (RPC " +
                                     std::to_string(rpc->id) + "); peer presumed dead"));
    } else {
      DestroyServerRpc(*rpc, /*tombstone=*/true);
    }
  }
}

// Inline: once per DATA packet, from the two data handlers below.
inline bool HomaHost::AddData(Rpc& rpc, const wire::Data& data) {
  if (data.header.message_length != rpc.in->length()) {
    ++stats_.malformed;  // inconsistent with earlier packets of this message
    return false;
  }
  if (rpc.in->AddData(data.header.offset, data.payload, data.header.incoming) == 0 &&
      data.header.message_length != 0) {
    ++stats_.duplicate_data;
  }
  grants_.OnData(rpc);
  return true;
}

void HomaHost::HandleData(HomaEndpoint& ep, Peer& peer, const wire::CommonHeader& common,
                          const wire::Data& data) {
  ++stats_.data_received;
  // Acks and the floor ride on DATA in either direction; handle them first,
  // they may release other RPCs. The floor goes first: an ack below it then
  // needs no tombstone (the floor covers it), which saves inserting one
  // only to erase it again for nearly every RPC.
  if (FromClient(common) && data.header.ack_floor != 0) {
    releases_.RaiseFloor(peer, EndpointPair(ep.endpoint_id(), common.sport), data.header.ack_floor);
  }
  if (data.header.ack.client_id != 0) HandleAck(peer, common.sport, data.header.ack);
  // A sender using stale cutoffs gets ours (at most once per peer per tick).
  if (data.header.cutoff_version != config_.cutoff_version &&
      peer.cutoffs_sent_tick != timer_.tick_count()) {
    peer.cutoffs_sent_tick = timer_.tick_count();
    wire::Cutoffs cutoffs;
    cutoffs.unsched_cutoffs = config_.unsched_cutoffs;
    cutoffs.version = config_.cutoff_version;
    tx_.AddControl(peer.addr, ep.endpoint_id(), common.sport, common.rpc_id ^ 1, cutoffs);
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
  ClientRecord* known =
      peer.RecordFor(EndpointPair(ep.endpoint_id(), common.sport), config_.max_clients_per_peer);
  if (known == nullptr) {
    ++stats_.clients_refused;
    return;
  }
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
      Rpc& rpc = rpcs_.NewServerRpc(&ep, ep.endpoint_id(), peer, record, common.sport,
                                    common.rpc_id, RpcState::kServerInService);
      rpc.Heard();
      HomaEvent event;
      event.kind = HomaEvent::Kind::kRequest;
      event.client_id = common.rpc_id;
      event.server_key = {peer.addr, common.sport, common.rpc_id};
      event.status =
          ResourceExhaustedError("request of " + std::to_string(data.header.message_length) +
                                 " bytes is over the server's homa.max_message_bytes (" +
                                 std::to_string(config_.max_message_bytes) + ")");
      ep.PushEvent(std::move(event));
      return;
    }
    if (!grants_.Reserve(data.header.message_length)) {
      ++stats_.memory_dropped;
      return;
    }
    found = &rpcs_.NewServerRpc(&ep, ep.endpoint_id(), peer, record, common.sport, common.rpc_id,
                                RpcState::kServerReceiving);
    StartIncoming(*found, ep, data);
  }
  Rpc& rpc = *found;
  rpc.Heard();
  if (rpc.state != RpcState::kServerReceiving) {
    ++stats_.duplicate_data;  // the request is complete; this is a copy
    return;
  }
  if (AddData(rpc, data) && rpc.in->complete()) {
    DeliverRequest(rpc, {peer.addr, common.sport, common.rpc_id});
  }
}

void HomaHost::HandleResponseData(HomaEndpoint& ep, Peer& peer, const wire::CommonHeader& common,
                                  const wire::Data& data) {
  Rpc* found = rpcs_.FindClient(common.rpc_id ^ 1);
  if (found == nullptr || found->endpoint != &ep) {
    ++stats_.duplicate_data;  // finished or cancelled; the server gets our ack
    return;
  }
  Rpc& rpc = *found;
  rpc.Heard();
  if (!rpc.in) {
    if (data.header.message_length > config_.max_message_bytes) {
      ++stats_.oversize_dropped;
      FailClientRpc(
          rpc, ResourceExhaustedError("homa: response of " +
                                      std::to_string(data.header.message_length) + " bytes from " +
                                      peer.addr.ToString() + " exceeds homa.max_message_bytes (" +
                                      std::to_string(config_.max_message_bytes) + ")"));
      return;
    }
    if (!grants_.Reserve(data.header.message_length)) {
      ++stats_.memory_dropped;
      return;
    }
    StartIncoming(rpc, ep, data);
    rpc.state = RpcState::kClientReceiving;
    // A response means the server holds the whole request: stop sending it.
    sender_.Dequeue(rpc);
    tx_.FlushBorrowed();  // a held batch may still point into the request
    rpc.out.reset();
  }
  if (AddData(rpc, data) && rpc.in->complete()) {
    HomaEvent event;
    event.kind = HomaEvent::Kind::kResponse;
    event.client_id = rpc.id;
    event.cookie = rpc.cookie;
    event.message = rpc.in->TakeMessage();
    event.received_ns = rx_received_ns_;
    event.sent_ns = rpc.departed_ns;
    ++stats_.responses_delivered;
    ep.PushEvent(std::move(event));
    FinishClientRpc(rpc);
  }
}

void HomaHost::HandleGrant(HomaEndpoint& ep, Peer& peer, const wire::CommonHeader& common,
                           const wire::Grant& grant) {
  Rpc* rpc = FindRpcFor(ep, peer, common);
  if (rpc == nullptr || !rpc->out) return;
  rpc->Heard();
  if (rpc->out->HandleGrant(grant.offset, grant.priority)) {
    sender_.Queue(*rpc);
  } else if (!rpc->out->HasPacketReady()) {
    // A repeated grant is the receiver's keep-alive while it serves other
    // messages first: answer that we are still here.
    tx_.AddControl(peer.addr, rpc->local_port, common.sport, rpc->id, wire::Busy{});
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
    tx_.AddControl(peer.addr, ep.endpoint_id(), common.sport, common.rpc_id ^ 1,
                   wire::RpcUnknown{});
    ++stats_.rpc_unknown_sent;
    return;
  }
  rpc->Heard();
  bool all_sent = false;
  if (rpc->out) {
    all_sent = rpc->out->HandleResend(resend.offset, resend.length, resend.priority);
    sender_.Queue(*rpc);
  }
  if (!all_sent) {
    // Alive, but the bytes are not ready (handler still running, or held
    // back by the pacer): keep the peer from timing us out.
    tx_.AddControl(peer.addr, rpc->local_port, common.sport, rpc->id, wire::Busy{});
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
      FailClientRpc(*rpc, UnavailableError("homa: server " + peer.addr.ToString() +
                                           " did not keep request " + std::to_string(rpc->id) +
                                           " after " + std::to_string(rpc->restarts) +
                                           " restarts (it may have timed the RPC out)"));
      return;
    }
    rpc->out->Restart();
    rpc->Heard();
    ++stats_.restarts;
    sender_.Queue(*rpc);
    return;
  }
  FailClientRpc(*rpc,
                UnavailableError("homa: server " + peer.addr.ToString() + " lost RPC " +
                                 std::to_string(rpc->id) + " while responding (did it restart?)"));
}

void HomaHost::HandleNeedAck(HomaEndpoint& ep, Peer& peer, const wire::CommonHeader& common) {
  if (FromClient(common)) return;  // only servers ask for acks
  const uint64_t client_id = common.rpc_id ^ 1;
  if (rpcs_.FindClient(client_id) != nullptr) return;  // still in progress: we will RESEND
  // Finished here: answer with everything this endpoint owes that server
  // port, the asked id included, and its floor.
  sender_.OweAck(peer, {client_id, common.sport, ep.endpoint_id()});
  sender_.SendAcks(peer, ep.endpoint_id(), common.sport);
}

// The RPC is freed at the next Poll, not now: see ReleaseQueue for why.
void HomaHost::HandleAck(Peer& peer, uint16_t client_port, const wire::Ack& ack) {
  // The ack names its server endpoint, which need not be the packet's dport
  // (an ack rides on any DATA from the client endpoint that owes it).
  if (endpoints_.Find(ack.server_port) == nullptr) return;
  ++stats_.acks_received;
  releases_.Ack(peer, EndpointPair(ack.server_port, client_port), ack.client_id);
}

Peer* HomaHost::PeerFor(const transport::NetAddress& addr) {
  if (Peer* known = peers_.Find(addr)) return known;
  if (peers_.full()) {
    if (!releases_.empty()) releases_.Release();  // they point at peers
    // Full: replace a peer that has nothing live and has been silent a
    // while, if there is one among the next few (bounded work).
    peers_.ReplaceIdle(now_ns_, config_.tick_ns * config_.resend_interval_ticks);
  }
  Peer* peer = peers_.FindOrAdd(addr);
  if (peer != nullptr) peer->last_heard_ns = now_ns_ != 0 ? now_ns_ : clock_.NowNs();
  return peer;
}

Rpc* HomaHost::FindRpcFor(HomaEndpoint& ep, Peer& peer, const wire::CommonHeader& common) {
  if (FromClient(common)) {
    auto record = peer.clients.find(EndpointPair(ep.endpoint_id(), common.sport));
    return record == peer.clients.end() ? nullptr : record->second.Find(common.rpc_id);
  }
  Rpc* rpc = rpcs_.FindClient(common.rpc_id ^ 1);
  return rpc != nullptr && rpc->endpoint == &ep ? rpc : nullptr;
}

Rpc* HomaHost::FindServerRpc(const HomaEndpoint& ep, const ServerRpcKey& key) {
  Peer* peer = peers_.Find(key.client);
  if (peer == nullptr) return nullptr;
  auto record = peer->clients.find(EndpointPair(ep.endpoint_id(), key.client_port));
  return record == peer->clients.end() ? nullptr : record->second.Find(key.client_id);
}

// -------------------------------------------------------------- lifecycle

void HomaHost::StartIncoming(Rpc& rpc, HomaEndpoint& ep, const wire::Data& data) {
  const uint32_t length = data.header.message_length;
  // Received in place, whatever its size: the allocator bounds how much of
  // its memory messages not yet handed over may hold (wharfd: a quarter of
  // the application's receive area, so that a stalled sender cannot take
  // the room the application's other messages need), and says no beyond
  // that. A message abandoned half-way gives its memory back with its RPC.
  if (transport::ReceiveAllocator* allocator = ep.receive_allocator();
      allocator != nullptr && length > 0) {
    Buffer placed = allocator->AllocateReceive(length);
    if (placed.size() == length) {
      rpc.in.emplace(std::move(placed), length, data.header.incoming, now_ns_);
      ++stats_.receives_placed;
      return;
    }
  }
  rpc.in.emplace(length, data.header.incoming, now_ns_, receive_pool_.get());
}

void HomaHost::ReleaseIncoming(Rpc& rpc) {
  grants_.Release(rpc);
  rpc.in.reset();
}

void HomaHost::DeliverRequest(Rpc& rpc, const ServerRpcKey& key) {
  HomaEvent event;
  event.kind = HomaEvent::Kind::kRequest;
  event.client_id = key.client_id;
  event.server_key = key;
  event.message = rpc.in->TakeMessage();
  event.received_ns = rx_received_ns_;
  ReleaseIncoming(rpc);
  rpc.state = RpcState::kServerInService;
  rpc.Heard();
  ++stats_.requests_delivered;
  rpc.endpoint->PushEvent(std::move(event));
}

void HomaHost::Detach(Rpc& rpc) {
  sender_.Dequeue(rpc);
  ReleaseIncoming(rpc);
  tx_.FlushBorrowed();  // the batch may point into its messages
}

void HomaHost::FinishClientRpc(Rpc& rpc) {
  Detach(rpc);
  // Tell the server it may forget the RPC (piggybacked or in the next ACK).
  sender_.OweAck(*rpc.peer, {rpc.id, rpc.peer_port, rpc.local_port});
  rpcs_.EraseClient(rpc);  // rpc is gone (reset) from here on
}

void HomaHost::FailClientRpc(Rpc& rpc, Status status) {
  HomaEvent event;
  event.kind = HomaEvent::Kind::kFailed;
  event.client_id = rpc.id;
  event.cookie = rpc.cookie;
  event.status = std::move(status);
  rpc.endpoint->PushEvent(std::move(event));
  FinishClientRpc(rpc);
}

void HomaHost::DestroyServerRpc(Peer& peer, uint32_t pair, uint64_t client_id, bool tombstone) {
  auto found = peer.clients.find(pair);
  if (found == peer.clients.end()) return;
  ClientRecord& record = found->second;
  if (tombstone && record.AddTombstone(client_id, config_.max_tombstones_per_client)) {
    ++stats_.tombstones_evicted;
  }
  auto it = record.live.find(client_id);
  if (it == record.live.end()) return;
  Detach(*it->second);
  rpcs_.EraseServer(record, it);
}

// ------------------------------------------ the parts' decisions, sent

void HomaHost::SendGrants() {
  for (const GrantScheduler::Grant& grant : grants_.Pass()) {
    const Rpc& rpc = *grant.rpc;
    tx_.AddControl(rpc.peer_addr, rpc.local_port, rpc.peer_port, rpc.id,
                   wire::Grant{grant.offset, grant.priority, 0});
    ++stats_.grants_sent;
    if (grant.fifo) ++stats_.fifo_grants;
  }
}

void HomaHost::Tick(TimeNs now) {
  // Receive blocks nobody took for a while go back to the system (the
  // timer runs at least every idle tick).
  (void)receive_pool_->ReleaseIdle(now);
  const LivenessTimer::Plan& plan = timer_.Tick(now, rpcs_);
  if (plan.grant_pass) grants_.RequestPass();
  for (const Rpc* rpc : plan.keepalives) {
    // Our last GRANT again: the sender answers BUSY.
    tx_.AddControl(
        rpc->peer_addr, rpc->local_port, rpc->peer_port, rpc->id,
        wire::Grant{rpc->in->granted(), static_cast<uint8_t>(config_.max_sched_priority), 0});
    ++stats_.grants_sent;
  }
  for (const LivenessTimer::Probe& probe : plan.probes) {
    const Rpc& rpc = *probe.rpc;
    if (probe.need_ack) {
      tx_.AddControl(rpc.peer_addr, rpc.local_port, rpc.peer_port, rpc.id, wire::NeedAck{});
      ++stats_.need_acks_sent;
    } else {
      tx_.AddControl(rpc.peer_addr, rpc.local_port, rpc.peer_port, rpc.id,
                     wire::Resend{probe.offset, probe.length,
                                  static_cast<uint8_t>(config_.max_sched_priority)});
      ++stats_.resends_sent;
    }
  }
  // Failing an RPC frees only that RPC, so the others' pointers hold.
  for (Rpc* rpc : plan.dead_clients) {
    ++stats_.client_timeouts;
    FailClientRpc(*rpc, UnavailableError(
                            "homa: no answer from " + rpc->peer_addr.ToString() + " for " +
                            std::to_string(timer_.peer_timeout_ns() / kNsPerMs) + " ms (RPC " +
                            std::to_string(rpc->id) + ", homa.peer_timeout); peer presumed dead"));
  }
  for (Rpc* rpc : plan.dead_servers) {
    ++stats_.server_timeouts;
    DestroyServerRpc(*rpc, /*tombstone=*/true);
  }
  sender_.FlushAcks();
  peers_.SweepIdle(now);
  if (plan.refresh_paths) net_->RefreshPaths();
}

}  // namespace wharf::homa
