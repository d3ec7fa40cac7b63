// GrantRanking (nested ordered sets for SRPT-with-one-per-peer selection) and
// GrantScheduler (the grant state of a host and its grant pass).
#include "homa/grant.h"

#include <algorithm>

#include "homa/peer_table.h"
#include "homa/rpc.h"
#include "wire/packet.h"

namespace wharf::homa {

// ----------------------------------------------------------- GrantRanking

void GrantRanking::ReindexPeer(uint64_t peer, const std::optional<Key>& old_best) {
  if (old_best) peers_.erase({*old_best, peer});
  auto it = per_peer_.find(peer);
  if (it == per_peer_.end()) return;
  if (it->second.empty()) {
    per_peer_.erase(it);
    return;
  }
  peers_.emplace(*it->second.begin(), peer);
}

void GrantRanking::Upsert(uint64_t id, uint64_t peer, uint32_t remaining, TimeNs birth_ns,
                          Rpc* rpc) {
  Key key{remaining, birth_ns, id};
  auto found = index_.find(id);
  if (found != index_.end() && found->second.key == key && found->second.peer == peer) {
    found->second.rpc = rpc;
    return;
  }
  if (found != index_.end()) Remove(id);
  auto& messages = per_peer_[peer];
  std::optional<Key> old_best;
  if (!messages.empty()) old_best = *messages.begin();
  messages.insert(key);
  index_.emplace(id, Info{peer, key, rpc});
  by_age_.emplace(birth_ns, id);
  ReindexPeer(peer, old_best);
}

void GrantRanking::Remove(uint64_t id) {
  auto found = index_.find(id);
  if (found == index_.end()) return;
  Info info = found->second;
  index_.erase(found);
  by_age_.erase({std::get<1>(info.key), id});
  auto& messages = per_peer_[info.peer];
  std::optional<Key> old_best;
  if (!messages.empty()) old_best = *messages.begin();
  messages.erase(info.key);
  ReindexPeer(info.peer, old_best);
}

std::vector<GrantRanking::Ranked> GrantRanking::ActiveSet() const {
  std::vector<Ranked> out;
  ActiveSet(&out);
  return out;
}

void GrantRanking::ActiveSet(std::vector<Ranked>* out) const {
  out->clear();
  int rank = 0;
  for (const auto& [key, peer] : peers_) {
    if (rank >= overcommit_) break;
    uint8_t prio = static_cast<uint8_t>(std::max(0, max_sched_priority_ - rank));
    const uint64_t id = std::get<2>(key);
    out->push_back({id, prio, index_.at(id).rpc});
    ++rank;
  }
}

std::optional<uint64_t> GrantRanking::Oldest() const {
  if (by_age_.empty()) return std::nullopt;
  return by_age_.begin()->second;
}

Rpc* GrantRanking::OldestRpc() const {
  if (by_age_.empty()) return nullptr;
  return index_.at(by_age_.begin()->second).rpc;
}

// --------------------------------------------------------- GrantScheduler

GrantScheduler::GrantScheduler(const HomaConfig& config, size_t max_datagram_bytes)
    : max_incoming_bytes_(config.max_incoming_bytes),
      max_reserved_bytes_(config.max_incoming_buffer_bytes),
      fifo_permille_(config.grant_fifo_permille),
      fifo_grant_bytes_(config.fifo_grant_bytes),
      max_sched_priority_(static_cast<uint8_t>(config.max_sched_priority)),
      default_unit_bytes_(static_cast<uint32_t>(max_datagram_bytes - wire::kDataHeaderBytes)),
      ranking_(config.overcommit, config.max_sched_priority) {
  active_.reserve(static_cast<size_t>(config.overcommit));
  grants_.reserve(static_cast<size_t>(config.overcommit) + 1);
}

uint32_t GrantScheduler::GrantUnit(const Rpc& rpc) const {
  if (uint32_t seen = rpc.in->packet_bytes(); seen > 0) return seen;
  if (rpc.peer->payload_bytes > 0) return rpc.peer->payload_bytes;
  return default_unit_bytes_;
}

void GrantScheduler::Recount(Rpc& rpc) {
  uint64_t now_in_flight = 0;
  if (rpc.in && !rpc.in->complete()) {
    const uint64_t granted = rpc.in->granted();
    const uint64_t received = rpc.in->received_bytes();
    now_in_flight = granted > received ? granted - received : 0;
  }
  in_flight_bytes_ = in_flight_bytes_ - rpc.outstanding_bytes + now_in_flight;
  rpc.outstanding_bytes = now_in_flight;
}

void GrantScheduler::OnData(Rpc& rpc) {
  Recount(rpc);
  const IncomingMessage& in = *rpc.in;
  if (in.complete() || !in.NeedsGrants()) return;
  ranking_.Upsert(rpc.handle, rpc.peer->id, in.bytes_remaining(), in.birth_ns(), &rpc);
  pass_due_ = true;
}

void GrantScheduler::ReleaseSlow(Rpc& rpc) {
  in_flight_bytes_ -= rpc.outstanding_bytes;
  rpc.outstanding_bytes = 0;
  if (!rpc.in) return;
  reserved_bytes_ -= rpc.in->length();
  StopGranting(rpc);
}

void GrantScheduler::StopGranting(Rpc& rpc) {
  if (!ranking_.Contains(rpc.handle)) return;
  ranking_.Remove(rpc.handle);
  // A slot in the active set opened: the next message may now be granted.
  pass_due_ = true;
}

void GrantScheduler::GrantTo(Rpc& rpc, uint32_t offset, uint8_t priority, bool fifo) {
  rpc.in->Grant(offset);
  Recount(rpc);
  grants_.push_back({&rpc, offset, priority, fifo});
  if (!rpc.in->NeedsGrants()) StopGranting(rpc);
}

std::span<const GrantScheduler::Grant> GrantScheduler::Pass() {
  pass_due_ = false;
  grants_.clear();
  ranking_.ActiveSet(&active_);
  if (active_.empty()) return {};
  // Homa's dynamic window: share max_incoming among the active messages.
  const uint64_t share = max_incoming_bytes_ / (active_.size() + 1);
  for (const GrantRanking::Ranked& ranked : active_) {
    Rpc& rpc = *ranked.rpc;
    const IncomingMessage& in = *rpc.in;
    const uint32_t packet = GrantUnit(rpc);
    const uint64_t window = std::max<uint64_t>(packet, share);
    uint64_t target = std::min<uint64_t>(in.length(), in.received_bytes() + window);
    if (target <= in.granted()) continue;
    // The total bound: never more than max_incoming_bytes asked for and not
    // yet arrived, over all messages (best-ranked messages ask first).
    const uint64_t room =
        max_incoming_bytes_ > in_flight_bytes_ ? max_incoming_bytes_ - in_flight_bytes_ : 0;
    target = std::min<uint64_t>(target, uint64_t{in.granted()} + room);
    if (target <= in.granted()) break;
    // Grant up to a packet boundary (or the tail): see GrantUnit.
    if (target != in.length()) target -= target % packet;
    if (target <= in.granted()) continue;
    srpt_since_fifo_bytes_ += target - in.granted();
    GrantTo(rpc, static_cast<uint32_t>(target), ranked.priority, /*fifo=*/false);
  }
  // FIFO share: every fifo_grant_bytes / fraction SRPT bytes, one grant of
  // fifo_grant_bytes to the oldest message.
  if (fifo_permille_ > 0) {
    const uint64_t period = uint64_t{fifo_grant_bytes_} * 1000 / fifo_permille_;
    if (srpt_since_fifo_bytes_ >= period) {
      srpt_since_fifo_bytes_ = 0;
      if (Rpc* oldest = ranking_.OldestRpc()) {
        Rpc& rpc = *oldest;
        // Rounded up to a packet boundary, as SRPT grants are rounded down.
        const uint64_t packet = GrantUnit(rpc);
        uint64_t target = uint64_t{rpc.in->granted()} + fifo_grant_bytes_;
        target = std::min<uint64_t>(rpc.in->length(), (target + packet - 1) / packet * packet);
        if (target > rpc.in->granted()) {
          GrantTo(rpc, static_cast<uint32_t>(target), max_sched_priority_, /*fifo=*/true);
        }
      }
    }
  }
  return grants_;
}

}  // namespace wharf::homa
