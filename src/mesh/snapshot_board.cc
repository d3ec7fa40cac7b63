// SnapshotBoard: asking the loop for a snapshot and handing it over.
#include "mesh/snapshot_board.h"

namespace wharf::mesh {

std::shared_ptr<const MeshSnapshot> SnapshotBoard::Get(TimeNs now, DurationNs max_age,
                                                       std::chrono::milliseconds wait) {
  MutexLock lock(mu_);
  if (latest_ != nullptr && now - latest_->taken_ns <= max_age) return latest_;
  if (closed_) return nullptr;
  const uint64_t before = generation_;
  if (!wanted_) {
    wanted_ = true;
    wake_();
  }
  const auto deadline = CondVar::Clock::now() + wait;
  while (generation_ == before && !closed_) {
    if (!published_.WaitUntil(mu_, deadline) && generation_ == before) return nullptr;
  }
  return generation_ == before ? nullptr : latest_;
}

bool SnapshotBoard::wanted() const {
  MutexLock lock(mu_);
  return wanted_;
}

void SnapshotBoard::Publish(std::shared_ptr<const MeshSnapshot> snapshot) {
  MutexLock lock(mu_);
  latest_ = std::move(snapshot);
  wanted_ = false;
  ++generation_;
  published_.NotifyAll();
}

void SnapshotBoard::Close() {
  MutexLock lock(mu_);
  closed_ = true;
  published_.NotifyAll();
}

}  // namespace wharf::mesh
