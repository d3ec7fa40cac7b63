// homa/homa_endpoint.h: HomaEndpoint, one endpoint of the Homa-style protocol
// on a HomaHost's socket (docs/protocol.md, section 4): HomaModule's
// `homa_sock`. It is the transport::MessageTransport the engine drives,
// names itself on the wire by its endpoint id (the sport of its packets, the
// dport it accepts), and owns what is its own: its event queue, its receive
// allocator, the batches it opened and whether it is closed. Its RPCs live
// in the host (RpcRegistry; server RPCs in the peer table's records), which
// runs the protocol for every endpoint of the socket: the endpoint's calls go
// to the host's service for endpoints (homa_host.h), and the host hands it
// events through PushEvent.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "homa/homa_host.h"
#include "homa/rpc.h"
#include "transport/message_transport.h"
#include "wharf/buffer.h"
#include "wharf/result.h"

namespace wharf::homa {

// Owned by the engine (or a test); opened by HomaHost::OpenEndpoint (or
// Open), or by Create together with a host of its own. Borrows its host,
// which tells it when it goes first (OnHostDestroyed). Single-threaded:
// every call from the thread that drives its host.
class HomaEndpoint final : public transport::MessageTransport {
 public:
  // The single-endpoint case: a host on `net` with one endpoint, id
  // config.endpoint_id (the default endpoint unless set), which owns the
  // host. Borrows `net` and `clock`, which must outlive it.
  static Result<std::unique_ptr<HomaEndpoint>> Create(const HomaConfig& config,
                                                      transport::Datagram* net,
                                                      const Clock& clock);
  // Endpoint `id` on `host` (HomaHost::OpenEndpoint calls this).
  // kAlreadyExists if `id` is open there.
  static Result<std::unique_ptr<HomaEndpoint>> Open(HomaHost& host, uint16_t id);
  ~HomaEndpoint() override;  // closes it (Close)
  HomaEndpoint(const HomaEndpoint&) = delete;
  HomaEndpoint& operator=(const HomaEndpoint&) = delete;

  // This endpoint's id within its socket: the sport of its packets and the
  // dport the host routes to it. UDP addresses and ports are never checked:
  // a NAT may rewrite them.
  uint16_t endpoint_id() const { return id_; }
  // Its host; nullptr once the host was destroyed under it.
  HomaHost* host() const { return host_; }
  bool closed() const { return closed_; }
  // The host's (settings and counters are per socket). Require the host.
  const HomaConfig& config() const { return host_->config(); }
  const HomaStats& stats() const { return host_->stats(); }

  // transport::MessageTransport. A server is addressed by the UDP address of
  // its socket; SendRequest calls its default endpoint, SendRequestTo any.
  std::string_view scheme() const override { return "homa"; }
  transport::NetAddress LocalAddress() const override;
  Result<uint64_t> SendRequest(const transport::NetAddress& server, Buffer request,
                               uint64_t cookie = 0) override;
  Result<uint64_t> SendRequestTo(const transport::NetAddress& server, uint16_t server_endpoint,
                                 Buffer request, uint64_t cookie = 0,
                                 const transport::SendOptions& options = {}) override;
  Status SendResponse(const ServerRpcKey& key, Buffer response,
                      transport::MessagePriority priority = transport::kPriorityBySize) override;
  bool Cancel(uint64_t client_id) override;
  // Messages to this endpoint are reassembled in memory from `allocator`
  // when it has some (homa.receives_placed).
  void SetReceiveAllocator(transport::ReceiveAllocator* allocator) override {
    receive_allocator_ = allocator;
  }
  transport::ReceiveAllocator* receive_allocator() const { return receive_allocator_; }
  // The host's batch (HomaHost::BeginBatch): every endpoint of the socket
  // shares its transmit batch.
  void BeginBatch() override;
  void EndBatch() override;
  // Drives the host (HomaHost::Poll): every endpoint of the socket makes
  // progress, and events land in each one's own queue.
  PollResult Poll() override;
  TimeNs NextDeadline() const override;
  bool PopEvent(HomaEvent* out) override;
  // The host's socket: every endpoint of one host reports the same fds.
  int ReadableFd() const override;
  void AppendReadableFds(std::vector<int>* fds) const override;
  // The host's counters (per socket, not per endpoint).
  std::vector<std::pair<std::string, uint64_t>> Counters() const override;

  // Ends the endpoint: each pending client RPC fails with kCancelled (its
  // event stays in the queue for PopEvent), its server RPCs are forgotten
  // (tombstoned, so a reopened endpoint never runs them again), and its id
  // is free on the host. Later calls fail with kFailedPrecondition.
  // Idempotent.
  void Close();

  size_t pending_events() const { return events_.size() - events_head_; }
  // Its live RPCs (a walk over the host's: for tests and diagnostics).
  size_t num_client_rpcs() const;
  size_t num_server_rpcs() const;
  // The host's peer table. Require the host.
  size_t num_peers() const { return host_->num_peers(); }
  const PeerTableStats& peer_stats() const { return host_->peer_stats(); }

  // --- From its host ---

  // Queues `event` for PopEvent.
  void PushEvent(HomaEvent event) { events_.push_back(std::move(event)); }
  // The host is being destroyed: the endpoint closes as Close() does (its
  // client RPCs fail with kCancelled) and forgets the host; its calls fail
  // from then on.
  void OnHostDestroyed();

 private:
  HomaEndpoint(HomaHost* host, uint16_t id);
  Status Usable() const;
  // Close() with `why` as the status of the client RPCs it ends.
  void CloseWith(const Status& why);

  // Create() only: the host this endpoint came with. Declared first, so
  // destroyed last, after the endpoint closed itself.
  std::unique_ptr<HomaHost> owned_host_;
  HomaHost* host_;      // nullptr once the host is destroyed (OnHostDestroyed)
  const Clock* clock_;  // the host's, which outlives the host
  const uint16_t id_;
  bool closed_ = false;  // Close ran (or Open failed): unregistered from the host
  transport::ReceiveAllocator* receive_allocator_ = nullptr;  // SetReceiveAllocator
  // Batches this endpoint opened on the host and has not ended (Close ends
  // them, so the host is never left holding).
  int batch_depth_ = 0;
  // Events not yet popped: events_[events_head_ ..]. A vector used as a
  // queue (cleared whenever drained), so steady traffic never allocates.
  std::vector<HomaEvent> events_;
  size_t events_head_ = 0;
};

}  // namespace wharf::homa
