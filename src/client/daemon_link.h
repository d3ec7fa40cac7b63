// client/daemon_link.h: DaemonLink, one attachment of this process to wharfd:
// the control socket (which also carries the wake-ups both ways), the
// region wharfd created for us (mapped from the memfd it passed), our ends
// of the two rings, and the allocator of our send area. ManagedEngine (managed_engine.h) speaks the
// ring protocol over it; a link that breaks (wharfd stopped) is replaced by
// a new one on re-attach.
//
// Also the small control-path helpers: where the daemon's socket is, and
// asking wharfd for its status (`wharf status`) without attaching.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "shm/attach_protocol.h"
#include "shm/control_socket.h"
#include "shm/heap_allocator.h"
#include "shm/region.h"
#include "shm/spsc_ring.h"
#include "wharf/buffer.h"

namespace wharf::internal {

// The control socket's path: `configured` if set, else $WHARF_SOCKET, else
// /run/wharf/wharfd.sock.
std::string DaemonSocketPath(std::string_view configured);
// Whether a daemon's socket file exists at `path` (auto mode's test).
bool DaemonSocketExists(const std::string& path);

// Asks the daemon at `path` for its status JSON (kStatusRequest).
Result<std::string> QueryDaemonStatus(const std::string& path, std::chrono::milliseconds timeout);

// Our send area: the first half of the heap, allocated here. Shared by the
// link and every Buffer lent from it (the application may drop a Buffer on
// any thread, after the link broke): thread-safe, and it holds the region
// so the memory outlives the last Buffer.
class SendArea final : public BufferOwner, public std::enable_shared_from_this<SendArea> {
 public:
  SendArea(std::shared_ptr<shm::Region> region, shm::HeapAllocator allocator)
      : region_(std::move(region)), allocator_(std::move(allocator)) {}
  // A Buffer of `size` bytes in the send area, with Buffer::kHeadroom bytes
  // in front for wharfd's frame header; nullopt when the area is full.
  std::optional<Buffer> Allocate(size_t size) ABSL_LOCKS_EXCLUDED(mu_);
  // The heap offset and length of a Buffer this area lent; nullopt if not ours.
  std::optional<std::pair<uint64_t, uint64_t>> RangeOf(const Buffer& b) const;
  // The heap offset of `bytes` if they lie in the send area.
  std::optional<uint64_t> OffsetOf(std::span<const std::byte> bytes) const;
  void Release(std::span<std::byte> whole) noexcept override ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t bytes_in_use() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Unguarded: set by the constructor, never changed (the mapping is
  // read-only state; the bytes in it belong to whoever holds a Buffer).
  std::shared_ptr<shm::Region> region_;
  mutable Mutex mu_;
  shm::HeapAllocator allocator_ ABSL_GUARDED_BY(mu_);
};

// The receive area's Buffers: wharfd lent them; dropping one queues a
// kReleaseBuffer for the link's owner to send (any thread may drop it).
// Each Buffer holds the area (and so the region) alive: an application may
// keep a received message after its link is gone.
class ReceiveArea final : public BufferOwner, public std::enable_shared_from_this<ReceiveArea> {
 public:
  explicit ReceiveArea(std::shared_ptr<shm::Region> region) : region_(std::move(region)) {}
  Buffer Wrap(uint64_t heap_offset, uint64_t length);
  // The bytes of a range wharfd keeps (a region lent from the heap): no
  // Buffer, nothing released; empty for a range outside the heap.
  std::span<std::byte> View(uint64_t heap_offset, uint64_t length) const {
    return region_->HeapRange(heap_offset, length).value_or(std::span<std::byte>());
  }
  void Release(std::span<std::byte> whole) noexcept override ABSL_LOCKS_EXCLUDED(mu_);
  // Takes the ranges released since the last call.
  void TakeReleased(std::vector<std::pair<uint64_t, uint64_t>>* out) ABSL_LOCKS_EXCLUDED(mu_);
  // The link is gone: later releases go nowhere.
  void Detach() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  std::shared_ptr<shm::Region> region_;  // unguarded: set by the constructor, never changed
  Mutex mu_;
  std::vector<std::pair<uint64_t, uint64_t>> released_ ABSL_GUARDED_BY(mu_);
  bool detached_ ABSL_GUARDED_BY(mu_) = false;
};

class DaemonLink {
 public:
  // Connects to wharfd at `socket_path`, asks for an endpoint at `address`
  // and maps the region it creates. kUnavailable when no daemon answers;
  // the daemon's refusal (kPermissionDenied, kResourceExhausted, ...) as is.
  static Result<std::unique_ptr<DaemonLink>> Attach(const std::string& socket_path,
                                                    const std::string& address,
                                                    const shm::Geometry& wanted,
                                                    std::chrono::milliseconds timeout);
  ~DaemonLink();

  const shm::WelcomeMsg& welcome() const { return welcome_; }
  shm::SpscProducer& commands() { return *commands_; }
  shm::SpscConsumer& completions() { return *completions_; }
  // Wakes wharfd (it sleeps on our command ring). Non-blocking.
  void WakeDaemon();
  shm::ControlConnection& control() { return *control_; }
  const std::shared_ptr<SendArea>& send_area() const { return send_area_; }
  const std::shared_ptr<ReceiveArea>& receive_area() const { return receive_area_; }

  // Reads the control socket (wake-ups, replies), non-blocking: whether it
  // says the daemon is gone (EOF) or gave up on us (kFault). The reason
  // once it has.
  std::optional<Status> CheckControl();
  // The daemon's counters for our endpoint (kStatsRequest), waiting up to
  // `timeout` for the answer.
  Result<std::vector<shm::Counter>> Stats(std::chrono::milliseconds timeout);

 private:
  DaemonLink() = default;

  std::unique_ptr<shm::ControlConnection> control_;
  shm::WelcomeMsg welcome_;
  std::shared_ptr<shm::Region> region_;
  std::optional<shm::SpscProducer> commands_;
  std::optional<shm::SpscConsumer> completions_;
  std::shared_ptr<SendArea> send_area_;
  std::shared_ptr<ReceiveArea> receive_area_;
  std::optional<Status> gone_;
  std::vector<shm::Counter> stats_reply_;
  bool stats_arrived_ = false;
};

}  // namespace wharf::internal
