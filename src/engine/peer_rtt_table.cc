// PeerRttTable: recording, taking and forgetting per-peer round trips.
#include "engine/peer_rtt_table.h"

namespace wharf::engine {

PeerRttTable::Entry* PeerRttTable::Find(const PeerRttKey& peer, TimeNs now) {
  if (auto it = peers_.find(peer); it != peers_.end()) return &it->second;
  if (peers_.size() >= options_.max_peers) {
    if (now < next_full_scan_ns_) return nullptr;
    next_full_scan_ns_ = now + kFullScanInterval;
    EvictIdle(now);
    if (peers_.size() >= options_.max_peers) return nullptr;
  }
  return &peers_[peer];
}

void PeerRttTable::RecordRoundTrip(const PeerRttKey& peer, TimeNs now, DurationNs rtt_ns) {
  Entry* e = Find(peer, now);
  if (e == nullptr) {
    ++counters_.untracked;
    return;
  }
  e->round_trips.Record(rtt_ns > 0 ? static_cast<uint64_t>(rtt_ns) : 0);
  e->last_ns = now;
  ++counters_.round_trips;
}

void PeerRttTable::RecordFailure(const PeerRttKey& peer, TimeNs now) {
  Entry* e = Find(peer, now);
  if (e == nullptr) {
    ++counters_.untracked;
    return;
  }
  ++e->failures;
  e->last_ns = now;
  ++counters_.failures;
}

void PeerRttTable::Add(const PeerRttKey& peer, TimeNs now, const CompactHistogram& round_trips,
                       uint64_t failures) {
  Entry* e = Find(peer, now);
  if (e == nullptr) {
    ++counters_.untracked;
    return;
  }
  e->round_trips.Merge(round_trips);
  e->failures += failures;
  e->last_ns = now;
  counters_.round_trips += round_trips.Count();
  counters_.failures += failures;
}

void PeerRttTable::Take(TimeNs now, const std::function<void(const PeerRttDelta&)>& visit) {
  for (auto& [peer, e] : peers_) {
    if (e.round_trips.Count() == 0 && e.failures == 0) continue;
    visit(PeerRttDelta{.peer = peer, .round_trips = e.round_trips, .failures = e.failures});
    e.round_trips.Reset();
    e.failures = 0;
  }
  EvictIdle(now);
}

void PeerRttTable::EvictIdle(TimeNs now) {
  // From Take, every entry was just handed out. From Find (a full table),
  // an idle entry may still hold values no Take has seen: they are older
  // than idle_timeout_ns, and a host that takes less often than that has
  // chosen not to see them.
  std::erase_if(peers_, [&](const auto& kv) {
    const bool idle = now - kv.second.last_ns > options_.idle_timeout_ns;
    if (idle) ++counters_.evicted;
    return idle;
  });
}

}  // namespace wharf::engine
