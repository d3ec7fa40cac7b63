// client/stream_acceptor.h: StreamAcceptor, which hands the streams peers
// open to an endpoint (ConnectOptions::stream_method) to the handlers
// Endpoint::ServeStreams registered for their methods. It keeps one
// AcceptStream in flight while any method is served; its completion, on the
// thread driving the endpoint, makes the Connection, gives it to the
// method's handler and starts the next. Plain connections never pass here:
// the engine keeps them for the application's Accept.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>

#include "base/mutex.h"
#include "wharf/endpoint.h"

namespace wharf::internal {

class EndpointCore;

// Owned by its EndpointCore (shared, so that an accept's callback keeps it
// alive); holds the core weakly. Thread-safe.
class StreamAcceptor : public std::enable_shared_from_this<StreamAcceptor> {
 public:
  explicit StreamAcceptor(std::weak_ptr<EndpointCore> core) : core_(std::move(core)) {}

  // Streams of `method` go to `handler` from now on (replacing any earlier
  // one); the engine accepts them once this returns.
  Status Serve(uint32_t method, StreamHandler handler) ABSL_LOCKS_EXCLUDED(mu_);

  // Streams handed to handlers, and those whose method had none (served
  // no longer, or never: the engine refuses those first).
  uint64_t handed() const;
  uint64_t unserved() const;

 private:
  // Starts the AcceptStream whose completion calls OnAccepted.
  void Arm(EndpointCore& core);
  void OnAccepted(const Status& status, uint64_t conn);

  std::weak_ptr<EndpointCore> core_;
  mutable Mutex mu_;
  std::unordered_map<uint32_t, std::shared_ptr<StreamHandler>> handlers_ ABSL_GUARDED_BY(mu_);
  bool armed_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t handed_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t unserved_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace wharf::internal
