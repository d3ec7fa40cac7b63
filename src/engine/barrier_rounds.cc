// BarrierRounds: arrivals, departures and expiry of barrier rounds.
#include "engine/barrier_rounds.h"

#include <algorithm>
#include <string>

namespace wharf::engine {

BarrierRounds::Release BarrierRounds::ArriveLocal(uint64_t group, uint64_t round,
                                                  uint32_t members, uint64_t op_id) {
  auto it = rounds_.try_emplace({group, round}).first;
  it->second.members = members;
  it->second.local_op = op_id;
  it->second.expires_ns = kNever;
  return MaybeRelease(it);
}

Status BarrierRounds::ArriveRemote(const ServerCallRef& call, uint64_t group, uint64_t round,
                                   uint32_t members, TimeNs now, Release* release) {
  if (members == 0) return InvalidArgumentError("barrier with 0 members");
  auto it = rounds_.find({group, round});
  if (it == rounds_.end()) {
    if (rounds_.size() >= max_rounds_) {
      ++refused_;
      return ResourceExhaustedError("coordinator holds " + std::to_string(rounds_.size()) +
                                    " open barrier rounds (endpoint.max_barrier_rounds)");
    }
    it = rounds_.emplace(Key{group, round}, Round{}).first;
    it->second.members = members;
    it->second.expires_ns = now + round_timeout_ns_;
    next_expiry_ns_ = std::min(next_expiry_ns_, it->second.expires_ns);
  }
  Round& r = it->second;
  // A round holds at most its members' arrivals; more are peers' mistakes
  // (or repeats), not memory we owe them.
  if (r.waiting.size() >= r.members) {
    return InvalidArgumentError("barrier round already has all " + std::to_string(r.members) +
                                " members");
  }
  r.waiting.push_back(call);
  *release = MaybeRelease(it);
  return OkStatus();
}

BarrierRounds::Release BarrierRounds::MaybeRelease(std::map<Key, Round>::iterator it) {
  Round& r = it->second;
  if (r.local_op == 0 || r.waiting.size() + 1 < r.members) return Release{};
  Release release{std::move(r.waiting), r.local_op};
  rounds_.erase(it);
  return release;
}

void BarrierRounds::LocalGone(uint64_t op_id, TimeNs now) {
  for (auto& [key, r] : rounds_) {
    if (r.local_op != op_id) continue;
    r.local_op = 0;
    r.expires_ns = now + round_timeout_ns_;
    next_expiry_ns_ = std::min(next_expiry_ns_, r.expires_ns);
  }
}

void BarrierRounds::ExpireDue(TimeNs now, std::vector<ServerCallRef>* expired) {
  next_expiry_ns_ = kNever;
  for (auto it = rounds_.begin(); it != rounds_.end();) {
    Round& r = it->second;
    if (r.local_op != 0 || r.expires_ns > now) {
      if (r.local_op == 0) next_expiry_ns_ = std::min(next_expiry_ns_, r.expires_ns);
      ++it;
      continue;
    }
    ++expired_;
    expired->insert(expired->end(), r.waiting.begin(), r.waiting.end());
    it = rounds_.erase(it);
  }
}

}  // namespace wharf::engine
