// engine/engine.h: Engine, wharf's message and RPC layer above a transport:
// connections (connect/accept/send/recv/disconnect), RPCs with deadlines and
// handlers, and group barriers. Every message it sends starts with a Frame
// (engine/frame.h); every operation ends in a CompletionState.
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
#include "engine/completion_state.h"
#include "engine/connection_state.h"
#include "engine/frame.h"
#include "homa/homa_transport.h"
#include "wharf/endpoint.h"

namespace wharf::engine {

struct EngineLimits {
  // Largest message or RPC payload the application may send (the transport's
  // own limit also covers the engine's frame header).
  uint64_t max_message_bytes = 64ull << 20;
  // Bytes a connection may hold delivered-but-unread before new messages to
  // it are refused with kResourceExhausted (the sender's ISend fails).
  uint64_t max_queued_bytes_per_connection = 256ull << 20;
};

// Owned by the host. Borrows `homa` and `clock`, which outlive it.
class Engine {
 public:
  using StatePtr = std::shared_ptr<internal::CompletionState>;

  Engine(homa::HomaTransport* homa, const Clock& clock, EngineLimits limits,
         std::weak_ptr<ProgressDriver> driver, std::function<void()> on_complete);
  ~Engine();

  // "homa://1.2.3.4:5678" for our own address or a peer's.
  static std::string Uri(const transport::NetAddress& addr);

  // --- connections (the StatePtr's value is the local connection id) ---
  StatePtr Connect(const transport::NetAddress& peer, bool ordered, TimeNs deadline_ns);
  void Listen() { listening_ = true; }
  StatePtr Accept(TimeNs deadline_ns);
  StatePtr Send(uint64_t conn, Buffer message);
  StatePtr Recv(uint64_t conn);
  StatePtr Call(const transport::NetAddress& peer, uint32_t method, Buffer request,
                TimeNs deadline_ns);
  StatePtr CallOnConnection(uint64_t conn, uint32_t method, Buffer request, TimeNs deadline_ns);
  StatePtr Disconnect(uint64_t conn);
  // Forgets a connection the application dropped (after Disconnect).
  void Release(uint64_t conn);
  Result<std::string> PeerOf(uint64_t conn) const;

  void SetHandler(uint32_t method, RpcHandler handler);

  // --- barriers: round `round` of group `group` with `members` members ---
  StatePtr BarrierArrive(const transport::NetAddress& coordinator, bool is_coordinator,
                         uint64_t group, uint64_t round, uint32_t members, TimeNs deadline_ns);

  // Completes operation `op_id` with kCancelled if still pending.
  void Cancel(uint64_t op_id);
  // Stops a pending operation (withdrawing it from the transport, its
  // connection or barrier) and completes it with `why`.
  void StopOp(uint64_t op_id, Status why);
  // Fails everything pending with `why` (the host is closing).
  void Shutdown(const Status& why);

  // Runs the transport and dispatches what it reports; expires deadlines.
  homa::PollResult Poll();
  // When Poll() must run next at the latest.
  TimeNs NextDeadline() const;

  size_t pending_ops() const { return ops_.size(); }

  // Runs the callbacks of operations completed so far. Poll() calls it last;
  // the host calls it after any other call into the engine. Callbacks may
  // call into the engine again.
  void RunCallbacks();

 private:
  enum class OpKind : uint8_t { kConnect, kSend, kCall, kDisconnect, kBarrier, kAccept, kRecv };
  struct Op {
    OpKind kind;
    StatePtr state;
    uint64_t conn = 0;      // local connection id, when about one
    uint64_t homa_id = 0;   // the transport's RPC id, 0 if none in flight
    TimeNs deadline_ns = kNever;
  };
  struct BarrierRound {
    uint32_t members = 0;
    std::vector<homa::ServerRpcKey> waiting;  // remote members' requests
    uint64_t local_op = 0;                    // coordinator's own arrival, 0 if not yet
  };

  StatePtr NewState(OpKind kind, uint64_t conn, TimeNs deadline_ns, uint64_t* op_id);
  // Sends `frame` + `payload` as a request for op `op_id`.
  void StartRequest(uint64_t op_id, const transport::NetAddress& peer, const Frame& frame,
                    Buffer payload);
  void FinishOp(uint64_t op_id, Status status, Buffer message = Buffer(), uint64_t value = 0);
  StatePtr Failed(Status status);
  // InvalidArgument when `bytes` is over the payload limit.
  Status CheckSize(size_t bytes) const;

  // engine_serve.cc: requests from peers.
  void HandleRequest(homa::HomaEvent& event);
  void Reply(const homa::ServerRpcKey& key, Status status, Buffer payload = Buffer());
  void HandleConnect(const homa::ServerRpcKey& key, const Frame& frame);
  void HandleMessage(const homa::ServerRpcKey& key, const Frame& frame, Buffer payload);
  void HandleDisconnect(const homa::ServerRpcKey& key, const Frame& frame);
  void HandleRpc(const homa::ServerRpcKey& key, const Frame& frame, Buffer payload);
  void HandleBarrier(const homa::ServerRpcKey& key, const Frame& frame);
  void MaybeReleaseBarrier(uint64_t group, uint64_t round);
  void Deliver(ConnState& conn, Buffer message);
  void CloseConnection(ConnState& conn, Status why);
  ConnState* FindByWire(const transport::NetAddress& peer, uint64_t wire_id);

  // Replies and failures for our own requests.
  void HandleReply(homa::HomaEvent& event);
  void ExpireDeadlines(TimeNs now);

  homa::HomaTransport* homa_;
  const Clock& clock_;
  EngineLimits limits_;
  std::weak_ptr<ProgressDriver> driver_;
  std::function<void()> on_complete_;

  // Set by Shutdown: every later operation fails at once with it.
  Status shutdown_status_;
  uint64_t next_op_ = 1;
  std::unordered_map<uint64_t, Op> ops_;
  std::multimap<TimeNs, uint64_t> deadlines_;  // deadline -> op id

  uint64_t next_conn_ = 1;
  uint64_t wire_id_seed_;
  std::unordered_map<uint64_t, ConnState> conns_;  // by local id
  std::map<std::pair<transport::NetAddress, uint64_t>, uint64_t> by_wire_;  // -> local id
  bool listening_ = false;
  std::deque<uint64_t> accept_queue_;   // local ids of accepted connections
  std::deque<uint64_t> accept_waiters_;  // op ids of pending Accepts

  std::unordered_map<uint32_t, RpcHandler> handlers_;
  // Completed operations whose callbacks have not run yet: running them while
  // the engine is mid-way through its own maps would let them invalidate it.
  std::vector<std::pair<std::function<void(const Status&)>, StatePtr>> callbacks_;
  std::map<std::pair<uint64_t, uint64_t>, BarrierRound> barriers_;  // (group, round)
};

}  // namespace wharf::engine
