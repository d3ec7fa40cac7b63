// ucx/ucx_transport.h: UcxMessageTransport, wharf's ucx:// transport:
// reliable request/response messages over UCX (UCP active messages) with
// the semantics of homa:// and tcp:// (transport/message_transport.h).
// docs/transports.md ("UCX message transport") is the specification,
// wire/ucx_header.h the header each message carries.
//
// What UCX gives and what this adds:
//   - UCX keeps each connection (a UCP endpoint) reliable and ordered, and
//     moves a message eagerly or by rendezvous; every request is one active
//     message, every response one more, on the connection it came on.
//   - At most once: a request is never re-sent. A connection that fails
//     (UCX's word: the peer's process gone, a refused connect) fails every
//     call on it with kUnavailable at once; the next call opens a new one.
//   - Peers: a server knows a client by the connection's source IP and the
//     client's listening port from the header, the same identity tcp://
//     gives, so that a server's engine can reach back.
//   - Bounds: peers (ucx.max_peers, refused beyond), requests held
//     (ucx.max_server_rpcs, refused with kResourceExhausted), messages
//     (max_message_bytes, refused unread), idle connections we opened
//     (closed after ucx.idle_timeout); each counted.
//   - Driven by the host's loop through the worker's event fd: Poll
//     progresses, then arms the fd only when progress found nothing (spin,
//     then block).
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "transport/large_buffer_pool.h"
#include "transport/message_transport.h"
#include "ucx/ucp_worker.h"
#include "ucx/ucx_calls.h"
#include "ucx/ucx_opener.h"
#include "ucx/ucx_remote_memory.h"
#include "wire/ucx_header.h"

namespace wharf::ucx {

// Owned by the engine's host (or a test). Single-threaded, as its worker.
// Borrows `clock`, which must outlive it.
class UcxMessageTransport final : public transport::MessageTransport {
 public:
  static Result<std::unique_ptr<UcxMessageTransport>> Open(const UcxConfig& config,
                                                           const Clock& clock);
  ~UcxMessageTransport() override;

  // --- transport::MessageTransport ---
  std::string_view scheme() const override { return "ucx"; }
  transport::NetAddress LocalAddress() const override { return local_; }
  Result<uint64_t> SendRequest(const transport::NetAddress& server, Buffer request,
                               uint64_t cookie) override;
  // UCX has no per-message priority here: a valid one is accepted and
  // ignored, as tcp:// and the same-host switch do.
  Status SendResponse(const transport::ServerRpcKey& key, Buffer response,
                      transport::MessagePriority priority = transport::kPriorityBySize) override;
  // Forgets the call and tells the server, which drops it; a response
  // already on its way is dropped on arrival.
  bool Cancel(uint64_t client_id) override;
  // Messages are received into `allocator`'s memory when it has room
  // (wharfd: the application's receive area), eager and rendezvous alike.
  void SetReceiveAllocator(transport::ReceiveAllocator* allocator) override {
    allocator_ = allocator;
  }
  transport::PollResult Poll() override;
  TimeNs NextDeadline() const override;
  bool PopEvent(transport::MessageEvent* out) override;
  int ReadableFd() const override { return worker_->fd(); }
  // Per connection we opened: the server and UCX's lanes to it.
  std::vector<std::pair<std::string, std::string>> Paths() const override;
  std::vector<std::pair<std::string, uint64_t>> Counters() const override;

  // --- inspection, for `wharf status` and tests ---
  size_t num_client_calls() const { return client_.size(); }
  size_t num_server_calls() const { return server_.size(); }
  size_t num_peers() const { return worker_->peers(); }

  // One-sided remote memory over the same worker and connections.
  UcxRemoteMemory& ucx_memory() { return *remote_memory_; }
  transport::RemoteMemory* remote_memory() override { return remote_memory_.get(); }

 private:
  struct Stats {
    uint64_t requests_sent = 0, responses_sent = 0;
    uint64_t requests_received = 0, responses_received = 0;
    uint64_t refused_sent = 0, refused_received = 0;
    uint64_t cancels_sent = 0, cancels_received = 0;
    uint64_t calls_failed = 0;         // client calls ended by a failure or refusal
    uint64_t peer_failures = 0;
    uint64_t malformed_dropped = 0;    // headers that did not decode
    uint64_t duplicates_dropped = 0;   // a request whose key is still held
    uint64_t unmatched_dropped = 0;    // responses to no call of that peer
    uint64_t idle_closed = 0;          // our connections closed for idleness
  };

  UcxMessageTransport(const UcxConfig& config, const Clock& clock);
  // The worker's handlers.
  void OnMessage(UcxPeer peer, std::string_view header, Buffer message);
  void OnOversized(UcxPeer peer, std::string_view header, uint64_t bytes);
  void OnPeerFailed(UcxPeer peer, const Status& why);
  // Our connection to `server`, opened if there is none; marked used now.
  Result<UcxPeer> PeerFor(const transport::NetAddress& server, TimeNs now);
  // The identity of the client behind `peer`, listening at `reply_port`.
  transport::ServerRpcKey KeyOf(UcxPeer peer, uint16_t reply_port, uint64_t rpc_id) const;
  // Sends a header-only message.
  void SendControl(UcxPeer peer, const wire::UcxHeader& header);
  // Ends client call `id` with `status` (a kFailed event), if it is open.
  void FailCall(uint64_t id, Status status);
  // The kFailed event of call `id`, already out of the table.
  void PushFailed(uint64_t id, uint64_t cookie, Status status);
  // Closes our connections idle past ucx.idle_timeout.
  int CloseIdlePeers(TimeNs now);

  UcxConfig config_;
  const Clock& clock_;
  std::unique_ptr<UcpWorker> worker_;
  std::unique_ptr<UcxRemoteMemory> remote_memory_;
  transport::NetAddress local_;
  UcxClientCalls client_;
  UcxServerCalls server_;
  // Connections we opened, by server address, and when each fell idle.
  std::unordered_map<transport::NetAddress, UcxPeer> outgoing_;
  struct OutgoingPeer {
    transport::NetAddress server;
    TimeNs last_used = 0;
  };
  std::unordered_map<UcxPeer, OutgoingPeer> outgoing_peers_;
  std::deque<transport::MessageEvent> events_;
  transport::ReceiveAllocator* allocator_ = nullptr;
  // Where messages of LargeBufferPool::kMinBytes or more are received when
  // no allocator_ places them (embedded): kept blocks, not a fresh malloc
  // that glibc gives back to the kernel and faults in again per message.
  std::shared_ptr<transport::LargeBufferPool> receive_pool_ =
      transport::LargeBufferPool::Create({});
  TimeNs next_pool_check_ = 0;
  // The next idle check, region expiry or pool check.
  TimeNs TimerDeadline() const;
  // A send or receive may be under way that only progress moves on.
  bool need_progress_ = false;
  int idle_polls_ = 0;  // polls in a row that found no work
  TimeNs next_idle_check_ = kNever;
  Stats stats_;
};

}  // namespace wharf::ucx
