// daemon/testing/rogue_app.h: RogueApp, an application for the isolation
// tests that attaches to wharfd like libwharf does (raw ControlConnection,
// kHello, Region::Attach of the memfd it is handed) and then lets the test
// do anything an application could: write any bytes into its region, any
// descriptor into any command slot, any value into either ring's indices,
// any message (with or without fds) on its control socket; and read what
// wharfd answers: completion-ring entries (kCompletion, kFault, ...) with
// their heap text, and the kFault control message wharfd sends before it
// closes a session it gave up on.
//
// It follows the ring protocol only as far as the test asks (Push keeps a
// producer index of its own; the raw writers ignore it). Waiting is bounded
// and driven by wharfd's doorbell: the rogue raises its "waiting" flag on the
// completion ring and polls its control socket for kWake.
//
// Owned by one test thread; not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "shm/attach_protocol.h"
#include "shm/control_socket.h"
#include "shm/layout.h"
#include "shm/region.h"
#include "wharf/result.h"

namespace wharf::daemon::testing {

class RogueApp {
 public:
  struct Options {
    std::string address = "homa://0.0.0.0:0";
    // The program name its hello gives (any bytes: the daemon must cope).
    std::string program = "rogue";
    // Small rings so that tests can fill them.
    shm::Geometry geometry{.command_entries = 64, .completion_entries = 64,
                           .heap_bytes = 1 << 20};
    std::chrono::milliseconds timeout{5000};
  };

  // Connects to wharfd at `socket_path`, says hello and maps the region.
  static Result<std::unique_ptr<RogueApp>> Attach(const std::string& socket_path,
                                                  const Options& options);
  static Result<std::unique_ptr<RogueApp>> Attach(const std::string& socket_path) {
    return Attach(socket_path, Options{});
  }

  // ---- what wharfd told us at attach
  const shm::WelcomeMsg& welcome() const { return welcome_; }
  const shm::Layout& layout() const { return region_->layout(); }
  shm::Region& region() { return *region_; }
  int region_fd() const { return region_->fd(); }
  // Every byte of the region, writable.
  std::span<std::byte> bytes() { return region_->bytes(); }
  // The heap's receive area starts here (wharfd's half).
  uint64_t receive_area_offset() const { return layout().heap_bytes / 2; }

  // ---- raw ring access (the test's own bookkeeping is not touched)
  shm::RingControl& command_control() { return *region_->command_ring().control; }
  shm::RingControl& completion_control() { return *region_->completion_ring().control; }
  std::span<shm::Descriptor> command_slots();
  std::span<shm::Descriptor> completion_slots();
  // Writes `d` into the command slot of ring index `index`.
  void WriteCommandSlot(uint64_t index, const shm::Descriptor& d);
  // Release-stores the command ring's producer index / the completion
  // ring's consumer index.
  void StoreCommandProducer(uint64_t value);
  void StoreCompletionConsumer(uint64_t value);
  // wharfd's consumer index of the command ring (how far it has read).
  uint64_t LoadCommandConsumer();

  // ---- the ring protocol, followed
  // Writes `d` at our next command index, publishes it and rings wharfd.
  // False if the ring is full (wharfd has not taken enough).
  bool Push(const shm::Descriptor& d);
  uint64_t next_command() const { return next_command_; }
  // A command as libwharf would write it.
  static shm::Descriptor Command(shm::Opcode op, uint64_t cookie = 0, uint64_t handle = 0);
  // Copies `text` into the send area at `heap_offset` and returns the
  // (heap_offset, length) it occupies, for a descriptor's range.
  std::pair<uint64_t, uint64_t> PutText(uint64_t heap_offset, std::string_view text);

  // Takes the next completion-ring entry if wharfd published one.
  std::optional<shm::Descriptor> PopCompletion();
  // Waits up to `timeout` for an entry matching `match` (entries before it
  // are kept in seen()); kDeadlineExceeded if none came, or wharfd's kFault
  // (or kUnavailable) if it closed the session meanwhile.
  Result<shm::Descriptor> WaitFor(const std::function<bool(const shm::Descriptor&)>& match,
                                  std::chrono::milliseconds timeout = std::chrono::seconds(5));
  // The completion for `cookie`, or the kFault entry about it.
  Result<shm::Descriptor> WaitForCookie(uint64_t cookie,
                                        std::chrono::milliseconds timeout = std::chrono::seconds(5));
  const std::vector<shm::Descriptor>& seen() const { return seen_; }
  // The bytes an entry names in the receive area, as text ("" if the range
  // is not in the heap).
  std::string Text(const shm::Descriptor& d);
  // Gives an entry's receive-area range back (kReleaseBuffer).
  bool Release(const shm::Descriptor& d);

  // ---- control socket
  shm::ControlConnection& control() { return *control_; }
  // Rings wharfd (kWake).
  void Wake();
  // Reads the control socket until wharfd sends kFault (its status) or
  // closes it (kUnavailable), for up to `timeout`; kDeadlineExceeded if
  // neither happened.
  Status WaitForClose(std::chrono::milliseconds timeout = std::chrono::seconds(5));
  // The session's counters (kStatsRequest), by name.
  Result<std::map<std::string, uint64_t>> Stats(
      std::chrono::milliseconds timeout = std::chrono::seconds(5));
  // Whether wharfd closed the session (a kFault or EOF was seen) and why.
  const std::optional<Status>& closed() const { return closed_; }
  // Reads what waits on the control socket without blocking; closed().
  const std::optional<Status>& CheckClosed() {
    PumpControl(0);
    return closed_;
  }

 private:
  RogueApp() = default;
  // Handles whatever waits on the control socket, waiting up to
  // `wait_ms` for the first message.
  void PumpControl(int wait_ms);

  std::unique_ptr<shm::ControlConnection> control_;
  shm::WelcomeMsg welcome_;
  std::unique_ptr<shm::Region> region_;
  uint64_t next_command_ = 0;
  uint64_t next_completion_ = 0;
  std::vector<shm::Descriptor> seen_;
  std::optional<Status> closed_;
  std::optional<std::vector<shm::Counter>> stats_;
};

// Asks the daemon at `socket_path` for its status JSON (a separate
// connection, as `wharf status` does).
Result<std::string> DaemonStatus(const std::string& socket_path);

}  // namespace wharf::daemon::testing
