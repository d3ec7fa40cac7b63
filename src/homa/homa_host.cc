// HomaHost: construction, endpoints, the endpoints' calls, the grant pass,
// and RPC lifecycle. The send path (SRPT pump, pacer, transmit batch) is in
// host_send.cc, packet handlers in handlers.cc, the protocol timer in
// timer.cc.
#include "homa/homa_host.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "homa/homa_endpoint.h"
#include "wire/endpoint_id.h"

namespace wharf::homa {
namespace {

constexpr size_t kRxBatch = 32;          // datagrams per Receive() call
constexpr int kMaxRxBatchesPerPoll = 8;  // bound the work of one Poll
// Path errors taken from the transport per Poll.
constexpr size_t kPathErrorBatch = 16;

Status ValidateConfig(const HomaConfig& c, size_t max_datagram) {
  auto bad = [](std::string key, std::string why) {
    return InvalidArgumentError("homa." + key + ": " + why);
  };
  if (max_datagram <= wire::kDataHeaderBytes) {
    return InvalidArgumentError("udp.mtu: datagrams of " + std::to_string(max_datagram) +
                          " bytes cannot carry a DATA header (" +
                          std::to_string(wire::kDataHeaderBytes) + " bytes)");
  }
  if (c.overcommit < 1 || c.overcommit > 64) return bad("overcommit", "expected 1..64");
  if (c.max_sched_priority < 0 || c.max_sched_priority >= wire::kNumPriorities) {
    return bad("max_sched_priority", "expected 0..7");
  }
  if (c.control_priority >= wire::kNumPriorities) return bad("control_priority", "expected 0..7");
  if (c.grant_fifo_permille < 0 || c.grant_fifo_permille > 1000) {
    return bad("grant_fifo_permille", "expected 0..1000");
  }
  if (c.tick_ns <= 0) return bad("tick", "must be positive");
  if (c.resend_ticks < 1 || c.resend_interval_ticks < 1 || c.need_ack_ticks < 1) {
    return bad("resend_ticks", "resend_ticks, resend_interval_ticks and need_ack_ticks must be >= 1");
  }
  if (c.timeout_ticks > 0 && c.timeout_ticks <= c.resend_ticks) {
    return bad("timeout_ticks", "must exceed resend_ticks (" + std::to_string(c.resend_ticks) + ")");
  }
  // A peer timeout shorter than the probes is harmless (death also needs 3
  // unanswered probes, so it comes after the third), but zero is a typo.
  if (c.peer_timeout_ns <= 0) return bad("peer_timeout", "must be positive");
  if (c.max_peers < 1) return bad("max_peers", "must be at least 1");
  if (c.peer_idle_timeout_ns <= 0) return bad("peer_idle_timeout", "must be positive");
  if (c.max_clients_per_peer < 1) return bad("max_clients_per_peer", "must be at least 1");
  if (c.link_bps == 0) return bad("link_rate", "must be positive");
  return OkStatus();
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
      peer_timeout_ns_(config.EffectivePeerTimeoutNs()),
      peer_timeout_ticks_((peer_timeout_ns_ + config.tick_ns - 1) / config.tick_ns),
      next_path_refresh_ns_(clock.NowNs() + kPathRefreshNs),
      peers_(config_),
      grants_(config.overcommit, config.max_sched_priority),
      pacer_(config.link_bps, config.max_nic_backlog_ns),
      next_tick_ns_(clock.NowNs() + config.tick_ns),
      max_datagram_bytes_(net->MaxDatagramBytes()) {
  // Client ids start from the wall clock so that a restarted client's ids
  // exceed every id of its previous incarnation: servers may still hold an
  // at-most-once floor for this address and endpoint (docs/protocol.md).
  next_client_id_ = std::max<uint64_t>(2, static_cast<uint64_t>(clock.WallNs())) & ~uint64_t{1};
  tx_buffer_.resize(kTxBatch * kTxSlotBytes);
  tx_batch_.reserve(kTxBatch);
  rx_batch_.resize(kRxBatch);
  path_errors_.resize(kPathErrorBatch);
}

HomaHost::~HomaHost() {
  // Endpoints still open lose their RPCs now and their host: their calls
  // fail from here on instead of touching freed state.
  while (!endpoints_.empty()) {
    HomaEndpoint& ep = *endpoints_.begin()->second;
    CloseEndpoint(ep, CancelledError("homa: endpoint " + std::to_string(ep.id_) +
                                     " closed with its host"));
    ep.closed_ = true;
    ep.host_ = nullptr;
  }
}

// -------------------------------------------------------------- endpoints

Result<std::unique_ptr<HomaEndpoint>> HomaHost::OpenEndpoint(uint16_t id) {
  if (endpoints_.contains(id)) {
    return AlreadyExistsError("homa: endpoint " + std::to_string(id) + " is already open on " +
                              net_->LocalAddress().ToString());
  }
  std::unique_ptr<HomaEndpoint> ep(new HomaEndpoint(this, id));
  endpoints_.emplace(id, ep.get());
  last_endpoint_ = ep.get();
  last_endpoint_id_ = id;
  return ep;
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

HomaEndpoint* HomaHost::FindEndpointSlow(uint16_t id) {
  // One endpoint: FindEndpoint's compare already said no.
  if (endpoints_.size() <= 1) return nullptr;
  auto it = endpoints_.find(id);
  if (it == endpoints_.end()) return nullptr;
  last_endpoint_ = it->second;
  last_endpoint_id_ = id;
  return it->second;
}

void HomaHost::CloseEndpoint(HomaEndpoint& ep, const Status& status) {
  // What the endpoint asked to send goes out before its messages are freed.
  FlushTx();
  // Acks and floors already received may name its RPCs: apply them first.
  if (!deferred_releases_.empty()) ReleaseFinished();
  // Collect first: failing and destroying unlinks RPCs from the list.
  std::vector<Rpc*> doomed;
  for (Rpc* rpc = oldest_rpc_; rpc != nullptr; rpc = rpc->newer) {
    if (rpc->endpoint == &ep) doomed.push_back(rpc);
  }
  for (Rpc* rpc : doomed) {
    if (rpc->is_client()) {
      FailClientRpc(*rpc, status);  // its ack tells the server to forget it
    } else {
      DestroyServerRpc(*rpc, /*tombstone=*/true);
    }
  }
  endpoints_.erase(ep.id_);
  if (last_endpoint_ == &ep) {
    last_endpoint_ = endpoints_.empty() ? nullptr : endpoints_.begin()->second;
    last_endpoint_id_ = last_endpoint_ != nullptr ? last_endpoint_->id_ : 0;
  }
}

size_t HomaHost::num_client_rpcs() const {
  size_t total = 0;
  for (const auto& [id, ep] : endpoints_) total += ep->num_client_rpcs();
  return total;
}

bool HomaHost::HeldByAnotherEndpoint(const HomaEndpoint& ep, uint64_t client_id) {
  // Only packets about RPCs their endpoint does not hold get here (late
  // duplicates, forgeries), so this must stay cheap under a flood of them:
  // past a few endpoints the check is skipped and the packet is handled as
  // about an unknown RPC (whose answers name that id only, so no other
  // endpoint's RPC is touched).
  constexpr size_t kMaxEndpointsChecked = 16;
  if (endpoints_.size() <= 1 || endpoints_.size() > kMaxEndpointsChecked) return false;
  for (const auto& [id, other] : endpoints_) {
    if (other != &ep && other->client_rpcs_.Contains(client_id)) return true;
  }
  return false;
}

// ------------------------------------------------------ the endpoints' calls

Result<uint64_t> HomaHost::SendRequest(HomaEndpoint& ep, const transport::NetAddress& server,
                                       uint16_t server_port, Buffer request, uint64_t cookie) {
  if (server.family() == transport::NetAddress::Family::kNone) {
    return InvalidArgumentError("homa: request to an empty address");
  }
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
  LearnPath(peer);
  uint64_t id = next_client_id_;
  next_client_id_ += 2;
  Rpc& rpc = NewClientRpc(ep, id, peer, server_port);
  rpc.cookie = cookie;
  uint32_t length = static_cast<uint32_t>(request.size());
  rpc.out.emplace(std::move(request), config_.unsched_bytes, peer.payload_bytes,
                  peer.UnschedPriority(length));
  peer.outstanding[EndpointPair(ep.id_, server_port)].Add(id);
  QueueForSend(rpc);
  PumpSends(/*clock_fresh=*/false);
  FlushUnlessHeld();
  return id;
}

Status HomaHost::SendResponse(HomaEndpoint& ep, const ServerRpcKey& key, Buffer response) {
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
  LearnPath(*rpc.peer);
  uint32_t length = static_cast<uint32_t>(response.size());
  rpc.out.emplace(std::move(response), config_.unsched_bytes, rpc.peer->payload_bytes,
                  rpc.peer->UnschedPriority(length));
  rpc.state = RpcState::kServerSending;
  rpc.Heard();
  QueueForSend(rpc);
  PumpSends(/*clock_fresh=*/false);
  FlushUnlessHeld();
  return OkStatus();
}

bool HomaHost::Cancel(HomaEndpoint& ep, uint64_t client_id) {
  std::unique_ptr<Rpc>* rpc = ep.client_rpcs_.Find(client_id);
  if (rpc == nullptr) return false;
  FlushBorrowed();  // its request may still sit, uncopied, in a held batch
  FinishClientRpc(**rpc);
  return true;
}

PollResult HomaHost::Poll() {
  PollResult result;
  TimeNs now = now_ns_ = clock_.NowNs();
  result.now = now;
  if (!deferred_releases_.empty()) ReleaseFinished();
  for (int batch = 0; batch < kMaxRxBatchesPerPoll; ++batch) {
    Result<size_t> got = net_->Receive(rx_batch_);
    if (!got.ok() || *got == 0) break;
    for (size_t i = 0; i < *got; ++i) HandleDatagram(rx_batch_[i].from, rx_batch_[i].bytes);
    result.work += static_cast<int>(*got);
    if (*got < rx_batch_.size()) break;
  }
  // Free (a flag test) unless the kernel reported an error.
  if (size_t errors = net_->TakePathErrors(path_errors_); errors > 0) {
    for (size_t i = 0; i < errors; ++i) HandlePathError(path_errors_[i]);
    result.work += static_cast<int>(errors);
  }
  if (grants_dirty_) RunGrantPass();
  if (now >= next_tick_ns_) {
    ReleaseFinished();  // the timer must not probe an RPC already acked
    const uint64_t sent_before = stats_.packets_sent;
    Tick();
    live_peak_before_ = live_peak_;
    live_peak_ = unanswered_rpcs();
    last_tick_ns_ = now;
    next_tick_ns_ = now + config_.tick_ns;
    // A tick that sent nothing (the common, idle one) is not progress: a
    // host that spins after work must not spin after every tick.
    if (stats_.packets_sent != sent_before) ++result.work;
  }
  result.work += PumpSends(/*clock_fresh=*/true);
  FlushTx();

  result.next_deadline = NextDeadline();
  if (!send_queue_.empty()) result.next_deadline = std::max(now, result.next_deadline);
  return result;
}

bool HomaHost::Idle() const {
  return send_queue_.empty() && deferred_releases_.empty() && num_server_rpcs_ == 0 &&
         num_client_rpcs() == 0;
}

TimeNs HomaHost::NextDeadline() const {
  // With no RPC anywhere the timer has only housekeeping to do (idle peers,
  // paths), so a host that sleeps wakes every kIdleTickNs rather than every
  // tick: an idle wharfd or endpoint costs no CPU to speak of.
  TimeNs next = Idle() ? std::max(next_tick_ns_, last_tick_ns_ + kIdleTickNs) : next_tick_ns_;
  if (!send_queue_.empty()) next = std::min(next, pacer_.NextSendTime());
  return next;
}

std::vector<std::pair<std::string, uint64_t>> HomaHost::Counters() const {
  std::vector<std::pair<std::string, uint64_t>> all = {
      {"homa.packets_sent", stats_.packets_sent},
      {"homa.batched_flushes", stats_.batched_flushes},
      {"homa.batch_cuts", stats_.batch_cuts},
      {"homa.packets_received", stats_.packets_received},
      {"homa.data_sent", stats_.data_sent},
      {"homa.data_retransmitted", stats_.data_retransmitted},
      {"homa.data_received", stats_.data_received},
      {"homa.duplicate_data", stats_.duplicate_data},
      {"homa.grants_sent", stats_.grants_sent},
      {"homa.fifo_grants", stats_.fifo_grants},
      {"homa.resends_sent", stats_.resends_sent},
      {"homa.resends_received", stats_.resends_received},
      {"homa.busy_sent", stats_.busy_sent},
      {"homa.rpc_unknown_sent", stats_.rpc_unknown_sent},
      {"homa.restarts", stats_.restarts},
      {"homa.cutoffs_sent", stats_.cutoffs_sent},
      {"homa.need_acks_sent", stats_.need_acks_sent},
      {"homa.acks_sent", stats_.acks_sent},
      {"homa.acks_received", stats_.acks_received},
      {"homa.requests_delivered", stats_.requests_delivered},
      {"homa.responses_delivered", stats_.responses_delivered},
      {"homa.late_duplicates", stats_.late_duplicates},
      {"homa.client_timeouts", stats_.client_timeouts},
      {"homa.server_timeouts", stats_.server_timeouts},
      {"homa.malformed", stats_.malformed},
      {"homa.wrong_port", stats_.wrong_port},
      {"homa.endpoint_mismatch", stats_.endpoint_mismatch},
      {"homa.from_stranger", stats_.from_stranger},
      {"homa.path_errors", stats_.path_errors},
      {"homa.peers_unreachable", stats_.peers_unreachable},
      {"homa.unreachable_failures", stats_.unreachable_failures},
      {"homa.clients_refused", stats_.clients_refused},
      {"homa.tombstones_evicted", stats_.tombstones_evicted},
      {"homa.peers", peers_.size()},
      {"homa.peers_created", peers_.stats().created},
      {"homa.peers_freed", peers_.stats().freed},
      {"homa.peers_refused", peers_.stats().refused},
      {"homa.endpoints", endpoints_.size()},
      {"homa.oversize_dropped", stats_.oversize_dropped},
      {"homa.memory_dropped", stats_.memory_dropped},
      {"homa.receives_placed", stats_.receives_placed},
      {"homa.tx_dropped", stats_.tx_dropped},
      {"homa.send_errors", stats_.send_errors},
  };
  const transport::LargeBufferPool::Stats pool = receive_pool_->stats();
  all.push_back({"homa.receive_buffers_reused", pool.reused});
  all.push_back({"homa.receive_buffers_allocated", pool.allocated});
  all.push_back({"homa.receive_pool_bytes", pool.kept_bytes});
  all.push_back({"homa.receive_pool_freed_idle", pool.freed_idle});
  net_->AppendCounters(&all);  // the socket's own, after the protocol's
  return all;
}

// ----------------------------------------------------------------- grants

void HomaHost::RunGrantPass() {
  grants_dirty_ = false;
  std::vector<GrantScheduler::Ranked>& active = active_grants_;
  grants_.ActiveSet(&active);
  if (active.empty()) return;
  // Homa's dynamic window: share max_incoming among the active messages.
  const uint64_t share = config_.max_incoming_bytes / (active.size() + 1);
  for (const auto& ranked : active) {
    Rpc& rpc = *ranked.rpc;
    IncomingMessage& in = *rpc.in;
    const uint32_t packet = GrantUnit(rpc);
    uint64_t window = std::max<uint64_t>(packet, share);
    uint64_t target = std::min<uint64_t>(in.length(), in.received_bytes() + window);
    if (target <= in.granted()) continue;
    // The total bound: never more than max_incoming_bytes asked for and not
    // yet arrived, over all messages (best-ranked messages ask first).
    uint64_t room = config_.max_incoming_bytes > outstanding_bytes_
                        ? config_.max_incoming_bytes - outstanding_bytes_
                        : 0;
    target = std::min<uint64_t>(target, uint64_t{in.granted()} + room);
    if (target <= in.granted()) break;
    // Grant up to a packet boundary (or the tail): the sender cuts packets
    // at multiples of its packet size from offset 0, so any other grant
    // offset would make it send a runt for every grant.
    if (target != in.length()) target -= target % packet;
    if (target <= in.granted()) continue;
    srpt_granted_since_fifo_ += target - in.granted();
    SendGrant(rpc, static_cast<uint32_t>(target), ranked.priority);
  }
  // FIFO share: every fifo_grant_bytes / fraction SRPT bytes, one grant of
  // fifo_grant_bytes to the oldest message.
  if (config_.grant_fifo_permille > 0) {
    uint64_t period = uint64_t{config_.fifo_grant_bytes} * 1000 / config_.grant_fifo_permille;
    if (srpt_granted_since_fifo_ >= period) {
      srpt_granted_since_fifo_ = 0;
      if (Rpc* oldest = grants_.OldestRpc()) {
        Rpc& rpc = *oldest;
        // Rounded up to a packet boundary, as SRPT grants are rounded down.
        const uint64_t packet = GrantUnit(rpc);
        uint64_t target = uint64_t{rpc.in->granted()} + config_.fifo_grant_bytes;
        target = std::min<uint64_t>(rpc.in->length(), (target + packet - 1) / packet * packet);
        if (target > rpc.in->granted()) {
          ++stats_.fifo_grants;
          SendGrant(rpc, static_cast<uint32_t>(target),
                    static_cast<uint8_t>(config_.max_sched_priority));
        }
      }
    }
  }
}

void HomaHost::SendGrant(Rpc& rpc, uint32_t offset, uint8_t priority) {
  rpc.in->Grant(offset);
  UpdateOutstanding(rpc);
  EmitControl(rpc.peer_addr, rpc.local_port, rpc.peer_port, rpc.id,
              wire::Grant{offset, priority, 0});
  ++stats_.grants_sent;
  if (!rpc.in->NeedsGrants()) StopGranting(rpc);
}

void HomaHost::StopGranting(Rpc& rpc) {
  if (!grants_.Contains(rpc.handle)) return;
  grants_.Remove(rpc.handle);
  // A slot in the active set opened: the next message may now be granted.
  grants_dirty_ = true;
}

// -------------------------------------------------------------- lifecycle

std::unique_ptr<Rpc> HomaHost::AllocateRpc() {
  if (spare_rpcs_.empty()) return std::make_unique<Rpc>();
  std::unique_ptr<Rpc> rpc = std::move(spare_rpcs_.back());
  spare_rpcs_.pop_back();
  return rpc;
}

void HomaHost::RecycleRpc(std::unique_ptr<Rpc> rpc) {
  FlushBorrowed();  // the batch may point into its messages
  if (!kRecycleMemory || spare_rpcs_.size() >= kMaxSpareRpcs) return;
  *rpc = Rpc{};  // drops the messages now; keeps the allocation
  spare_rpcs_.push_back(std::move(rpc));
}

Rpc& HomaHost::NewClientRpc(HomaEndpoint& ep, uint64_t id, Peer& peer, uint16_t server_port) {
  std::unique_ptr<Rpc>& slot = ep.client_rpcs_.Insert(id, AllocateRpc());
  Rpc& rpc = *slot;
  InitRpc(rpc, ep, id, RpcState::kClientSending, peer, server_port);
  return rpc;
}

Rpc& HomaHost::NewServerRpc(HomaEndpoint& ep, Peer& peer, ClientRecord& record,
                            uint16_t client_port, uint64_t client_id, RpcState state) {
  Rpc& rpc = *live_nodes_.Insert(record.live, client_id, AllocateRpc())->second;
  InitRpc(rpc, ep, client_id ^ 1, state, peer, client_port);
  ++num_server_rpcs_;
  ++ep.num_server_rpcs_;
  return rpc;
}

void HomaHost::InitRpc(Rpc& rpc, HomaEndpoint& ep, uint64_t id, RpcState state, Peer& peer,
                       uint16_t peer_port) {
  rpc.id = id;
  rpc.handle = next_handle_++;
  rpc.state = state;
  rpc.peer = &peer;
  ++peer.live_rpcs;
  rpc.peer_addr = peer.addr;
  rpc.peer_port = peer_port;
  rpc.endpoint = &ep;
  rpc.local_port = ep.id_;
  // Newest at the end of the list of all RPCs.
  rpc.older = newest_rpc_;
  rpc.newer = nullptr;
  if (newest_rpc_ != nullptr) {
    newest_rpc_->newer = &rpc;
  } else {
    oldest_rpc_ = &rpc;
  }
  newest_rpc_ = &rpc;
  ++num_live_rpcs_;
  live_peak_ = std::max(live_peak_, unanswered_rpcs());
}

void HomaHost::UnlinkRpc(Rpc& rpc) {
  --rpc.peer->live_rpcs;
  DequeueFromSend(rpc);
  ReleaseIncoming(rpc);
  (rpc.older != nullptr ? rpc.older->newer : oldest_rpc_) = rpc.newer;
  (rpc.newer != nullptr ? rpc.newer->older : newest_rpc_) = rpc.older;
  rpc.older = rpc.newer = nullptr;
  --num_live_rpcs_;
  if (rpc.state == RpcState::kServerAwaitAck) --num_awaiting_ack_;
}

Rpc* HomaHost::FindServerRpc(const HomaEndpoint& ep, const ServerRpcKey& key) {
  Peer* peer = peers_.Find(key.client);
  if (peer == nullptr) return nullptr;
  auto record = peer->clients.find(EndpointPair(ep.id_, key.client_port));
  return record == peer->clients.end() ? nullptr : record->second.Find(key.client_id);
}

Peer* HomaHost::PeerFor(const transport::NetAddress& addr) {
  if (Peer* known = peers_.Find(addr)) return known;
  if (peers_.full()) {
    // Full: replace a peer that has nothing live and has been silent a
    // while, if one of the next few in the sweep order is; else the table
    // refuses (and counts) the newcomer. Bounded work, so a flood of new
    // sources cannot make this a scan.
    if (!deferred_releases_.empty()) ReleaseFinished();  // they point at peers
    constexpr int kCandidates = 8;
    for (int i = 0; i < kCandidates; ++i) {
      Peer* candidate = peers_.NextInSweep();
      if (candidate != nullptr && candidate->Idle() &&
          now_ns_ - candidate->last_heard_ns >= config_.tick_ns * config_.resend_interval_ticks) {
        peers_.Remove(*candidate);
        break;
      }
    }
  }
  Peer* peer = peers_.FindOrAdd(addr);
  if (peer != nullptr) peer->last_heard_ns = now_ns_ != 0 ? now_ns_ : clock_.NowNs();
  return peer;
}

void HomaHost::LearnPath(Peer& peer) {
  if (peer.payload_bytes != 0) return;
  size_t datagram = std::min(net_->MaxDatagramBytesTo(peer.addr), max_datagram_bytes_);
  // Nothing queues below the socket on a local path, nor (unless a rate was
  // configured) through a software device: the pacer, which models a NIC
  // queue, would only hold such packets back.
  peer.paced = config_.link_rate_auto ? !net_->IsSoftwarePath(peer.addr)
                                      : !net_->IsLocalPath(peer.addr);
  peer.payload_bytes = static_cast<uint32_t>(
      datagram > wire::kDataHeaderBytes ? datagram - wire::kDataHeaderBytes : 1);
}

void HomaHost::SweepIdlePeers(TimeNs now) {
  // A full walk of max_peers takes max_peers / kPerTick ticks.
  constexpr int kPerTick = 64;
  const int count = static_cast<int>(std::min<size_t>(kPerTick, peers_.size()));
  for (int i = 0; i < count; ++i) {
    Peer* peer = peers_.NextInSweep();
    if (peer->Idle() && now - peer->last_heard_ns >= config_.peer_idle_timeout_ns) {
      peers_.Remove(*peer);
    }
  }
}

uint64_t HomaHost::ClientFloor(Peer& peer, uint16_t client_port, uint16_t server_port) const {
  auto it = peer.outstanding.find(EndpointPair(client_port, server_port));
  if (it == peer.outstanding.end() || it->second.empty()) return next_client_id_;
  return it->second.Floor();
}

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

bool HomaHost::ReserveIncoming(uint32_t length) {
  if (incoming_buffer_bytes_ + length > config_.max_incoming_buffer_bytes) return false;
  incoming_buffer_bytes_ += length;
  return true;
}

void HomaHost::UpdateOutstanding(Rpc& rpc) {
  uint64_t now_outstanding = 0;
  if (rpc.in && !rpc.in->complete()) {
    uint64_t granted = rpc.in->granted();
    uint64_t received = rpc.in->received_bytes();
    now_outstanding = granted > received ? granted - received : 0;
  }
  outstanding_bytes_ = outstanding_bytes_ - rpc.outstanding_bytes + now_outstanding;
  rpc.outstanding_bytes = now_outstanding;
}

void HomaHost::ReleaseIncoming(Rpc& rpc) {
  outstanding_bytes_ -= rpc.outstanding_bytes;
  rpc.outstanding_bytes = 0;
  if (!rpc.in) return;
  incoming_buffer_bytes_ -= rpc.in->length();
  StopGranting(rpc);
  rpc.in.reset();
}

void HomaHost::DeliverRequest(Rpc& rpc, const ServerRpcKey& key) {
  HomaEvent event;
  event.kind = HomaEvent::Kind::kRequest;
  event.client_id = key.client_id;
  event.server_key = key;
  event.message = rpc.in->TakeMessage();
  ReleaseIncoming(rpc);
  rpc.state = RpcState::kServerInService;
  rpc.Heard();
  ++stats_.requests_delivered;
  rpc.endpoint->PushEvent(std::move(event));
}

void HomaHost::FinishClientRpc(Rpc& rpc) {
  UnlinkRpc(rpc);
  Peer& peer = *rpc.peer;
  auto out = peer.outstanding.find(EndpointPair(rpc.local_port, rpc.peer_port));
  if (out != peer.outstanding.end()) out->second.Remove(rpc.id);
  // Tell the server it may forget the RPC (piggybacked or in the next ACK).
  OweAck(peer, {rpc.id, rpc.peer_port, rpc.local_port});
  IdMap<std::unique_ptr<Rpc>>& table = rpc.endpoint->client_rpcs_;
  std::unique_ptr<Rpc>* slot = table.Find(rpc.id);
  std::unique_ptr<Rpc> owned = std::move(*slot);
  table.Erase(owned->id);
  RecycleRpc(std::move(owned));  // rpc is gone (reset) from here on
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
  if (tombstone && client_id >= record.floor && record.tombstones.insert(client_id).second &&
      record.tombstones.size() > config_.max_tombstones_per_client) {
    // Bounded: the oldest finished id is forgotten. Only a duplicate of it
    // delayed past thousands of newer RPCs could now run twice.
    record.tombstones.erase(record.tombstones.begin());
    ++stats_.tombstones_evicted;
  }
  auto it = record.live.find(client_id);
  if (it == record.live.end()) return;
  --it->second->endpoint->num_server_rpcs_;
  UnlinkRpc(*it->second);
  // The rpc goes to the spare pool and the map node is kept, both for reuse.
  live_nodes_.Erase(record.live, it,
                    [this](std::unique_ptr<Rpc>& rpc) { RecycleRpc(std::move(rpc)); });
  --num_server_rpcs_;
}

}  // namespace wharf::homa
