// HomaEndpoint: the factories, the MessageTransport calls (which the host
// carries out, homa_host.cc), the event queue and Close.
#include "homa/homa_endpoint.h"

#include <string>

namespace wharf::homa {

Result<std::unique_ptr<HomaEndpoint>> HomaEndpoint::Create(const HomaConfig& config,
                                                           transport::Datagram* net,
                                                           const Clock& clock) {
  WHARF_ASSIGN_OR_RETURN(std::unique_ptr<HomaHost> host, HomaHost::Create(config, net, clock));
  WHARF_ASSIGN_OR_RETURN(std::unique_ptr<HomaEndpoint> ep, host->OpenEndpoint(config.endpoint_id));
  ep->owned_host_ = std::move(host);
  return ep;
}

Result<std::unique_ptr<HomaEndpoint>> HomaEndpoint::Open(HomaHost& host, uint16_t id) {
  std::unique_ptr<HomaEndpoint> ep(new HomaEndpoint(&host, id));
  if (Status registered = host.Register(*ep); !registered.ok()) {
    ep->closed_ = true;  // never registered: nothing to close on the host
    return registered;
  }
  return ep;
}

HomaEndpoint::HomaEndpoint(HomaHost* host, uint16_t id)
    : host_(host), clock_(&host->clock()), id_(id) {}

HomaEndpoint::~HomaEndpoint() { Close(); }

void HomaEndpoint::Close() {
  if (closed_) return;
  CloseWith(CancelledError("homa: endpoint " + std::to_string(id_) + " closed"));
}

void HomaEndpoint::OnHostDestroyed() {
  CloseWith(CancelledError("homa: endpoint " + std::to_string(id_) + " closed with its host"));
  host_ = nullptr;
}

void HomaEndpoint::CloseWith(const Status& why) {
  if (closed_) return;
  closed_ = true;
  if (host_ != nullptr) {
    // An open batch of ours must not hold the host's sends for good.
    for (; batch_depth_ > 0; --batch_depth_) host_->EndBatch();
    host_->CloseEndpoint(*this, why);
  }
}

size_t HomaEndpoint::num_client_rpcs() const {
  return host_ == nullptr ? 0 : host_->RpcsOf(*this).client;
}

size_t HomaEndpoint::num_server_rpcs() const {
  return host_ == nullptr ? 0 : host_->RpcsOf(*this).server;
}

Status HomaEndpoint::Usable() const {
  if (!closed_) return OkStatus();
  return FailedPreconditionError("homa: endpoint " + std::to_string(id_) +
                                 (host_ == nullptr ? " lost its host" : " is closed"));
}

transport::NetAddress HomaEndpoint::LocalAddress() const {
  return host_ != nullptr ? host_->net().LocalAddress() : transport::NetAddress();
}

Result<uint64_t> HomaEndpoint::SendRequest(const transport::NetAddress& server, Buffer request,
                                           uint64_t cookie) {
  return SendRequestTo(server, wire::kDefaultEndpoint, std::move(request), cookie);
}

Result<uint64_t> HomaEndpoint::SendRequestTo(const transport::NetAddress& server,
                                             uint16_t server_endpoint, Buffer request,
                                             uint64_t cookie,
                                             const transport::SendOptions& options) {
  WHARF_RETURN_IF_ERROR(Usable());
  return host_->SendRequest(*this, server, server_endpoint, std::move(request), cookie, options);
}

Status HomaEndpoint::SendResponse(const ServerRpcKey& key, Buffer response,
                                  transport::MessagePriority priority) {
  WHARF_RETURN_IF_ERROR(Usable());
  return host_->SendResponse(*this, key, std::move(response), priority);
}

bool HomaEndpoint::Cancel(uint64_t client_id) {
  return !closed_ && host_->Cancel(*this, client_id);
}

void HomaEndpoint::BeginBatch() {
  if (closed_) return;
  ++batch_depth_;
  host_->BeginBatch();
}

void HomaEndpoint::EndBatch() {
  if (batch_depth_ == 0) return;  // unmatched, or the endpoint closed since
  --batch_depth_;
  if (host_ != nullptr) host_->EndBatch();
}

PollResult HomaEndpoint::Poll() {
  if (closed_) {
    // Nothing of ours can change any more; only events already queued.
    PollResult idle;
    idle.now = clock_->NowNs();
    idle.next_deadline = pending_events() > 0 ? idle.now : kNever;
    return idle;
  }
  if (host_->polled_by_owner()) {
    // The owner polled the host earlier in this same pass: its clock read
    // serves (a read per endpoint per pass is a few percent of wharfd).
    PollResult r;
    r.now = host_->last_clock_read_ns() != 0 ? host_->last_clock_read_ns() : clock_->NowNs();
    r.next_deadline = pending_events() > 0 ? r.now : host_->NextDeadline();
    return r;
  }
  PollResult result = host_->Poll();
  if (pending_events() > 0) result.next_deadline = result.now;
  return result;
}

TimeNs HomaEndpoint::NextDeadline() const {
  if (pending_events() > 0) return clock_->NowNs();
  return closed_ ? kNever : host_->NextDeadline();
}

bool HomaEndpoint::PopEvent(HomaEvent* out) {
  if (events_head_ == events_.size()) return false;
  *out = std::move(events_[events_head_++]);
  if (events_head_ == events_.size()) {
    // Drained: reuse the vector from the start.
    events_.clear();
    events_head_ = 0;
  }
  return true;
}

int HomaEndpoint::ReadableFd() const {
  return closed_ ? -1 : host_->net().ReadableFd();
}

void HomaEndpoint::AppendReadableFds(std::vector<int>* fds) const {
  if (!closed_) host_->net().AppendReadableFds(fds);
}

std::vector<std::pair<std::string, uint64_t>> HomaEndpoint::Counters() const {
  if (host_ == nullptr) return {};
  return host_->Counters();
}

}  // namespace wharf::homa
