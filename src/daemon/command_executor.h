// daemon/command_executor.h: CommandExecutor, which carries out the commands
// one application writes to its command ring, each already copied out of
// the ring and checked by the validator (opcode, flags, heap range; see
// shm/validator.h, and shm/commands.h for what they mean). What is checked
// here is what only the session knows: cookies, handles, peers, limits.
// Nothing a command says can reach another application: handles index this
// session's own tables and engine.
//
// It works through the session's parts and keeps no books of its own
// beyond its counters: operations and connections (OperationTable), served
// methods and requests (ServedCalls), peers (PeerHandles), send payloads
// lent to the engine (SendLoans), buffers given back (ReceiveArea), and
// what the application is told (CompletionOutbox). A refused command is a
// kFault entry, or a failed completion once its operation has started.
//
// Owned by the AppSession (made at Attach, after the engine); borrows all
// of the above, which outlive it. Single-threaded: the daemon's loop thread.
#pragma once

#include <cstdint>

#include "daemon/completion_outbox.h"
#include "daemon/daemon_config.h"
#include "daemon/operation_table.h"
#include "daemon/peer_handles.h"
#include "daemon/receive_area.h"
#include "daemon/send_loans.h"
#include "daemon/served_calls.h"
#include "engine/engine.h"
#include "shm/layout.h"
#include "shm/region.h"

namespace wharf::daemon {

// The parts a CommandExecutor works through, all borrowed.
struct SessionParts {
  engine::Engine& engine;
  const shm::Region& region;
  OperationTable& ops;
  ServedCalls& served;
  PeerHandles& peers;
  SendLoans& loans;
  ReceiveArea& area;
  CompletionOutbox& outbox;
};

class CommandExecutor {
 public:
  CommandExecutor(const AppLimits& limits, SessionParts parts) : limits_(limits), p_(parts) {}
  CommandExecutor(const CommandExecutor&) = delete;
  CommandExecutor& operator=(const CommandExecutor&) = delete;

  // Carries out one validated command.
  void Execute(const shm::Descriptor& d);

  // Commands refused (a kFault, or a failed completion the session decided).
  uint64_t bad_commands() const { return bad_commands_; }
  // Answers to requests already withdrawn (or answered), dropped.
  uint64_t late_answers() const { return late_answers_; }

 private:
  void ExecuteCall(const shm::Descriptor& d);
  void ExecuteConnect(const shm::Descriptor& d);
  void ExecuteBarrier(const shm::Descriptor& d);
  void ExecuteServe(const shm::Descriptor& d);
  void ExecuteRespond(const shm::Descriptor& d);
  // kRegionAsk, kRegionLend, kRegionRead, kRegionWrite, kRegionAtomic: an
  // operation.
  void ExecuteRegion(const shm::Descriptor& d);
  // Checks a command's cookie and the in-flight limit; on failure reports
  // it and returns false, else the operation is live.
  bool StartOp(const shm::Descriptor& d);
  // Ends an operation StartOp began with a failure the session decided on
  // (the command named something this application does not have).
  void Refuse(uint64_t cookie, const Status& why);
  // Whether `d.handle` is one of this application's connections; if not,
  // the operation `d` (already started) is refused and false returned.
  bool OwnConnection(const shm::Descriptor& d);
  // The command's payload, lent from the send area (no copy).
  Buffer Payload(const shm::Descriptor& d) {
    return p_.loans.Lend(d.cookie, d.heap_offset, d.length);
  }
  void Fault(const shm::Descriptor& d, const Status& why);

  const AppLimits limits_;
  const SessionParts p_;
  uint64_t bad_commands_ = 0;
  uint64_t late_answers_ = 0;
};

}  // namespace wharf::daemon
