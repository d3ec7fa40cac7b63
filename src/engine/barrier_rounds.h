// engine/barrier_rounds.h: BarrierRounds, the group barrier rounds an
// engine coordinates: for each (group, round), the remote members' arrival
// requests held unanswered and whether the coordinator's own member (an
// operation of the engine's host) has arrived. A round is complete when
// its own member and all the others have arrived; a round whose own member
// does not come within the round timeout expires. It sends nothing and
// completes nothing: it says which requests to answer and which operation
// to complete, and the engine does it.
//
// Owned by the Engine; single-threaded (the engine's).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "engine/engine_sink.h"
#include "wharf/status.h"

namespace wharf::engine {

class BarrierRounds {
 public:
  // A complete round, taken out: answer each member's request OK, then
  // complete the local member's operation OK.
  struct Release {
    std::vector<ServerCallRef> members;
    uint64_t local_op = 0;  // 0: the round is not complete
  };

  // Peers may hold at most `max_rounds` rounds open; a round waits
  // `round_timeout_ns` for its local member.
  BarrierRounds(size_t max_rounds, DurationNs round_timeout_ns)
      : max_rounds_(max_rounds), round_timeout_ns_(round_timeout_ns) {}

  // The local member arrives at round `round` of `group` (`members` in all)
  // as operation `op_id`. Complete: the round, taken out.
  Release ArriveLocal(uint64_t group, uint64_t round, uint32_t members, uint64_t op_id);
  // A remote member's request `call` arrives at `now`. An error: refuse the
  // request with it (a round of no members, one too many rounds, a member
  // too many). Ok: it waits, and `*release` is the round if that completed
  // it.
  Status ArriveRemote(const ServerCallRef& call, uint64_t group, uint64_t round,
                      uint32_t members, TimeNs now, Release* release);
  // The local member's operation `op_id` stopped (cancelled, timed out):
  // its rounds wait for another local arrival for the round timeout from
  // `now`.
  void LocalGone(uint64_t op_id, TimeNs now);
  // Rounds whose local member did not arrive in time, as of `now`: each is
  // dropped and its members' requests appended to `*expired` (answer them
  // kDeadlineExceeded).
  void Expire(TimeNs now, std::vector<ServerCallRef>* expired) {
    if (now >= next_expiry_ns_) ExpireDue(now, expired);
  }
  // When Expire must run next (kNever while no round waits for its local
  // member).
  TimeNs next_expiry_ns() const { return next_expiry_ns_; }

  // Forgets every round (the engine shuts down); nobody is answered.
  void Clear() { rounds_.clear(); }
  size_t size() const { return rounds_.size(); }
  uint64_t refused() const { return refused_; }  // rounds refused (max_rounds)
  uint64_t expired() const { return expired_; }  // rounds expired

 private:
  struct Round {
    uint32_t members = 0;
    std::vector<ServerCallRef> waiting;  // remote members' requests
    uint64_t local_op = 0;               // the local member's op, 0 if not here
    TimeNs expires_ns = kNever;          // while local_op == 0
  };
  using Key = std::pair<uint64_t, uint64_t>;  // (group, round)

  void ExpireDue(TimeNs now, std::vector<ServerCallRef>* expired);
  // Takes `it` out if it is complete.
  Release MaybeRelease(std::map<Key, Round>::iterator it);

  // Constant after construction.
  const size_t max_rounds_;
  const DurationNs round_timeout_ns_;

  std::map<Key, Round> rounds_;
  TimeNs next_expiry_ns_ = kNever;  // earliest expires_ns of a round, or earlier
  uint64_t refused_ = 0;
  uint64_t expired_ = 0;
};

}  // namespace wharf::engine
