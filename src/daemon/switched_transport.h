// daemon/switched_transport.h: SwitchedTransport, the MessageTransport an
// endpoint hosted by wharfd drives. It wraps the endpoint's real transport
// (a homa endpoint on the daemon's shared socket, or a tcp transport) and
// registers with the daemon's LocalSwitch (daemon/local_switch.h); requests
// to another registered endpoint on this host are delivered in-process (no
// socket, no copy of the payload), everything else goes to the inner
// transport. The semantics are MessageTransport's either way: at most one
// delivery, exactly one kResponse or kFailed per request unless cancelled,
// NotFound when answering a request whose client is gone, FailedPrecondition
// when answering twice (docs/transports.md, "Same-host delivery inside
// wharfd").
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/local_switch.h"
#include "homa/id_map.h"
#include "transport/message_transport.h"
#include "wharf/buffer.h"
#include "wharf/result.h"

namespace wharf::daemon {

struct SwitchLimits {
  // Local RPCs this transport may have pending as a client, and (separately)
  // local requests it may hold as a server, before more are refused with
  // kResourceExhausted (counted in <scheme>.local.refused).
  size_t max_local_rpcs = 65'536;
};

// Owned by the daemon, next to the endpoint's engine, which borrows it.
// Borrows the switch and the inner transport, which outlive it (the
// destructor touches neither the inner nor, once detached, the switch). Destroying
// it is the endpoint's death as its local peers see it: the local RPCs it
// was serving fail at their clients with kUnavailable at once, and the
// servers of the local RPCs it had sent forget them (a later SendResponse
// there gets NotFound). Single-threaded: the daemon's loop thread.
class SwitchedTransport final : public transport::MessageTransport {
 public:
  // Client RPC ids of local RPCs have this bit set; the inner transports'
  // ids never do (homa and tcp count from the wall clock in ns, below 2^63
  // until the year 2262), so Cancel and SendResponse can tell which path
  // owns an id.
  static constexpr uint64_t kLocalIdBit = uint64_t{1} << 63;
  static bool IsLocalId(uint64_t id) { return (id & kLocalIdBit) != 0; }

  // Registers as (inner->scheme(), inner->LocalAddress().port(),
  // endpoint_id) with `local_switch`: kAlreadyExists if that is taken.
  static Result<std::unique_ptr<SwitchedTransport>> Create(LocalSwitch* local_switch,
                                                           transport::MessageTransport* inner,
                                                           uint16_t endpoint_id,
                                                           SwitchLimits limits = SwitchLimits{});
  ~SwitchedTransport() override;
  SwitchedTransport(const SwitchedTransport&) = delete;
  SwitchedTransport& operator=(const SwitchedTransport&) = delete;

  uint16_t endpoint_id() const { return endpoint_id_; }
  transport::MessageTransport& inner() const { return *inner_; }
  // Local RPCs this transport has sent and not yet seen end (popped).
  size_t num_local_calls() const { return calls_.size(); }
  // Local requests this transport holds as a server (until the client has
  // taken the response, cancelled or died).
  size_t num_local_served() const { return served_.size(); }

  // transport::MessageTransport. The server of a local RPC sees it from
  // client (the address the client called, with the client's port) and
  // client_port (the client's endpoint id): an address that is itself
  // local, so requests the server makes back to it are switched too.
  std::string_view scheme() const override { return scheme_; }
  transport::NetAddress LocalAddress() const override { return inner_->LocalAddress(); }
  Result<uint64_t> SendRequest(const transport::NetAddress& server, Buffer request,
                               uint64_t cookie) override {
    return SendRequestTo(server, 0, std::move(request), cookie);
  }
  // A local call ignores `options` (no packets); a remote one passes them on.
  Result<uint64_t> SendRequestTo(const transport::NetAddress& server, uint16_t server_endpoint,
                                 Buffer request, uint64_t cookie,
                                 const transport::SendOptions& options = {}) override;
  Status SendResponse(const transport::ServerRpcKey& key, Buffer response,
                      transport::MessagePriority priority = transport::kPriorityBySize) override;
  bool Cancel(uint64_t client_id) override;
  // Local deliveries are not sent, so only the inner transport batches.
  void BeginBatch() override { inner_->BeginBatch(); }
  void EndBatch() override { inner_->EndBatch(); }
  // Local deliveries carry the sender's Buffers: only the inner transport
  // receives into memory of ours.
  void SetReceiveAllocator(transport::ReceiveAllocator* a) override {
    inner_->SetReceiveAllocator(a);
  }
  // Polls the inner transport, then makes the local events that arrived
  // since the last Poll poppable.
  transport::PollResult Poll() override;
  TimeNs NextDeadline() const override;
  // Alternates between the inner's events and local ones while both have
  // some, so neither waits behind a stream of the other.
  bool PopEvent(transport::MessageEvent* out) override;
  int ReadableFd() const override { return inner_->ReadableFd(); }
  // One-sided operations go straight to the network transport's (the
  // switch carries messages only).
  transport::RemoteMemory* remote_memory() override { return inner_->remote_memory(); }
  void AppendReadableFds(std::vector<int>* fds) const override {
    inner_->AppendReadableFds(fds);
  }
  // The inner's, then this endpoint's local ones (per endpoint, unlike
  // homa's per-socket counters): <scheme>.local.requests (sent through the
  // switch), .local.responses (answered through it), .local.failed (local
  // RPCs of ours failed because their server went away), .local.refused
  // (over max_local_rpcs), .local.cancelled, and the gauges
  // .local.pending_calls and .local.served.
  std::vector<std::pair<std::string, uint64_t>> Counters() const override;

 private:
  // A local RPC we sent, from SendRequestTo until its event is popped (or
  // it is cancelled).
  struct LocalCall {
    SwitchedTransport* server = nullptr;  // nullptr once it went away
    uint64_t cookie = 0;
    bool ended = false;  // its kResponse/kFailed is queued here
  };
  // A local request we serve, from SendRequestTo until its client took the
  // response, cancelled or died.
  struct LocalServed {
    SwitchedTransport* client = nullptr;  // never null: it removes us first
    transport::ServerRpcKey key;          // as delivered (checked on answer)
    bool answered = false;
  };
  struct Counts {
    uint64_t requests = 0;
    uint64_t responses = 0;
    uint64_t failed = 0;
    uint64_t refused = 0;
    uint64_t cancelled = 0;
  };

  SwitchedTransport(transport::MessageTransport* inner, const Clock& clock,
                    uint16_t endpoint_id, uint8_t scheme_index, uint16_t port,
                    SwitchLimits limits);

  // Delivers a request to `target`, registered at `server`.
  Result<uint64_t> SendLocal(SwitchedTransport& target, const transport::NetAddress& server,
                             Buffer request, uint64_t cookie);
  // Queues `event` for this transport's next Poll.
  void Arrive(transport::MessageEvent event) { arriving_.push_back(std::move(event)); }
  // Fails local call `id` (ours) because its server went away.
  void FailCall(uint64_t id, LocalCall& call, const Status& why);
  // Takes the next live local event; stale ones (cancelled, or whose
  // client died before we saw the request) are dropped on the way.
  bool PopLocal(transport::MessageEvent* out);
  // Ends every local RPC, as our death or the switch's would: our calls'
  // servers forget them and they fail here; our served requests fail at
  // their clients with `why`.
  void DropLocalRpcs(const Status& why);
  friend class LocalSwitch;  // calls Detach
  void Detach(const Status& why);

  LocalSwitch* switch_ = nullptr;  // set once registered; nullptr once detached
  transport::MessageTransport* const inner_;
  const Clock& clock_;
  // The inner's scheme, kept so that the destructor, which may run after the
  // daemon closed the inner, never calls it.
  const std::string scheme_;
  const uint16_t endpoint_id_;
  const uint8_t scheme_index_;
  const uint16_t port_;  // the inner's local port, our registration
  const SwitchLimits limits_;
  // By local client id; both bounded by limits_.max_local_rpcs.
  homa::IdMap<LocalCall> calls_;
  homa::IdMap<LocalServed> served_;
  // Local events: pushed by peers into arriving_ at any time, moved to
  // ready_ by Poll (so a burst of requests to ourselves cannot keep one
  // PopEvent loop going forever), popped from ready_[ready_head_..]. Vectors
  // used as queues, reused when drained: steady traffic never allocates.
  // Every event matches an entry of calls_ or served_, so they are bounded
  // like those (plus the stale events of cancelled calls, dropped at the
  // next pop).
  std::vector<transport::MessageEvent> arriving_;
  std::vector<transport::MessageEvent> ready_;
  size_t ready_head_ = 0;
  bool prefer_local_ = false;  // which queue PopEvent tries first next
  Counts counts_;
};

}  // namespace wharf::daemon
