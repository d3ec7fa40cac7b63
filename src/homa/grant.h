// homa/grant.h: the receiver's grants, HomaModule's homa_grant. Two classes:
//
//   GrantRanking    which messages to grant: SRPT (fewest bytes remaining
//                   first) among up to `overcommit` messages, at most one per
//                   sending peer, and the oldest message for FIFO grants.
//                   Keys and ranks only.
//   GrantScheduler  all grant state of one host: the ranking, the bytes
//                   granted but not yet received (bounded by
//                   max_incoming_bytes), the memory reserved for incoming
//                   messages (max_incoming_buffer_bytes) and the FIFO share;
//                   and the grant pass, which decides the GRANTs and returns
//                   them.
//
// This file sends nothing and knows no endpoint: the host (homa_host.h) feeds
// the scheduler as DATA arrives, runs the pass and puts the grants it returns
// on the wire.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <tuple>
#include <vector>

#include "base/clock.h"
#include "homa/config.h"
#include "homa/rpc.h"

namespace wharf::homa {

// Every operation is O(log n) in the number of grantable messages, and
// choosing the active set visits one entry per peer (per-peer sets under a
// set of peers keyed by their best message), so 10,000 messages from one peer
// cost no more than one.
//
// Owned by GrantScheduler (or a test). Single-threaded.
class GrantRanking {
 public:
  struct Ranked {
    uint64_t id;
    uint8_t priority;
    Rpc* rpc;  // as given to Upsert
  };

  GrantRanking(int overcommit, int max_sched_priority)
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

// The life of an incoming message, as the scheduler sees it: Reserve its
// memory when its first packet arrives, OnData after every packet (which
// ranks it while it needs grants), Release before it is dropped (delivered,
// or its RPC ends). Pass() whenever pass_due(): it applies each grant to its
// message (IncomingMessage::Grant), counts the bytes in flight, and returns
// the GRANTs for the host to send.
//
// Owned by HomaHost (one per socket, for the messages of all its
// endpoints). Borrows the Rpcs it ranks, each of which it is told about
// (Release) before its incoming message goes. Single-threaded: the host's
// thread.
class GrantScheduler {
 public:
  // A GRANT to send: `rpc`'s message may be sent up to `offset`, scheduled
  // data at `priority`.
  struct Grant {
    Rpc* rpc;
    uint32_t offset;
    uint8_t priority;
    bool fifo;  // the FIFO share's grant to the oldest message, not an SRPT one
  };

  // `max_datagram_bytes`: the socket's largest datagram, whose DATA payload
  // is the grant unit while neither the message nor its peer says better.
  GrantScheduler(const HomaConfig& config, size_t max_datagram_bytes);

  // Reserves the memory of a new incoming message of `length` bytes; false
  // (nothing reserved) past max_incoming_buffer_bytes.
  bool Reserve(uint32_t length) {
    if (reserved_bytes_ + length > max_reserved_bytes_) return false;
    reserved_bytes_ += length;
    return true;
  }
  // Data arrived for rpc.in: recounts its bytes in flight and, while it is
  // incomplete and needs grants, (re)ranks it and makes a pass due.
  void OnData(Rpc& rpc);
  // Before rpc.in is dropped: its bytes in flight and its reservation come
  // back, and it is granted no more. Also for an RPC without an incoming
  // message (then nothing happens).
  void Release(Rpc& rpc) {
    // Inline: every RPC ends through here, most with nothing to release.
    if (rpc.in || rpc.outstanding_bytes != 0) ReleaseSlow(rpc);
  }
  // A pass is due without new data: a message waits on our grants alone
  // (the timer's keep-alive).
  void RequestPass() { pass_due_ = true; }
  bool pass_due() const { return pass_due_; }

  // The grant pass: SRPT grants to the active set (each message's window a
  // share of max_incoming_bytes, never more than max_incoming_bytes in
  // flight over all, rounded to whole packets), then, every
  // fifo_grant_bytes / grant_fifo_permille of SRPT bytes, one FIFO grant of
  // fifo_grant_bytes to the oldest message. Returns the grants in the order
  // to send them; valid until the next Pass. A message granted in full leaves
  // the ranking, which makes another pass due (the next message may move up).
  std::span<const Grant> Pass();

  // Granted (or sent unscheduled) but not yet received, over all messages.
  uint64_t in_flight_bytes() const { return in_flight_bytes_; }
  // Reserved by Reserve and not yet released.
  uint64_t reserved_bytes() const { return reserved_bytes_; }
  const GrantRanking& ranking() const { return ranking_; }

 private:
  // What grants to rpc's message are rounded to: the sender's packet size
  // (it cuts packets at its multiples from offset 0, so any other grant
  // offset would make it send a runt for every grant).
  uint32_t GrantUnit(const Rpc& rpc) const;
  void ReleaseSlow(Rpc& rpc);
  // Re-counts rpc's granted-but-unreceived bytes into in_flight_bytes_.
  void Recount(Rpc& rpc);
  void GrantTo(Rpc& rpc, uint32_t offset, uint8_t priority, bool fifo);
  // Takes rpc out of the ranking (if there) and makes a pass due.
  void StopGranting(Rpc& rpc);

  // Constant after construction (HomaConfig, docs/protocol.md).
  const uint64_t max_incoming_bytes_;
  const uint64_t max_reserved_bytes_;  // max_incoming_buffer_bytes
  const int fifo_permille_;            // grant_fifo_permille
  const uint32_t fifo_grant_bytes_;
  const uint8_t max_sched_priority_;
  const uint32_t default_unit_bytes_;  // max datagram - DATA header

  GrantRanking ranking_;  // the messages that need grants
  bool pass_due_ = false;
  // Sum of every Rpc::outstanding_bytes: Homa's total_incoming, which
  // max_incoming_bytes bounds so that incast cannot fill the network's
  // queues with data we asked for. Bytes.
  uint64_t in_flight_bytes_ = 0;
  // Sum of the lengths of incoming messages reserved and not released.
  uint64_t reserved_bytes_ = 0;
  // SRPT bytes granted since the last FIFO grant.
  uint64_t srpt_since_fifo_bytes_ = 0;
  std::vector<GrantRanking::Ranked> active_;  // Pass scratch
  std::vector<Grant> grants_;                 // Pass's result
};

}  // namespace wharf::homa
