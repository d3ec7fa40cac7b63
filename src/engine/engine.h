// engine/engine.h: Engine, wharf's message and RPC layer above its
// transports: connections (connect/accept/send/recv/disconnect), RPCs with
// deadlines, and group barriers. Every message it sends starts with a Frame
// (engine/frame.h). Each peer is reached through the transport its URI
// scheme names (homa://, tcp://); the frames and semantics are the same on
// all of them.
//
// The engine knows nothing of who hosts it. Operations go in with an id the
// host chooses; each ends in exactly one EngineSink::OnComplete(id, ...).
// Requests for served methods go out through EngineSink::OnRequest and are
// answered with Respond(), now or later, so the engine keeps answering its
// peers while an application's handler runs.
//
// Its books are kept by its parts: PendingOps (operations and deadlines),
// ConnectionTable (connections and accepting) and BarrierRounds (the rounds
// it coordinates); the Engine starts operations, handles what its peers
// and transports send, and completes. Single-threaded: it owns its state;
// the host serialises calls into it and drives Poll().
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "absl/container/flat_hash_map.h"

#include "base/clock.h"
#include "engine/barrier_rounds.h"
#include "engine/connection_table.h"
#include "engine/engine_api.h"
#include "engine/engine_sink.h"
#include "engine/frame.h"
#include "engine/peer_ref.h"
#include "engine/pending_ops.h"
#include "engine/peer_rtt_table.h"
#include "engine/region_ops.h"
#include "engine/uri.h"
#include "transport/large_buffer_pool.h"
#include "transport/message_transport.h"

namespace wharf::engine {

struct EngineLimits {
  // Largest message or RPC payload the application may send (the transport's
  // own limit also covers the engine's frame header).
  uint64_t max_message_bytes = 64ull << 20;
  // Bytes a connection may hold delivered-but-unread before new messages to
  // it are refused with kResourceExhausted (the sender's ISend fails).
  uint64_t max_queued_bytes_per_connection = 256ull << 20;
  // How often a connection with receivers waiting asks its peer whether the
  // connection is still open (endpoint.keepalive), so that a connection that
  // only receives learns of its peer's death or restart: the transport fails
  // the question with kUnavailable, or the peer answers NotFound. 0 = never.
  DurationNs keepalive_ns = 500 * kNsPerMs;
  // Connections peers may open to us (accepted, queued or open) before more
  // are refused with kResourceExhausted (endpoint.max_connections).
  size_t max_connections = 65'536;
  // Barrier rounds peers may hold open at this endpoint as coordinator
  // (endpoint.max_barrier_rounds), and how long a round whose local member
  // never arrives is kept (endpoint.barrier_round_timeout); its waiting
  // members then get kDeadlineExceeded.
  size_t max_barrier_rounds = 4'096;
  DurationNs barrier_round_timeout_ns = 60 * kNsPerSec;
  // Peers whose round trips the engine keeps (endpoint.peer_rtt_peers; 0:
  // none, and no clock read for it), and how long an idle one is kept
  // (endpoint.peer_rtt_idle): PeerRttTable.
  size_t peer_rtt_peers = 256;
  DurationNs peer_rtt_idle_ns = 60 * kNsPerSec;
};

// Finds or opens the host's transport for a URI scheme ("tcp"), for peers
// whose scheme the engine has no transport for yet. The host owns it and
// keeps it alive as long as the engine.
using TransportOpener = std::function<Result<transport::MessageTransport*>(std::string_view)>;

// Owned by the host. Borrows the transports, `clock` and `sink`, which
// outlive it.
class Engine final : public EngineApi {
 public:
  // `primary` is the transport the endpoint listens on; `opener` (may be
  // empty) supplies transports for other schemes on first use.
  Engine(transport::MessageTransport* primary, TransportOpener opener, const Clock& clock,
         EngineLimits limits, EngineSink* sink);
  ~Engine() override;

  // "homa://1.2.3.4:5678": a peer's address as applications see it.
  std::string UriOf(const PeerRef& peer) const;
  // The same, remembered: handlers get it on every request, and formatting
  // an address costs more than the rest of dispatching one. Valid until the
  // next call.
  const std::string& PeerUri(const PeerRef& peer);
  // The transports in use so far, primary first.
  const std::vector<transport::MessageTransport*>& transports() const { return transports_; }
  void AppendReadableFds(std::vector<int>* fds) const override {
    for (const transport::MessageTransport* t : transports_) t->AppendReadableFds(fds);
  }

  // --- operations: each ends in one sink OnComplete(op_id, ...) ---
  // Host op ids are nonzero and below 2^63 (the engine keeps the rest).
  // Connect and Accept complete with the local connection id as value.
  void Connect(uint64_t op_id, const Uri& peer, bool ordered, uint32_t stream_method,
               TimeNs deadline_ns) override;
  void Listen() override { conns_.Listen(); }
  void Accept(uint64_t op_id, TimeNs deadline_ns) override { AcceptFrom(op_id, deadline_ns, false); }
  void ServeStreams(uint32_t method, bool served) override { conns_.ServeStreams(method, served); }
  void AcceptStream(uint64_t op_id, TimeNs deadline_ns) override {
    AcceptFrom(op_id, deadline_ns, true);
  }
  Result<uint32_t> StreamMethodOf(uint64_t conn) const override;
  void Send(uint64_t op_id, uint64_t conn, Buffer message) override;
  void Recv(uint64_t op_id, uint64_t conn) override;
  // kInvalidArgument for a priority outside 0..7 (and not by size).
  void Call(uint64_t op_id, const Uri& peer, uint32_t method, Buffer request, TimeNs deadline_ns,
            const transport::SendOptions& options = {}) override;
  void CallOnConnection(uint64_t op_id, uint64_t conn, uint32_t method, Buffer request,
                        TimeNs deadline_ns) override;
  void Disconnect(uint64_t op_id, uint64_t conn) override;
  // Round `round` of group `group` with `members` members.
  void BarrierArrive(uint64_t op_id, const Uri& coordinator, bool is_coordinator, uint64_t group,
                     uint64_t round, uint32_t members, TimeNs deadline_ns) override;

  // Forgets a connection the application dropped (after Disconnect).
  void Release(uint64_t conn) override;
  Result<std::string> PeerOf(uint64_t conn) const override;

  // --- remote memory: RegionOps ---
  void AskRegion(uint64_t op_id, const Uri& peer, const transport::RegionSpec& spec) override {
    if (!shutdown_status_.ok()) return Complete(op_id, shutdown_status_);
    regions_.Ask(op_id, peer, spec);
  }
  void ReadRegion(uint64_t op_id, uint64_t handle, uint64_t offset, Buffer into) override {
    if (!shutdown_status_.ok()) return Complete(op_id, shutdown_status_);
    regions_.Read(op_id, handle, offset, std::move(into));
  }
  void WriteRegion(uint64_t op_id, uint64_t handle, uint64_t offset, Buffer from,
                   std::optional<uint64_t> immediate) override {
    if (!shutdown_status_.ok()) return Complete(op_id, shutdown_status_);
    regions_.Write(op_id, handle, offset, std::move(from), immediate);
  }
  void RegionAtomic(uint64_t op_id, uint64_t handle, uint64_t offset, transport::RegionAtomicOp op,
                    uint64_t value, uint64_t compare) override {
    if (!shutdown_status_.ok()) return Complete(op_id, shutdown_status_);
    regions_.Atomic(op_id, handle, offset, op, value, compare);
  }
  Status ReleaseRegion(uint64_t handle) override { return regions_.Release(handle); }
  void LendRegion(uint64_t op_id, const Uri& peer, const transport::RegionSpec& spec) override {
    if (!shutdown_status_.ok()) return Complete(op_id, shutdown_status_);
    Result<transport::LentRegion> lent = regions_.Lend(peer, spec);
    if (!lent.ok()) return Complete(op_id, lent.status());
    Complete(op_id, OkStatus(), Buffer::Wrap(lent->bytes, nullptr), lent->id);
  }
  void LendMemory(uint64_t op_id, const Uri& peer, std::span<std::byte> memory, uint8_t access,
                  uint32_t lifetime_ms) override {
    if (!shutdown_status_.ok()) return Complete(op_id, shutdown_status_);
    Result<uint64_t> id = regions_.LendMemory(peer, memory, access, lifetime_ms);
    if (!id.ok()) return Complete(op_id, id.status());
    Complete(op_id, OkStatus(), Buffer(), *id);
  }
  Status RevokeRegion(uint64_t region) override { return regions_.Revoke(region); }
  std::span<std::byte> LentRegionBytes(uint64_t region) override {
    return regions_.LentBytes(region);
  }
  bool PopRegionEvent(transport::RegionEvent* out) override { return regions_.PopEvent(out); }

  // --- serving ---
  // Requests for `method` go to the sink (OnRequest) from now on; requests
  // for methods not served are answered kUnimplemented here.
  void SetServed(uint32_t method, bool served) override;
  // Answers a request the sink received: `status` not ok sends it as the
  // error. Nothing happens when the request is gone (the client cancelled,
  // timed out or died).
  void Respond(const ServerCallRef& call, Status status, Buffer payload = Buffer(),
               transport::MessagePriority priority = transport::kPriorityBySize) override;

  // Completes operation `op_id` with kCancelled if still pending; a call's
  // server is told (best effort), so it can stop working on it.
  void Cancel(uint64_t op_id) override;
  void Sync(uint64_t op_id) override { Complete(op_id, OkStatus()); }
  // Fails everything pending with `why` (the host is closing).
  void Shutdown(const Status& why) override;

  // Every transport's batch (MessageTransport::BeginBatch). Poll also
  // batches on its own the answers to the requests one transport delivered
  // in one pass: they leave together once that pass's handlers have run, or
  // before the next handler starts once the first has waited
  // kMaxBatchHoldNs (a slow handler then delays those before it by at most
  // that plus its own run time).
  void BeginBatch() override;
  void EndBatch() override;
  static constexpr DurationNs kMaxBatchHoldNs = 20 * kNsPerUs;
  // The host read the clock just before a run of operations (wharfd, before
  // an application's commands): calls until ClearHostNow turn their deadline
  // into the time left on the wire from `now` instead of reading the clock
  // each (a read costs ~20 ns here, a fifth of a call's own work). The time
  // left then counts from the run's start: at most the run's length longer.
  void SetHostNow(TimeNs now) { host_now_ns_ = now; }
  void ClearHostNow() { host_now_ns_ = 0; }

  // Runs the transports and dispatches what they report; expires deadlines.
  transport::PollResult Poll() override;
  // When Poll() must run next at the latest.
  TimeNs NextDeadline() const override;

  size_t pending_ops() const { return ops_.size(); }
  // Of those, the ones whose answer is on its way from a peer (calls,
  // sends, connects; not accepts, receives or barriers, which may wait for
  // ever): a host that has some can expect work soon.
  size_t ops_awaiting_answer() const { return ops_.awaiting_answer(); }
  // Buffers of LargeBufferPool::kMinBytes or more come from a pool and go
  // back to it when dropped: an application that allocates a fresh 1 MiB
  // message each time otherwise pays 256 page faults in the transport's
  // copy whenever glibc has given the last one back (tcp:// 1 MiB bulk ran
  // at 40 instead of 67 Gbit/s in those runs). Smaller ones: Buffer::Allocate.
  Buffer AllocateBuffer(size_t size) override;
  // The round trips of this engine's calls and messages per peer and
  // transport scheme since the last take (PeerRttTable::Take): the host's
  // passive view of its paths. Idle peers are forgotten here.
  void TakePeerRtts(TimeNs now,
                    const std::function<void(std::string_view scheme, const PeerRttDelta&)>& visit);
  const PeerRttTable& peer_rtts() const { return peer_rtts_; }
  KernelStamps completing_stamps() const override { return completing_stamps_; }
  // The engine's counters ("engine.*"), then every transport's.
  std::vector<std::pair<std::string, uint64_t>> Counters() const override;

 private:
  struct Counts {
    uint64_t cancel_notices_sent = 0;
    uint64_t cancel_notices_received = 0;
  };

  // Records operation `op_id` (and its deadline).
  void Register(uint64_t op_id, Op op) { ops_.Add(op_id, std::move(op)); }
  // The peer `uri` names, opening its scheme's transport on first use.
  Result<PeerRef> PeerFor(const Uri& uri);
  void CallPeer(uint64_t op_id, const PeerRef& peer, uint32_t method, Buffer request,
                TimeNs deadline_ns, const transport::SendOptions& options);
  // Sends `frame` + `payload` as a request for op `op_id`.
  void StartRequest(uint64_t op_id, const PeerRef& peer, const Frame& frame, Buffer payload);
  // Accept (streams false) or AcceptStream.
  void AcceptFrom(uint64_t op_id, TimeNs deadline_ns, bool streams);
  void FinishOp(uint64_t op_id, Status status, Buffer message = Buffer(), uint64_t value = 0);
  // Completes an operation that was never recorded (an immediate result).
  void Complete(uint64_t op_id, Status status, Buffer message = Buffer(), uint64_t value = 0) {
    sink_->OnComplete(op_id, std::move(status), std::move(message), value);
  }
  // Stops a pending operation (withdrawing it from the transport, its
  // connection or barrier) and completes it with `why`.
  void StopOp(uint64_t op_id, Status why);
  // InvalidArgument when `bytes` is over the payload limit.
  Status CheckSize(size_t bytes) const;
  // When a request measured by peer_rtts_ leaves: 0 when not measuring (a
  // clock at 0, as a simulated one starts, reads 1).
  TimeNs RttStart() const {
    if (!peer_rtts_.enabled()) return 0;
    return std::max<TimeNs>(1, host_now_ns_ != 0 ? host_now_ns_ : clock_.NowNs());
  }
  // A call's or message's answer (`answered`) or failure, for peer_rtts_.
  void NoteRoundTrip(const Op& op, bool answered, TimeNs now);
  // Tells the server of a withdrawn call that its answer is no longer wanted.
  void SendCancelNotice(const Op& call);

  // Requests from peers, each answered with a kReply frame. Everything
  // there is input from the network: a malformed frame gets an error
  // reply, never a crash.
  void HandleRequest(uint8_t transport, transport::MessageEvent& event);
  void HandleConnect(const ServerCallRef& call, const Frame& frame);
  void HandleMessage(const ServerCallRef& call, const Frame& frame, Buffer payload);
  void HandleDisconnect(const ServerCallRef& call, const Frame& frame);
  void HandleRpc(const ServerCallRef& call, const Frame& frame, Buffer payload, TimeNs now,
                 TimeNs received_ns);
  void HandleCancel(const ServerCallRef& call, const Frame& frame);
  void HandleBarrier(const ServerCallRef& call, const Frame& frame, TimeNs now);
  void HandleKeepAlive(const ServerCallRef& call, const Frame& frame);
  // Answers a complete round's members and completes its local member.
  void ReleaseBarrier(BarrierRounds::Release& round);
  void Deliver(ConnState& conn, Buffer message);
  void CloseConnection(ConnState& conn, Status why);
  // The client of a request: its address and (homa) its endpoint there.
  static PeerRef ClientOf(const ServerCallRef& call) {
    return {call.transport, call.key.client, call.key.client_port};
  }

  // Replies and failures for our own requests.
  void HandleReply(transport::MessageEvent& event);
  // Sends a keep-alive on every open connection with receivers waiting (and
  // none in flight); re-arms itself while there are such connections.
  void SendKeepAlives(TimeNs now);
  void ArmKeepAlive(TimeNs now);
  // Rounds whose local member did not come in time: their members hear.
  void ExpireBarrierRounds(TimeNs now);

  // Index = PeerRef::transport; [0] is the primary. Borrowed from the host.
  std::vector<transport::MessageTransport*> transports_;
  TransportOpener opener_;
  const Clock& clock_;
  EngineLimits limits_;
  EngineSink* sink_;

  // Set by Shutdown: every later operation fails at once with it.
  Status shutdown_status_;
  PendingOps ops_;
  ConnectionTable conns_;
  BarrierRounds barriers_;
  PeerRttTable peer_rtts_;
  TimeNs next_keepalive_ns_ = kNever;  // kNever while no receiver waits
  std::unordered_set<uint32_t> served_;  // methods the host serves (SetServed)

  // The clock as the transport being polled read it (Poll sets it before
  // dispatching that transport's events).
  TimeNs poll_now_ns_ = 0;
  TimeNs host_now_ns_ = 0;  // SetHostNow; 0: read the clock
  // HandleReply's call's kernel stamps, while it completes the op.
  KernelStamps completing_stamps_;
  // BeginBatch nesting, and how many transports (the first ones) the
  // outermost BeginBatch opened a batch on: one opened later has none to end.
  int batch_depth_ = 0;
  size_t batched_transports_ = 0;
  // PeerUri's memory, bounded (cleared when full).
  absl::flat_hash_map<PeerRef, std::string, PeerRefHash> peer_uris_;
  Counts counts_;
  // One-sided operations in flight (after transports_ and sink_, which it
  // borrows).
  RegionOps regions_{transports_, [this](const Uri& uri) { return PeerFor(uri); }, sink_};
  // AllocateBuffer's large buffers; shared with every Buffer lent from it.
  std::shared_ptr<transport::LargeBufferPool> send_pool_ =
      transport::LargeBufferPool::Create({});
};

}  // namespace wharf::engine
