// client/public_access.h: PublicAccess, how libwharf's internals reach what
// the public classes keep private: an Endpoint's core, and the constructors
// of Completion and Responder from their shared states. The public headers
// name this class only as a friend, so applications see none of it; what
// they can call is in include/wharf/. Not the public API.
#pragma once

#include <memory>
#include <utility>

#include "wharf/completion.h"
#include "wharf/endpoint.h"

namespace wharf::internal {

class EndpointCore;
struct CompletionState;
struct ResponderState;

// Static functions only; stateless, so any thread may call them.
class PublicAccess {
 public:
  PublicAccess() = delete;

  // The core an Endpoint shares with its Connections and Completions (for
  // Group, which runs its barriers on the endpoint's engine).
  static const std::shared_ptr<EndpointCore>& Core(const Endpoint& endpoint) {
    return endpoint.core_;
  }
  // The public handle of an operation's state.
  static Completion MakeCompletion(std::shared_ptr<CompletionState> state) {
    return Completion(std::move(state));
  }
  // The application's handle of connection `id` (a stream a peer opened).
  static std::unique_ptr<Connection> MakeConnection(std::shared_ptr<EndpointCore> core,
                                                    uint64_t id) {
    return std::unique_ptr<Connection>(new Connection(std::move(core), id));
  }
  // The right to answer a call, handed to an AsyncRpcHandler.
  static Responder MakeResponder(std::shared_ptr<ResponderState> state) {
    return Responder(std::move(state));
  }
};

}  // namespace wharf::internal
