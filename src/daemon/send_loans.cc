// SendLoans: what comes back from the engine, and finding it again.
#include "daemon/send_loans.h"

namespace wharf::daemon {

void SendLoans::LoanOwner::Release(std::span<std::byte> whole) noexcept {
  if (loans_ == nullptr) return;
  loans_->NoteReleased(static_cast<uint64_t>(whole.data() - region_->heap().data()));
}

SendLoans::SendLoans(std::shared_ptr<shm::Region> region)
    : region_(std::move(region)), owner_(std::make_shared<LoanOwner>(this, region_)) {}

SendLoans::~SendLoans() { owner_->Detach(); }

void SendLoans::NoteReleased(uint64_t heap_offset) {
  auto it = lent_.find(heap_offset);
  if (it == lent_.end()) return;
  const uint64_t cookie = it->second;
  auto again = lent_again_.empty() ? lent_again_.end() : lent_again_.find(heap_offset);
  if (again != lent_again_.end()) {
    it->second = again->second;  // the range is still lent to that one
    lent_again_.erase(again);
  } else {
    lent_.erase(it);
  }
  if (cookie == 0 || !telling_) return;
  released_.push_back(cookie);
}

bool SendLoans::TakeReleasedNearFront(uint64_t cookie) {
  // Bounded: a completion without a release (a receive, a failed call whose
  // payload the engine still holds) looks at a few entries only.
  constexpr size_t kLookAhead = 8;
  const size_t end = std::min(released_.size(), released_head_ + kLookAhead);
  for (size_t i = released_head_; i < end; ++i) {
    if (released_[i] != cookie) continue;
    released_[i] = 0;
    while (released_head_ < released_.size() && released_[released_head_] == 0) ++released_head_;
    if (released_head_ == released_.size()) {
      released_.clear();
      released_head_ = 0;
    }
    return true;
  }
  return false;
}

}  // namespace wharf::daemon
