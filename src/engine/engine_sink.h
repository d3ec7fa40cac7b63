// engine/engine_sink.h: EngineSink, how an engine talks back to whoever hosts
// it. Operations go into the engine with an id the host chose; what comes out
// is events: an operation finished (id, Status, Buffer, value), a request for
// a served method arrived, a client withdrew a request it had sent. The
// embedded host (src/client) turns them into Completions and handler calls;
// wharfd (daemon/app_session.h) turns them into completion-ring entries.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/clock.h"
#include "engine/peer_ref.h"
#include "transport/message_transport.h"
#include "wharf/buffer.h"
#include "wharf/status.h"

namespace wharf::engine {

// Names one request a peer sent us, to be answered: which of the engine's
// transports it came over and the transport's key for it. Copyable; stays
// valid after the engine forgot the request (answering it then is a no-op).
struct ServerCallRef {
  uint8_t transport = 0;
  transport::ServerRpcKey key;
  friend bool operator==(const ServerCallRef&, const ServerCallRef&) = default;
};

struct ServerCallRefHash {
  size_t operator()(const ServerCallRef& r) const noexcept {
    return transport::ServerRpcKeyHash()(r.key) ^ r.transport;
  }
};

// A request for a method the host serves (Engine::SetServed).
struct IncomingCall {
  ServerCallRef ref;        // pass back to Engine::Respond
  uint32_t method = 0;
  PeerRef client;           // who sent it, as the engine reaches it
  std::string_view peer;    // "homa://1.2.3.4:5678" (client's text); valid during OnRequest only
  TimeNs deadline_ns = kNever;  // the client's deadline on the engine's clock
  Buffer request;
  // When the kernel received the request (transport::MessageEvent::
  // received_ns, monotonic); 0 when the transport gave no stamp.
  TimeNs received_ns = 0;
};

// Implemented by the host; owned by it and outliving the engine. Every call
// comes from inside a call into the engine, on the engine's thread. A sink
// must not call back into the engine from inside these (queue, then act
// after the engine call returns), with one exception: OnRequest may answer
// at once with Respond (the engine holds nothing across that call).
class EngineSink {
 public:
  virtual ~EngineSink() = default;
  // Operation `op_id` finished: `message` is the received message or RPC
  // response, `value` a connection id (Connect, Accept). Exactly once per
  // operation the host started, possibly from inside the call that started
  // it (an immediate result or error).
  virtual void OnComplete(uint64_t op_id, Status status, Buffer message, uint64_t value) = 0;
  // A request for a served method. The host answers with Engine::Respond,
  // now or later; until then the transport keeps the client's request alive
  // (a live engine answers the client's probes, so a slow handler is not a
  // dead server).
  virtual void OnRequest(IncomingCall call) = 0;
  // Whether OnRequest may run an application's handler before it returns
  // (an embedded endpoint's synchronous handler). A host that only queues
  // requests (wharfd hands them to its application) says false, and the
  // engine then skips the clock reads that bound how long a slow handler
  // holds back the answers batched before it.
  virtual bool MayRunHandlersInline() const { return true; }
  // The client of `ref` cancelled it or gave up at its deadline; an answer
  // is no longer wanted (it is dropped if sent).
  virtual void OnCallCancelled(const ServerCallRef& ref) = 0;
};

}  // namespace wharf::engine
