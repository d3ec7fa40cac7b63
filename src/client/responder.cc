// Responder: the public handle an AsyncRpcHandler answers its call through.
#include "client/endpoint_core.h"
#include "client/responder_state.h"
#include "wharf/endpoint.h"

namespace wharf {

Responder::Responder(Responder&&) noexcept = default;

Responder& Responder::operator=(Responder&& other) noexcept {
  if (this != &other) {
    // Assigning over an unanswered responder answers it, as dropping it would.
    if (state_ != nullptr && !state_->answered.load()) {
      (void)Respond(InternalError("handler dropped its Responder without answering"));
    }
    state_ = std::move(other.state_);
  }
  return *this;
}

Responder::~Responder() {
  if (state_ != nullptr && !state_->answered.load()) {
    (void)Respond(InternalError("handler dropped its Responder without answering"));
  }
}

Status Responder::Respond(Result<Buffer> response) {
  if (state_ == nullptr) return FailedPreconditionError("empty Responder");
  if (state_->answered.exchange(true)) {
    return FailedPreconditionError("this call was answered already");
  }
  std::shared_ptr<internal::EndpointCore> core = state_->core.lock();
  if (core == nullptr || core->closed()) return CancelledError("the endpoint is closed");
  if (response.ok()) {
    core->Respond(*state_, OkStatus(), std::move(response).value());
  } else {
    core->Respond(*state_, response.status(), Buffer());
  }
  return OkStatus();
}

bool Responder::cancelled() const {
  if (state_ == nullptr) return true;
  if (state_->cancelled.load()) return true;
  return state_->deadline_ns != kNever && SystemClock::Get().NowNs() >= state_->deadline_ns;
}

std::chrono::steady_clock::time_point Responder::deadline() const {
  if (state_ == nullptr || state_->deadline_ns == kNever) {
    return std::chrono::steady_clock::time_point::max();
  }
  return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(state_->deadline_ns));
}

}  // namespace wharf
