// client/responder_state.h: ResponderState, what a public Responder holds:
// which call it answers and on which endpoint, and whether it was answered or
// withdrawn.
#pragma once

#include <atomic>
#include <memory>

#include "base/clock.h"
#include "engine/engine_sink.h"

namespace wharf::internal {

class EndpointCore;

// Shared by the Responder (the application's) and the endpoint's table of
// calls in service (weakly, for cancellation notices). Thread-safe: the
// flags are atomics; the rest is written once before it is shared.
struct ResponderState {
  std::weak_ptr<EndpointCore> core;
  engine::ServerCallRef ref;
  TimeNs deadline_ns = kNever;  // the client's, on the steady clock
  std::atomic<bool> answered{false};
  std::atomic<bool> cancelled{false};  // the client withdrew the call
};

}  // namespace wharf::internal
