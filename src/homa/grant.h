// homa/grant.h: GrantScheduler, the receiver's choice of which incoming
// messages to grant: SRPT (fewest bytes remaining first) among up to
// `overcommit` messages, at most one per sending peer, plus a FIFO share that
// goes to the oldest message so that large messages never starve.
//
// It holds only keys and ranks; the host owns the messages and sends the
// GRANTs. Every operation is O(log n) in the number of grantable messages, and
// choosing the active set visits one entry per peer (per-peer sets under a
// set of peers keyed by their best message), so 10,000 messages from one peer
// cost no more than one.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <vector>

#include "base/clock.h"

namespace wharf::homa {

struct Rpc;

// Owned by HomaHost (one per socket, shared by its endpoints).
// Single-threaded.
class GrantScheduler {
 public:
  struct Ranked {
    uint64_t id;
    uint8_t priority;
    Rpc* rpc;  // as given to Upsert
  };

  GrantScheduler(int overcommit, int max_sched_priority)
      : overcommit_(overcommit), max_sched_priority_(max_sched_priority) {}

  // Adds or re-ranks message `id` from `peer` with `remaining` bytes left to
  // receive. `birth_ns` orders FIFO grants. `rpc` is carried along (and
  // handed back by ActiveSet and OldestRpc), so the caller needs no lookup.
  void Upsert(uint64_t id, uint64_t peer, uint32_t remaining, TimeNs birth_ns, Rpc* rpc = nullptr);
  void Remove(uint64_t id);
  bool Contains(uint64_t id) const { return index_.contains(id); }
  size_t size() const { return index_.size(); }

  // The messages to grant to now, best first, with their scheduled priority
  // (best gets max_sched_priority, then one lower each, never below 0).
  std::vector<Ranked> ActiveSet() const;
  // The same into `out` (cleared first), reusing its memory.
  void ActiveSet(std::vector<Ranked>* out) const;

  // The oldest grantable message, for FIFO grants.
  std::optional<uint64_t> Oldest() const;
  // Its rpc (null when none is grantable).
  Rpc* OldestRpc() const;

  int overcommit() const { return overcommit_; }

 private:
  using Key = std::tuple<uint32_t, TimeNs, uint64_t>;  // remaining, birth, id
  struct Info {
    uint64_t peer;
    Key key;
    Rpc* rpc;
  };
  void ReindexPeer(uint64_t peer, const std::optional<Key>& old_best);

  int overcommit_;
  int max_sched_priority_;
  std::map<uint64_t, Info> index_;                // id -> where it is ranked
  std::map<uint64_t, std::set<Key>> per_peer_;    // peer -> its messages, best first
  std::set<std::pair<Key, uint64_t>> peers_;      // (peer's best message, peer)
  std::set<std::pair<TimeNs, uint64_t>> by_age_;  // (birth, id)
};

}  // namespace wharf::homa
