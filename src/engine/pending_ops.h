// engine/pending_ops.h: PendingOps, the operations an engine has pending,
// by op id (the host's ids, and the engine's own above 2^63), with their
// deadlines in a DeadlineHeap: what each is (Op), and which are due. It
// starts, stops and completes nothing (the Engine does, and says what an
// operation is when it records it); it keeps the books on every RPC, so
// the whole class is inline here (header only, as DeadlineHeap).
//
// Owned by the Engine; single-threaded (the engine's).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"

#include "base/clock.h"
#include "engine/deadline_heap.h"
#include "transport/net_address.h"

namespace wharf::engine {

enum class OpKind : uint8_t {
  kConnect, kSend, kCall, kDisconnect, kBarrier, kAccept, kRecv,
  kKeepAlive,     // internal: the engine's own question about op.conn
  kCancelNotice,  // internal: telling a server we withdrew a call
};

// One pending operation.
struct Op {
  OpKind kind;
  uint64_t conn = 0;       // local connection id, when about one
  uint64_t rpc_id = 0;     // the transport's RPC id, 0 if none in flight
  uint8_t transport = 0;   // which transport rpc_id belongs to
  TimeNs deadline_ns = kNever;
  transport::NetAddress server;  // kCall, kSend: where it went (a cancel notice goes there)
  uint16_t server_endpoint = 0;  // and to which endpoint there
  // kCall, kSend: when the request left (for the peer's round trips; the
  // server above is then where it went). 0: not measured.
  TimeNs started_ns = 0;
};

class PendingOps {
 public:
  // Whether an operation of `kind` waits for an answer on its way from a
  // peer (calls, sends, connects; not accepts, receives or barriers, which
  // may wait for ever).
  static bool AwaitsAnswer(OpKind kind) {
    return kind != OpKind::kAccept && kind != OpKind::kRecv && kind != OpKind::kBarrier;
  }

  // Records operation `op_id` (and its deadline). An insert may move every
  // Op: hold no pointer from Find across it.
  void Add(uint64_t op_id, Op op) {
    const TimeNs deadline_ns = op.deadline_ns;
    if (AwaitsAnswer(op.kind)) ++awaiting_answer_;
    ops_.emplace(op_id, std::move(op));
    deadlines_.Push(deadline_ns, op_id);
  }
  Op* Find(uint64_t op_id) {
    auto it = ops_.find(op_id);
    return it == ops_.end() ? nullptr : &it->second;
  }
  // Takes operation `op_id` out (it finished); none if it is not pending.
  std::optional<Op> Take(uint64_t op_id) {
    auto it = ops_.find(op_id);
    if (it == ops_.end()) return std::nullopt;
    std::optional<Op> op(std::move(it->second));
    ops_.erase(it);
    if (AwaitsAnswer(op->kind)) --awaiting_answer_;
    // Its deadlines_ entry is stale now; it leaves when it reaches the top.
    if (op->deadline_ns != kNever) {
      deadlines_.Finished(op->deadline_ns, ops_.size(),
                          [this](const DeadlineHeap::Entry& e) { return IsLive(e); });
    }
    return op;
  }
  // Calls `stop(op_id)` for each operation whose deadline is due at `now`,
  // earliest first; the operation's deadline is kNever by then (`stop` takes
  // it out, or it stays without one).
  template <typename Stop>
  void Expire(TimeNs now, Stop&& stop) {
    deadlines_.Expire(
        now, [this](const DeadlineHeap::Entry& e) { return IsLive(e); },
        [&](uint64_t op_id) {
          ops_.find(op_id)->second.deadline_ns = kNever;  // its entry is gone already
          stop(op_id);
        });
  }
  // The earliest deadline (perhaps a finished operation's: then Expire
  // finds nothing due).
  TimeNs Earliest() const { return deadlines_.Earliest(); }

  // An id for an operation of the engine's own: the top bit set, so it
  // never meets a host's id, which must leave it clear.
  uint64_t NewInternalId() { return next_internal_id_++; }
  // Every pending id, in no order.
  std::vector<uint64_t> Ids() const {
    std::vector<uint64_t> ids;
    ids.reserve(ops_.size());
    for (const auto& [id, op] : ops_) ids.push_back(id);
    return ids;
  }
  // Forgets the deadlines once nothing is pending (after a shutdown).
  void ClearDeadlinesIfEmpty() {
    if (ops_.empty()) deadlines_.Clear();
  }

  size_t size() const { return ops_.size(); }
  bool empty() const { return ops_.empty(); }
  // Of those, the ones AwaitsAnswer.
  size_t awaiting_answer() const { return awaiting_answer_; }

 private:
  // Whether a deadlines_ entry is still its operation's deadline.
  bool IsLive(const DeadlineHeap::Entry& e) const {
    auto it = ops_.find(e.op_id);
    return it != ops_.end() && it->second.deadline_ns == e.deadline_ns;
  }

  // Open addressing (no modulo by a prime, no node per call).
  absl::flat_hash_map<uint64_t, Op> ops_;
  DeadlineHeap deadlines_;  // of ops_ with a deadline; see IsLive
  size_t awaiting_answer_ = 0;
  uint64_t next_internal_id_ = 1ull << 63;
};

}  // namespace wharf::engine
