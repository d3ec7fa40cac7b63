// UcxMessageTransport: ucx:// calls over UCP active messages.
#include "ucx/ucx_transport.h"

#include <algorithm>
#include <string>
#include <utility>

namespace wharf::ucx {
namespace {

std::string U(uint64_t v) { return std::to_string(v); }

std::string_view View(const wire::UcxHeaderBytes& b) { return {b.data(), b.size()}; }

// Empty polls before the event fd is armed (see Poll).
constexpr int kPollsBeforeArm = 16;

}  // namespace

UcxMessageTransport::UcxMessageTransport(const UcxConfig& config, const Clock& clock)
    : config_(config), clock_(clock), server_(config.max_server_rpcs) {}

UcxMessageTransport::~UcxMessageTransport() {
  // First: the worker tells the sends it never finished, whose callbacks
  // reach the tables below.
  worker_.reset();
}

Result<std::unique_ptr<UcxMessageTransport>> UcxMessageTransport::Open(const UcxConfig& config,
                                                                     const Clock& clock) {
  if (config.max_peers == 0) return InvalidArgumentError("ucx.max_peers: expected at least 1");
  if (config.max_server_rpcs == 0) {
    return InvalidArgumentError("ucx.max_server_rpcs: expected at least 1");
  }
  if (config.idle_timeout_ns <= 0) return InvalidArgumentError("ucx.idle_timeout: expected > 0");
  std::unique_ptr<UcxMessageTransport> t(new UcxMessageTransport(config, clock));
  UcxMessageTransport* self = t.get();
  UcpOptions options{.tls = config.tls,
                     .devices = config.devices,
                     .detect_peer_failure = config.detect_peer_failure,
                     .max_message_bytes = config.max_message_bytes,
                     .max_peers = config.max_peers};
  UcpWorker::Handlers handlers{
      .message = [self](UcxPeer peer, std::string_view header,
                        Buffer message) { self->OnMessage(peer, header, std::move(message)); },
      .peer_failed = [self](UcxPeer peer, const Status& why) { self->OnPeerFailed(peer, why); },
      .oversized = [self](UcxPeer peer, std::string_view header,
                          uint64_t bytes) { self->OnOversized(peer, header, bytes); },
      .allocate = [self](size_t bytes) {
        if (self->allocator_ != nullptr) {
          if (Buffer placed = self->allocator_->AllocateReceive(bytes); !placed.empty()) {
            return placed;
          }
        }
        return bytes >= transport::LargeBufferPool::kMinBytes ? self->receive_pool_->Take(bytes)
                                                              : Buffer();
      }};
  WHARF_ASSIGN_OR_RETURN(t->worker_, UcpWorker::Create(options, std::move(handlers)));
  Result<transport::NetAddress> bound = t->worker_->Listen(config.bind);
  if (!bound.ok()) return bound.status().WithContext("ucx://" + config.bind.ToString());
  t->local_ = *bound;
  WHARF_ASSIGN_OR_RETURN(
      t->remote_memory_,
      UcxRemoteMemory::Create(
          *t->worker_, clock,
          [self](const transport::NetAddress& to) { return self->PeerFor(to, self->clock_.NowNs()); },
          {.pool_bytes = config.pool_bytes, .max_regions = config.max_regions}));
  return t;
}

Result<uint64_t> UcxMessageTransport::SendRequest(const transport::NetAddress& server,
                                                  Buffer request, uint64_t cookie) {
  if (server.family() == transport::NetAddress::Family::kNone || server.port() == 0) {
    return InvalidArgumentError("ucx: request to an empty address ('" + server.ToString() + "')");
  }
  if (config_.max_message_bytes != 0 && request.size() > config_.max_message_bytes) {
    return InvalidArgumentError("ucx: request of " + U(request.size()) +
                                " bytes exceeds the message limit (max_message_bytes " +
                                U(config_.max_message_bytes) + ")");
  }
  WHARF_ASSIGN_OR_RETURN(UcxPeer peer, PeerFor(server, clock_.NowNs()));
  const uint64_t id = client_.Add(peer, cookie, server);
  const wire::UcxHeaderBytes header = wire::EncodeUcxHeader(
      {.kind = wire::UcxKind::kRequest, .reply_port = local_.port(), .rpc_id = id});
  ++stats_.requests_sent;
  need_progress_ = true;
  worker_->Send(peer, View(header), std::move(request), [this, id, server](const Status& sent) {
    if (!sent.ok()) FailCall(id, sent.WithContext("ucx://" + server.ToString()));
  });
  return id;
}

Status UcxMessageTransport::SendResponse(const transport::ServerRpcKey& key, Buffer response,
                                         transport::MessagePriority priority) {
  if (!transport::IsMessagePriority(priority)) {
    return InvalidArgumentError("ucx: priority " + std::to_string(priority) +
                                " (expected 0..7 or by size)");
  }
  if (config_.max_message_bytes != 0 && response.size() > config_.max_message_bytes) {
    return InvalidArgumentError("ucx: response of " + U(response.size()) +
                                " bytes exceeds the message limit (max_message_bytes " +
                                U(config_.max_message_bytes) + ")");
  }
  std::optional<UcxPeer> peer = server_.Take(key);
  if (!peer) {
    return NotFoundError("ucx: no request " + U(key.client_id) + " from " + key.client.ToString() +
                         " (answered, cancelled, or its client is gone)");
  }
  const wire::UcxHeaderBytes header =
      wire::EncodeUcxHeader({.kind = wire::UcxKind::kResponse, .rpc_id = key.client_id});
  ++stats_.responses_sent;
  need_progress_ = true;
  // A response that cannot leave (its peer failed meanwhile) has nobody to
  // tell: the client hears of the failure on its own side.
  worker_->Send(*peer, View(header), std::move(response), nullptr);
  return OkStatus();
}

bool UcxMessageTransport::Cancel(uint64_t client_id) {
  std::optional<UcxClientCalls::Call> call = client_.Take(client_id);
  if (!call) return false;
  ++stats_.cancels_sent;
  SendControl(call->peer, {.kind = wire::UcxKind::kCancel,
                           .reply_port = local_.port(),
                           .rpc_id = client_id});
  return true;
}

transport::PollResult UcxMessageTransport::Poll() {
  transport::PollResult r;
  r.now = clock_.NowNs();
  r.work = static_cast<int>(worker_->Progress());
  if (r.now >= next_idle_check_) r.work += CloseIdlePeers(r.now);
  if (r.now >= remote_memory_->NextDeadline()) r.work += remote_memory_->Expire(r.now);
  if (r.now >= next_pool_check_) {
    // Received-message blocks nobody took for a while go back to the system.
    (void)receive_pool_->ReleaseIdle(r.now);
    next_pool_check_ = r.now + transport::LargeBufferPool::kIdleIntervalNs;
  }
  // Spin, then block: arm the event fd only once progress has found
  // nothing kPollsBeforeArm times in a row (arming costs system calls, and
  // a busy peer answers within a few polls); UCX refuses (busy) while work
  // is still pending.
  idle_polls_ = r.work > 0 ? 0 : idle_polls_ + 1;
  need_progress_ = idle_polls_ < kPollsBeforeArm || !worker_->Arm();
  r.next_deadline = need_progress_ || !events_.empty() ? r.now : TimerDeadline();
  return r;
}

TimeNs UcxMessageTransport::TimerDeadline() const {
  TimeNs next = std::min(next_idle_check_, remote_memory_->NextDeadline());
  if (receive_pool_->HasKeptBlocks()) next = std::min(next, next_pool_check_);
  return next;
}

TimeNs UcxMessageTransport::NextDeadline() const {
  return need_progress_ || !events_.empty() ? 0 : TimerDeadline();
}

bool UcxMessageTransport::PopEvent(transport::MessageEvent* out) {
  if (events_.empty()) return false;
  *out = std::move(events_.front());
  events_.pop_front();
  return true;
}

std::vector<std::pair<std::string, uint64_t>> UcxMessageTransport::Counters() const {
  const UcpWorker::Counters& w = worker_->counters();
  std::vector<std::pair<std::string, uint64_t>> out = {{"ucx.requests_sent", stats_.requests_sent},
          {"ucx.responses_sent", stats_.responses_sent},
          {"ucx.requests_received", stats_.requests_received},
          {"ucx.responses_received", stats_.responses_received},
          {"ucx.refused_sent", stats_.refused_sent},
          {"ucx.refused_received", stats_.refused_received},
          {"ucx.cancels_sent", stats_.cancels_sent},
          {"ucx.cancels_received", stats_.cancels_received},
          {"ucx.calls_failed", stats_.calls_failed},
          {"ucx.peer_failures", stats_.peer_failures},
          {"ucx.receive_pool_bytes", receive_pool_->stats().kept_bytes},
          {"ucx.peers", worker_->peers()},
          {"ucx.peers_refused", w.peers_refused},
          {"ucx.oversized_dropped", w.oversized_dropped},
          {"ucx.anonymous_dropped", w.anonymous_dropped},
          {"ucx.malformed_dropped", stats_.malformed_dropped},
          {"ucx.duplicates_dropped", stats_.duplicates_dropped},
          {"ucx.unmatched_dropped", stats_.unmatched_dropped},
          {"ucx.idle_closed", stats_.idle_closed},
          {"ucx.server_calls", server_.size()},
          {"ucx.client_calls", client_.size()}};
  for (auto& counter : remote_memory_->Counters()) out.push_back(std::move(counter));
  return out;
}

std::vector<std::pair<std::string, std::string>> UcxMessageTransport::Paths() const {
  std::vector<std::pair<std::string, std::string>> paths;
  for (const auto& [server, peer] : outgoing_) {
    paths.emplace_back("ucx://" + server.ToString(), worker_->Lanes(peer));
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

void UcxMessageTransport::OnMessage(UcxPeer peer, std::string_view header, Buffer message) {
  Result<wire::UcxHeader> decoded = wire::DecodeUcxHeader(header);
  if (!decoded.ok()) {
    ++stats_.malformed_dropped;
    return;
  }
  const wire::UcxHeader& h = *decoded;
  switch (h.kind) {
    case wire::UcxKind::kRequest: {
      const transport::ServerRpcKey key = KeyOf(peer, h.reply_port, h.rpc_id);
      switch (server_.Add(key, peer)) {
        case UcxServerCalls::Added::kDuplicate:
          ++stats_.duplicates_dropped;
          return;
        case UcxServerCalls::Added::kFull:
          ++stats_.refused_sent;
          SendControl(peer, {.kind = wire::UcxKind::kRefused,
                             .code = static_cast<uint16_t>(StatusCode::kResourceExhausted),
                             .rpc_id = h.rpc_id});
          return;
        case UcxServerCalls::Added::kAdded:
          break;
      }
      ++stats_.requests_received;
      transport::MessageEvent event;
      event.kind = transport::MessageEvent::Kind::kRequest;
      event.client_id = h.rpc_id;
      event.server_key = key;
      event.message = std::move(message);
      events_.push_back(std::move(event));
      return;
    }
    case wire::UcxKind::kRegionAsk:
    case wire::UcxKind::kRegionGrant:
    case wire::UcxKind::kRegionRelease:
    case wire::UcxKind::kImmediate:
      need_progress_ = true;  // what it answers must leave
      remote_memory_->OnMessage(peer, h, message);
      return;
    case wire::UcxKind::kResponse:
    case wire::UcxKind::kRefused: {
      if (h.kind == wire::UcxKind::kRefused &&
          remote_memory_->OnRefused(peer, h.rpc_id, StatusCodeFromWire(h.code))) {
        return;
      }
      const UcxClientCalls::Call* call = client_.Find(h.rpc_id);
      if (call == nullptr || call->peer != peer) {
        ++stats_.unmatched_dropped;  // cancelled, or not ours to answer
        return;
      }
      outgoing_peers_[peer].last_used = clock_.NowNs();
      if (h.kind == wire::UcxKind::kRefused) {
        ++stats_.refused_received;
        const StatusCode code = StatusCodeFromWire(h.code);
        FailCall(h.rpc_id, Status(code, "ucx://" + call->server.ToString() +
                                            " refused the request (" +
                                            std::string(StatusCodeName(code)) +
                                            "): over its message limit or its table of calls"));
        return;
      }
      ++stats_.responses_received;
      transport::MessageEvent event;
      event.kind = transport::MessageEvent::Kind::kResponse;
      event.client_id = h.rpc_id;
      event.cookie = client_.Take(h.rpc_id)->cookie;
      event.message = std::move(message);
      events_.push_back(std::move(event));
      return;
    }
    case wire::UcxKind::kCancel:
      ++stats_.cancels_received;
      server_.Take(KeyOf(peer, h.reply_port, h.rpc_id));
      return;
  }
}

void UcxMessageTransport::OnOversized(UcxPeer peer, std::string_view header, uint64_t bytes) {
  Result<wire::UcxHeader> decoded = wire::DecodeUcxHeader(header);
  if (!decoded.ok()) {
    ++stats_.malformed_dropped;
    return;
  }
  if (decoded->kind == wire::UcxKind::kRequest) {
    ++stats_.refused_sent;
    SendControl(peer, {.kind = wire::UcxKind::kRefused,
                       .code = static_cast<uint16_t>(StatusCode::kResourceExhausted),
                       .rpc_id = decoded->rpc_id});
    return;
  }
  if (decoded->kind == wire::UcxKind::kResponse) {
    const UcxClientCalls::Call* call = client_.Find(decoded->rpc_id);
    if (call == nullptr || call->peer != peer) return;
    FailCall(decoded->rpc_id,
             ResourceExhaustedError("ucx://" + call->server.ToString() + ": response of " +
                                    U(bytes) + " bytes exceeds the message limit (max_message_bytes " +
                                    U(config_.max_message_bytes) + ")"));
  }
}

void UcxMessageTransport::OnPeerFailed(UcxPeer peer, const Status& why) {
  ++stats_.peer_failures;
  server_.DropPeer(peer);
  remote_memory_->OnPeerFailed(peer);
  if (auto it = outgoing_peers_.find(peer); it != outgoing_peers_.end()) {
    outgoing_.erase(it->second.server);
    outgoing_peers_.erase(it);
  }
  for (auto& [id, call] : client_.TakePeer(peer)) {
    PushFailed(id, call.cookie,
               UnavailableError("ucx://" + call.server.ToString() + ": " + std::string(why.message())));
  }
}

Result<UcxPeer> UcxMessageTransport::PeerFor(const transport::NetAddress& server, TimeNs now) {
  if (auto it = outgoing_.find(server); it != outgoing_.end()) {
    outgoing_peers_[it->second].last_used = now;
    return it->second;
  }
  WHARF_ASSIGN_OR_RETURN(UcxPeer peer, worker_->Connect(server));
  outgoing_[server] = peer;
  outgoing_peers_[peer] = OutgoingPeer{server, now};
  if (next_idle_check_ == kNever) next_idle_check_ = now + config_.idle_timeout_ns;
  need_progress_ = true;
  return peer;
}

transport::ServerRpcKey UcxMessageTransport::KeyOf(UcxPeer peer, uint16_t reply_port,
                                                   uint64_t rpc_id) const {
  return {.client = worker_->AddressOf(peer).WithPort(reply_port),
          .client_port = 0,
          .client_id = rpc_id};
}

void UcxMessageTransport::SendControl(UcxPeer peer, const wire::UcxHeader& header) {
  const wire::UcxHeaderBytes bytes = wire::EncodeUcxHeader(header);
  need_progress_ = true;
  worker_->Send(peer, View(bytes), Buffer(), nullptr);
}

void UcxMessageTransport::FailCall(uint64_t id, Status status) {
  if (std::optional<UcxClientCalls::Call> call = client_.Take(id)) {
    PushFailed(id, call->cookie, std::move(status));
  }
}

void UcxMessageTransport::PushFailed(uint64_t id, uint64_t cookie, Status status) {
  ++stats_.calls_failed;
  transport::MessageEvent event;
  event.kind = transport::MessageEvent::Kind::kFailed;
  event.client_id = id;
  event.cookie = cookie;
  event.status = std::move(status);
  events_.push_back(std::move(event));
}

int UcxMessageTransport::CloseIdlePeers(TimeNs now) {
  int closed = 0;
  for (auto it = outgoing_peers_.begin(); it != outgoing_peers_.end();) {
    const UcxPeer peer = it->first;
    if (client_.InFlight(peer) == 0 && !remote_memory_->Uses(peer) &&
        now - it->second.last_used >= config_.idle_timeout_ns) {
      ++stats_.idle_closed;
      ++closed;
      outgoing_.erase(it->second.server);
      server_.DropPeer(peer);
      worker_->Close(peer);
      it = outgoing_peers_.erase(it);
    } else {
      ++it;
    }
  }
  // Check again when the most recently used connection could be idle.
  next_idle_check_ = kNever;
  for (const auto& [peer, p] : outgoing_peers_) {
    next_idle_check_ = std::min(next_idle_check_, p.last_used + config_.idle_timeout_ns);
  }
  if (next_idle_check_ <= now) next_idle_check_ = now + config_.idle_timeout_ns;
  return closed;
}

}  // namespace wharf::ucx
