// engine/engine.h: Engine, wharf's message and RPC layer above its
// transports: connections (connect/accept/send/recv/disconnect), RPCs with
// deadlines and handlers, and group barriers. Every message it sends starts
// with a Frame (engine/frame.h); every operation ends in a CompletionState.
// Each peer is reached through the transport its URI scheme names (homa://,
// tcp://); the frames and semantics are the same on all of them.
//
// The engine is single-threaded and owns its state; its host (the embedded
// endpoint core, later the daemon) serialises calls into it and drives Poll().
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "base/node_recycler.h"
#include "engine/completion_state.h"
#include "engine/connection_state.h"
#include "engine/frame.h"
#include "engine/peer_ref.h"
#include "engine/uri.h"
#include "transport/message_transport.h"
#include "wharf/endpoint.h"

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
};

// Finds or opens the host's transport for a URI scheme ("tcp"), for peers
// whose scheme the engine has no transport for yet. The host owns it and
// keeps it alive as long as the engine.
using TransportOpener = std::function<Result<transport::MessageTransport*>(std::string_view)>;

// Owned by the host. Borrows the transports and `clock`, which outlive it.
class Engine {
 public:
  using StatePtr = std::shared_ptr<internal::CompletionState>;

  // `primary` is the transport the endpoint listens on; `opener` (may be
  // empty) supplies transports for other schemes on first use.
  Engine(transport::MessageTransport* primary, TransportOpener opener, const Clock& clock,
         EngineLimits limits, std::weak_ptr<ProgressDriver> driver,
         std::function<void()> on_complete);
  ~Engine();

  // "homa://1.2.3.4:5678": a peer's address as applications see it.
  std::string UriOf(const PeerRef& peer) const;
  // The same, remembered: handlers get it on every request, and formatting
  // an address costs more than the rest of dispatching one. Valid until the
  // next call.
  const std::string& PeerUri(const PeerRef& peer);
  // The transports in use so far, primary first.
  const std::vector<transport::MessageTransport*>& transports() const { return transports_; }

  // --- connections (the StatePtr's value is the local connection id) ---
  StatePtr Connect(const Uri& peer, bool ordered, TimeNs deadline_ns);
  void Listen() { listening_ = true; }
  StatePtr Accept(TimeNs deadline_ns);
  StatePtr Send(uint64_t conn, Buffer message);
  StatePtr Recv(uint64_t conn);
  StatePtr Call(const Uri& peer, uint32_t method, Buffer request, TimeNs deadline_ns);
  StatePtr CallOnConnection(uint64_t conn, uint32_t method, Buffer request, TimeNs deadline_ns);
  StatePtr Disconnect(uint64_t conn);
  // Forgets a connection the application dropped (after Disconnect).
  void Release(uint64_t conn);
  Result<std::string> PeerOf(uint64_t conn) const;

  void SetHandler(uint32_t method, RpcHandler handler);

  // --- barriers: round `round` of group `group` with `members` members ---
  StatePtr BarrierArrive(const Uri& coordinator, bool is_coordinator,
                         uint64_t group, uint64_t round, uint32_t members, TimeNs deadline_ns);

  // Completes operation `op_id` with kCancelled if still pending.
  void Cancel(uint64_t op_id);
  // Stops a pending operation (withdrawing it from the transport, its
  // connection or barrier) and completes it with `why`.
  void StopOp(uint64_t op_id, Status why);
  // Fails everything pending with `why` (the host is closing).
  void Shutdown(const Status& why);

  // Runs the transports and dispatches what they report; expires deadlines.
  transport::PollResult Poll();
  // When Poll() must run next at the latest.
  TimeNs NextDeadline() const;

  size_t pending_ops() const { return ops_.size(); }

  // Runs the callbacks of operations completed so far. Poll() calls it last;
  // the host calls it after any other call into the engine. Callbacks may
  // call into the engine again.
  void RunCallbacks();

 private:
  enum class OpKind : uint8_t {
    kConnect, kSend, kCall, kDisconnect, kBarrier, kAccept, kRecv,
    kKeepAlive,  // internal: the engine's own question about op.conn
  };
  struct Op {
    OpKind kind;
    StatePtr state;
    uint64_t conn = 0;       // local connection id, when about one
    uint64_t rpc_id = 0;     // the transport's RPC id, 0 if none in flight
    uint8_t transport = 0;   // which transport rpc_id belongs to
    TimeNs deadline_ns = kNever;
  };
  // A request from a peer, to be answered: which transport and which RPC.
  struct ServerCall {
    uint8_t transport = 0;
    transport::ServerRpcKey key;
  };
  struct BarrierRound {
    uint32_t members = 0;
    std::vector<ServerCall> waiting;  // remote members' requests
    uint64_t local_op = 0;                    // coordinator's own arrival, 0 if not yet
  };

  StatePtr CallPeer(const PeerRef& peer, uint32_t method, Buffer request, TimeNs deadline_ns);
  StatePtr NewState(OpKind kind, uint64_t conn, TimeNs deadline_ns, uint64_t* op_id);
  // Records operation `op_id` (its state is made here) and its deadline.
  StatePtr Register(uint64_t op_id, Op op);
  // The peer `uri` names, opening its scheme's transport on first use.
  Result<PeerRef> PeerFor(const Uri& uri);
  // Sends `frame` + `payload` as a request for op `op_id`.
  void StartRequest(uint64_t op_id, const PeerRef& peer, const Frame& frame, Buffer payload);
  void FinishOp(uint64_t op_id, Status status, Buffer message = Buffer(), uint64_t value = 0);
  StatePtr Failed(Status status);
  // InvalidArgument when `bytes` is over the payload limit.
  Status CheckSize(size_t bytes) const;

  // engine_serve.cc: requests from peers.
  void HandleRequest(uint8_t transport, transport::MessageEvent& event);
  void Reply(const ServerCall& call, Status status, Buffer payload = Buffer());
  void HandleConnect(const ServerCall& call, const Frame& frame);
  void HandleMessage(const ServerCall& call, const Frame& frame, Buffer payload);
  void HandleDisconnect(const ServerCall& call, const Frame& frame);
  void HandleRpc(const ServerCall& call, const Frame& frame, Buffer payload);
  void HandleBarrier(const ServerCall& call, const Frame& frame);
  void HandleKeepAlive(const ServerCall& call, const Frame& frame);
  void MaybeReleaseBarrier(uint64_t group, uint64_t round);
  void Deliver(ConnState& conn, Buffer message);
  void CloseConnection(ConnState& conn, Status why);
  ConnState* FindByWire(const PeerRef& peer, uint64_t wire_id);
  static PeerRef ClientOf(const ServerCall& call) { return {call.transport, call.key.client}; }

  // Replies and failures for our own requests.
  void HandleReply(transport::MessageEvent& event);
  void ExpireDeadlines(TimeNs now);
  // Sends a keep-alive on every open connection with receivers waiting (and
  // none in flight); re-arms itself while there are such connections.
  void SendKeepAlives(TimeNs now);
  void ArmKeepAlive(TimeNs now);

  // Index = PeerRef::transport; [0] is the primary. Borrowed from the host.
  std::vector<transport::MessageTransport*> transports_;
  TransportOpener opener_;
  const Clock& clock_;
  EngineLimits limits_;
  std::weak_ptr<ProgressDriver> driver_;
  std::function<void()> on_complete_;

  // Set by Shutdown: every later operation fails at once with it.
  Status shutdown_status_;
  uint64_t next_op_ = 1;
  std::unordered_map<uint64_t, Op> ops_;
  std::multimap<TimeNs, uint64_t> deadlines_;  // deadline -> op id
  // Both tables gain and lose an entry per operation: reuse their nodes.
  NodeRecycler<std::unordered_map<uint64_t, Op>> op_nodes_;
  NodeRecycler<std::multimap<TimeNs, uint64_t>> deadline_nodes_;

  uint64_t next_conn_ = 1;
  uint64_t wire_id_seed_;
  std::unordered_map<uint64_t, ConnState> conns_;  // by local id
  std::map<std::pair<PeerRef, uint64_t>, uint64_t> by_wire_;  // -> local id
  bool listening_ = false;
  TimeNs next_keepalive_ns_ = kNever;  // kNever while no receiver waits
  std::deque<uint64_t> accept_queue_;   // local ids of accepted connections
  std::deque<uint64_t> accept_waiters_;  // op ids of pending Accepts

  std::unordered_map<uint32_t, RpcHandler> handlers_;
  // Completed operations whose callbacks have not run yet: running them while
  // the engine is mid-way through its own maps would let them invalidate it.
  std::vector<std::pair<std::function<void(const Status&)>, StatePtr>> callbacks_;
  std::map<std::pair<uint64_t, uint64_t>, BarrierRound> barriers_;  // (group, round)
  // PeerUri's memory, bounded (cleared when full).
  std::map<PeerRef, std::string> peer_uris_;
};

}  // namespace wharf::engine
