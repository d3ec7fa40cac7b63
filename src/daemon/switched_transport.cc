// daemon/switched_transport.cc: SwitchedTransport: routing each call to the
// local path or the inner transport, the local RPC tables of both sides,
// the local event queue, and the failures an endpoint's death causes.
#include "daemon/switched_transport.h"

#include <algorithm>
#include <string>

namespace wharf::daemon {

using transport::MessageEvent;
using transport::NetAddress;
using transport::PollResult;
using transport::ServerRpcKey;

Result<std::unique_ptr<SwitchedTransport>> SwitchedTransport::Create(
    LocalSwitch* local_switch, transport::MessageTransport* inner, uint16_t endpoint_id,
    SwitchLimits limits) {
  if (local_switch == nullptr || inner == nullptr) {
    return InvalidArgumentError("wharfd: a switched transport needs a switch and a transport");
  }
  WHARF_ASSIGN_OR_RETURN(uint8_t scheme_index, local_switch->SchemeIndex(inner->scheme()));
  const uint16_t port = inner->LocalAddress().port();
  std::unique_ptr<SwitchedTransport> t(new SwitchedTransport(
      inner, local_switch->clock(), endpoint_id, scheme_index, port, limits));
  // switch_ stays null until registered: a refused transport's destructor
  // must not unregister the one that holds its place.
  WHARF_RETURN_IF_ERROR(local_switch->Register(t.get(), scheme_index, port, endpoint_id));
  t->switch_ = local_switch;
  return t;
}

SwitchedTransport::SwitchedTransport(transport::MessageTransport* inner, const Clock& clock,
                                     uint16_t endpoint_id, uint8_t scheme_index, uint16_t port,
                                     SwitchLimits limits)
    : inner_(inner),
      clock_(clock),
      scheme_(inner->scheme()),
      endpoint_id_(endpoint_id),
      scheme_index_(scheme_index),
      port_(port),
      limits_(limits) {}

SwitchedTransport::~SwitchedTransport() {
  if (switch_ == nullptr) return;
  Detach(UnavailableError(scheme_ + ": local endpoint #" + std::to_string(endpoint_id_) +
                          " on port " + std::to_string(port_) + " closed"));
}

void SwitchedTransport::Detach(const Status& why) {
  switch_->Unregister(scheme_index_, port_, endpoint_id_);
  DropLocalRpcs(why);
  switch_ = nullptr;
}

// ---------------------------------------------------------------- client

Result<uint64_t> SwitchedTransport::SendRequestTo(const NetAddress& server,
                                                  uint16_t server_endpoint, Buffer request,
                                                  uint64_t cookie,
                                                  const transport::SendOptions& options) {
  if (switch_ != nullptr && switch_->IsLocal(server)) {
    SwitchedTransport* target = switch_->Find(scheme_index_, server.port(), server_endpoint);
    if (target != nullptr) {
      return SendLocal(*target, server, std::move(request), cookie);
    }
    // Not switched (no such endpoint here, or one outside the switch): the
    // daemon's real socket answers, as for any peer.
  }
  return inner_->SendRequestTo(server, server_endpoint, std::move(request), cookie, options);
}

Result<uint64_t> SwitchedTransport::SendLocal(SwitchedTransport& target, const NetAddress& server,
                                              Buffer request, uint64_t cookie) {
  if (calls_.size() >= limits_.max_local_rpcs) {
    ++counts_.refused;
    return ResourceExhaustedError(scheme_ + ": " + std::to_string(calls_.size()) +
                                  " local RPCs pending fill max_local_rpcs");
  }
  if (target.served_.size() >= target.limits_.max_local_rpcs) {
    ++counts_.refused;
    return ResourceExhaustedError(scheme_ + ": local endpoint #" +
                                  std::to_string(target.endpoint_id_) + " holds " +
                                  std::to_string(target.served_.size()) +
                                  " local requests (max_local_rpcs)");
  }
  const uint64_t id = switch_->NextLocalId();
  // The server sees us at the address it was called on with our port: the
  // kernel's source address for a packet to a local address is that
  // address, and a request sent back to it is local again.
  ServerRpcKey key{server.WithPort(port_), endpoint_id_, id};
  calls_.Insert(id, LocalCall{&target, cookie, false});
  target.served_.Insert(id, LocalServed{this, key, false});
  MessageEvent event;
  event.kind = MessageEvent::Kind::kRequest;
  event.client_id = id;
  event.server_key = key;
  event.message = std::move(request);  // the bytes themselves never move
  target.Arrive(std::move(event));
  ++counts_.requests;
  return id;
}

bool SwitchedTransport::Cancel(uint64_t client_id) {
  if (!IsLocalId(client_id)) return inner_->Cancel(client_id);
  LocalCall* call = calls_.Find(client_id);
  if (call == nullptr) return false;
  // Its server forgets it (a later SendResponse gets NotFound; a request
  // it has not popped yet is dropped); an event of ours already queued is
  // dropped at PopLocal, which finds no call.
  if (call->server != nullptr) call->server->served_.Erase(client_id);
  calls_.Erase(client_id);
  ++counts_.cancelled;
  return true;
}

void SwitchedTransport::FailCall(uint64_t id, LocalCall& call, const Status& why) {
  call.server = nullptr;
  if (call.ended) return;  // its response is queued already: it stands
  call.ended = true;
  MessageEvent event;
  event.kind = MessageEvent::Kind::kFailed;
  event.client_id = id;
  event.cookie = call.cookie;
  event.status = why;
  Arrive(std::move(event));
  ++counts_.failed;
}

// ---------------------------------------------------------------- server

Status SwitchedTransport::SendResponse(const ServerRpcKey& key, Buffer response,
                                       transport::MessagePriority priority) {
  // A local id from a local address: ours. A remote client's ids never
  // carry the bit (and one that did from afar still goes to the inner).
  if (!IsLocalId(key.client_id) || switch_ == nullptr || !switch_->IsLocal(key.client)) {
    return inner_->SendResponse(key, std::move(response), priority);
  }
  LocalServed* served = served_.Find(key.client_id);
  if (served == nullptr || !(served->key == key)) {
    return NotFoundError(scheme_ + ": local RPC " + std::to_string(key.client_id) + " from " +
                         key.client.ToString() + "/#" + std::to_string(key.client_port) +
                         " is gone (the client finished, cancelled or closed)");
  }
  if (served->answered) {
    return FailedPreconditionError(scheme_ + ": local RPC " + std::to_string(key.client_id) +
                                   " from " + key.client.ToString() + " was already answered");
  }
  SwitchedTransport& client = *served->client;
  LocalCall* call = client.calls_.Find(key.client_id);
  if (call == nullptr) {
    // Cancel and death erase the served entry before the call, so this
    // cannot happen; if it did, the RPC is gone either way.
    served_.Erase(key.client_id);
    return NotFoundError(scheme_ + ": local RPC " + std::to_string(key.client_id) + " is gone");
  }
  // Kept (answered) until the client pops the response: that is the
  // client's acknowledgment, after which the RPC is forgotten here.
  served->answered = true;
  call->ended = true;
  MessageEvent event;
  event.kind = MessageEvent::Kind::kResponse;
  event.client_id = key.client_id;
  event.cookie = call->cookie;
  event.message = std::move(response);
  client.Arrive(std::move(event));
  ++counts_.responses;
  return OkStatus();
}

// ---------------------------------------------------------------- events

PollResult SwitchedTransport::Poll() {
  PollResult result = inner_->Poll();
  if (!arriving_.empty()) {
    result.work += static_cast<int>(arriving_.size());
    if (ready_head_ == ready_.size()) {
      ready_.clear();
      ready_head_ = 0;
      ready_.swap(arriving_);  // arriving_ takes the drained vector's capacity
    } else {
      for (MessageEvent& event : arriving_) ready_.push_back(std::move(event));
      arriving_.clear();
    }
  }
  if (ready_head_ < ready_.size()) {
    if (result.now == 0) result.now = clock_.NowNs();
    result.next_deadline = std::min(result.next_deadline, result.now);
  }
  return result;
}

TimeNs SwitchedTransport::NextDeadline() const {
  if (ready_head_ < ready_.size() || !arriving_.empty()) return clock_.NowNs();
  return inner_->NextDeadline();
}

bool SwitchedTransport::PopEvent(MessageEvent* out) {
  prefer_local_ = !prefer_local_;
  if (prefer_local_) return PopLocal(out) || inner_->PopEvent(out);
  return inner_->PopEvent(out) || PopLocal(out);
}

bool SwitchedTransport::PopLocal(MessageEvent* out) {
  while (ready_head_ < ready_.size()) {
    MessageEvent& event = ready_[ready_head_++];
    bool live;
    if (event.kind == MessageEvent::Kind::kRequest) {
      // Gone when its client cancelled or closed before we saw it: it was
      // never delivered, so at-most-once holds.
      live = served_.Contains(event.client_id);
    } else {
      LocalCall* call = calls_.Find(event.client_id);
      live = call != nullptr;  // gone when we cancelled it
      if (live) {
        // Taking the response acknowledges it: the server forgets the RPC.
        if (call->server != nullptr) call->server->served_.Erase(event.client_id);
        calls_.Erase(event.client_id);
      }
    }
    if (live) {
      *out = std::move(event);
    } else {
      event = MessageEvent();  // frees the payload now
    }
    if (ready_head_ == ready_.size()) {
      ready_.clear();  // drained: reuse from the start
      ready_head_ = 0;
    }
    if (live) return true;
  }
  return false;
}

void SwitchedTransport::DropLocalRpcs(const Status& why) {
  // Our calls: their servers forget them; each fails here (an event only a
  // detached, still living transport will pop).
  calls_.ForEach([&](uint64_t id, LocalCall& call) {
    if (call.server != nullptr) call.server->served_.Erase(id);
    FailCall(id, call, why);
  });
  // The requests we serve: their clients learn at once that we are gone.
  served_.ForEach([&](uint64_t id, LocalServed& served) {
    LocalCall* call = served.client->calls_.Find(id);
    if (call != nullptr) served.client->FailCall(id, *call, why);
  });
  served_ = homa::IdMap<LocalServed>();
}

std::vector<std::pair<std::string, uint64_t>> SwitchedTransport::Counters() const {
  std::vector<std::pair<std::string, uint64_t>> all = inner_->Counters();
  const std::string p = scheme_ + ".local.";
  all.emplace_back(p + "requests", counts_.requests);
  all.emplace_back(p + "responses", counts_.responses);
  all.emplace_back(p + "failed", counts_.failed);
  all.emplace_back(p + "refused", counts_.refused);
  all.emplace_back(p + "cancelled", counts_.cancelled);
  all.emplace_back(p + "pending_calls", calls_.size());
  all.emplace_back(p + "served", served_.size());
  return all;
}

}  // namespace wharf::daemon
