// CompletionOutbox: the backlog's way into the completion ring.
#include "daemon/completion_outbox.h"

#include <string>

namespace wharf::daemon {

using shm::Descriptor;
using shm::Opcode;

CompletionOutbox::CompletionOutbox(shm::RingMemory ring, SendLoans& loans, ReceiveArea& area)
    : ring_(ring, "completion ring"), loans_(loans), area_(area) {}

Status CompletionOutbox::TooBig(size_t bytes) const {
  return ResourceExhaustedError("a message of " + std::to_string(bytes) +
                                " bytes does not fit the application's receive area (" +
                                std::to_string(area_.capacity()) +
                                " bytes: wharfd limits.heap_bytes / 2)");
}

bool CompletionOutbox::PushTooBig(Descriptor entry, Buffer payload) {
  ++payloads_refused_;
  if (entry.opcode == static_cast<uint16_t>(Opcode::kRequest)) return false;
  if (entry.opcode == static_cast<uint16_t>(Opcode::kCompletion)) {
    const Status too_big = TooBig(payload.size());
    entry.status = static_cast<uint32_t>(too_big.code());
    entry.handle = 0;
    payload = Buffer::Copy(std::string_view(too_big.message()).substr(0, shm::kMaxErrorText));
  }
  backlog_.push_back(Pending{entry, std::move(payload)});
  return false;
}

Result<bool> CompletionOutbox::Flush() {
  if (loans_.has_released()) {
    loans_.DrainReleased([this](const Descriptor& d) { backlog_.push_back(Pending{d, Buffer()}); });
  }
  if (backlog_.empty()) return false;
  // Give each entry at the front its receive-area range, in order, until
  // the area or the ring is full.
  size_t ready = 0;
  const size_t room = ring_.capacity();
  for (Pending& p : backlog_) {
    if (ready == room) break;
    if (!p.payload.empty() && !area_.Deliver(p.entry, p.payload)) break;
    ++ready;
  }
  if (ready == 0) return false;
  batch_.resize(ready);
  for (size_t i = 0; i < ready; ++i) batch_[i] = backlog_[i].entry;
  Result<size_t> pushed = ring_.TryPush(std::span(batch_.data(), ready));
  if (!pushed.ok()) return pushed.status();
  // Nobody waits for a kSendReleased alone (the application reuses the
  // range when it next looks): only other entries are worth a wake-up.
  bool urgent = false;
  for (size_t i = 0; i < *pushed; ++i) {
    urgent = urgent || batch_[i].opcode != static_cast<uint16_t>(Opcode::kSendReleased);
  }
  backlog_.erase(backlog_.begin(), backlog_.begin() + static_cast<ptrdiff_t>(*pushed));
  completions_ += *pushed;
  return urgent;
}

bool CompletionOutbox::TakeDoorbell() {
  const uint32_t token = ring_.PeerWaitingToken();
  if (token == 0 || token == woke_token_) return false;
  woke_token_ = token;
  return true;
}

}  // namespace wharf::daemon
