// mesh/snapshot_board.h: SnapshotBoard, where the HTTP threads get a
// MeshSnapshot from the daemon's loop without ever blocking it.
//
// A snapshot is made only when someone asks (a Prometheus scrape, the
// dashboard's refresh): the loop has nothing to copy otherwise. An HTTP
// thread asks with Get; the loop sees the request in its next pass (Get
// wakes it), builds the snapshot a few targets per pass (so that a pass
// stays short with a thousand targets) and hands it over with Publish. A
// snapshot younger than `max_age` is handed out again without asking.
#pragma once

#include <memory>

#include "base/clock.h"
#include "base/mutex.h"
#include "mesh/mesh_snapshot.h"

namespace wharf::mesh {

// Shared by the mesh service (the loop) and its HTTP handlers. Thread-safe.
class SnapshotBoard {
 public:
  // `wake` is called (on the asking thread) to wake the loop.
  explicit SnapshotBoard(std::function<void()> wake) : wake_(std::move(wake)) {}

  // HTTP thread: the latest snapshot if it was taken within `max_age` of
  // `now` (the loop's clock), else a fresh one, waiting up to `wait` for
  // it. Null when the loop did not publish in time (it is stuck, or
  // stopping).
  std::shared_ptr<const MeshSnapshot> Get(TimeNs now, DurationNs max_age,
                                          std::chrono::milliseconds wait) ABSL_LOCKS_EXCLUDED(mu_);
  // Loop: whether someone waits for a snapshot.
  bool wanted() const ABSL_LOCKS_EXCLUDED(mu_);
  // Loop: the snapshot asked for.
  void Publish(std::shared_ptr<const MeshSnapshot> snapshot) ABSL_LOCKS_EXCLUDED(mu_);
  // Loop, stopping: wakes every waiter with nothing.
  void Close() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const std::function<void()> wake_;
  mutable Mutex mu_;
  CondVar published_;
  std::shared_ptr<const MeshSnapshot> latest_ ABSL_GUARDED_BY(mu_);
  bool wanted_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  // Bumped by each Publish, so a waiter knows a new one came.
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace wharf::mesh
