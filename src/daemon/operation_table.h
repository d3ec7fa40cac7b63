// daemon/operation_table.h: OperationTable, the operations one application
// has in flight in its engine (by its cookie, which is the engine's op id)
// and the connections it holds. An operation is live from its command until
// the engine completes it; a connect or accept that succeeds adds its
// connection, which stays until the application releases it. The checks
// on a command's cookie and the engine calls are the CommandExecutor's;
// this only keeps the books.
//
// Owned by the AppSession; single-threaded: the daemon's loop thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_set>
#include <vector>

#include "absl/container/flat_hash_set.h"

namespace wharf::daemon {

class OperationTable {
 public:
  // How an operation ended, for Finish's caller.
  enum class Ended : uint8_t {
    kUnknown,    // not live: the session's own, or already reported
    kOperation,  // a live operation
    kAccepted,   // a live accept that succeeded (its peer's address goes with it)
  };

  bool live(uint64_t op) const { return live_.contains(op); }
  // Operations live.
  size_t size() const { return live_.size(); }
  void Start(uint64_t op) { live_.insert(op); }
  // `op` (started) opens a connection: a connect or, `accept`, an accept.
  void StartOpening(uint64_t op, bool accept);
  // `op` ends without reaching the engine (refused).
  void Forget(uint64_t op) {
    if (auto it = live_.find(op); it != live_.end()) live_.erase(it);
  }
  // The engine completed `op` (`ok`, with `value`, a connection id for a
  // connect or accept). A connect or accept that succeeded adds its
  // connection.
  Ended Finish(uint64_t op, bool ok, uint64_t value) {
    auto it = live_.find(op);
    if (it == live_.end()) return Ended::kUnknown;
    live_.erase(it);
    // Connects and accepts are rare: a call's completion looks at neither
    // set (each lookup there is a division by a prime).
    if (opening_.empty()) return Ended::kOperation;
    return FinishOpening(op, ok, value);
  }
  // Every live operation (the application went), in no order.
  std::vector<uint64_t> Operations() const { return {live_.begin(), live_.end()}; }
  void ClearOperations() { live_.clear(); }

  bool owns(uint64_t conn) const { return conns_.contains(conn); }
  // Connections held, and connects or accepts on their way to one.
  size_t connections() const { return conns_.size(); }
  size_t opening() const { return opening_.size(); }
  // The application releases `conn`; false if it held no such connection.
  bool Release(uint64_t conn) { return conns_.erase(conn) > 0; }
  std::vector<uint64_t> Connections() const { return {conns_.begin(), conns_.end()}; }
  void ClearConnections() { conns_.clear(); }

 private:
  Ended FinishOpening(uint64_t op, bool ok, uint64_t value);

  // Open addressing: an insert and an erase per RPC, no malloc in the
  // steady state.
  absl::flat_hash_set<uint64_t> live_;
  std::unordered_set<uint64_t> opening_;  // live connects and accepts
  std::unordered_set<uint64_t> accepts_;  // of those, the accepts
  std::unordered_set<uint64_t> conns_;    // connection ids (the engine's)
};

}  // namespace wharf::daemon
