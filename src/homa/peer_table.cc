// PeerTable, and the helpers of Peer and OutstandingIds.
#include "homa/peer_table.h"

#include <algorithm>
#include <cstring>

namespace wharf::homa {

uint8_t Peer::UnschedPriority(uint32_t length, transport::MessagePriority chosen) const {
  if (chosen != transport::kPriorityBySize) return static_cast<uint8_t>(chosen);
  for (int p = wire::kNumPriorities - 1; p >= 0; --p) {
    if (cutoffs[p] != 0 && length <= cutoffs[p]) return static_cast<uint8_t>(p);
  }
  // Longer than every cutoff: the lowest unscheduled level in use.
  for (int p = 0; p < wire::kNumPriorities; ++p) {
    if (cutoffs[p] != 0) return static_cast<uint8_t>(p);
  }
  return 0;
}

void OutstandingIds::Remove(uint64_t id) {
  auto it = std::lower_bound(ids_.begin() + static_cast<ptrdiff_t>(head_), ids_.end(), id);
  if (it == ids_.end() || *it != id) return;  // unknown or already finished
  *it |= 1;
  --live_;
  if (live_ == 0) {
    ids_.clear();
    head_ = 0;
  } else if (ids_.size() - head_ > 2 * live_ + 64) {
    // Mostly finished ids: keep the unfinished ones only.
    std::erase_if(ids_, [](uint64_t v) { return (v & 1) != 0; });
    head_ = 0;
  }
}

uint64_t OutstandingIds::Floor() {
  while ((ids_[head_] & 1) != 0) ++head_;
  return ids_[head_];
}

size_t PeerTable::AddressHash::operator()(const transport::NetAddress& a) const noexcept {
  uint64_t lo = 0;
  uint64_t hi = 0;
  std::memcpy(&lo, a.ip_bytes().data(), 8);
  std::memcpy(&hi, a.ip_bytes().data() + 8, 8);
  uint64_t h = (lo * 0x9E3779B97F4A7C15ULL) ^ (hi * 0xC2B2AE3D27D4EB4FULL) ^
               (uint64_t{a.port()} << 8 | static_cast<uint64_t>(a.family()));
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ULL;
  return static_cast<size_t>(h ^ (h >> 32));
}

Peer* PeerTable::FindOrAdd(const transport::NetAddress& addr) {
  if (Peer* found = Find(addr)) return found;
  if (full()) {
    ++stats_.refused;
    return nullptr;
  }
  auto& slot = peers_[addr];
  slot = std::make_unique<Peer>();
  slot->addr = addr;
  slot->id = next_id_++;
  slot->index = all_.size();
  // Assume the peer runs our cutoffs; if its version differs it sends
  // CUTOFFS on our first DATA, so only mismatched configs cost a packet.
  slot->cutoffs = config_.unsched_cutoffs;
  slot->cutoff_version = config_.cutoff_version;
  all_.push_back(slot.get());
  ++stats_.created;
  last_ = slot.get();
  return last_;
}

void PeerTable::Remove(Peer& peer) {
  if (last_ == &peer) last_ = nullptr;
  const size_t index = peer.index;
  all_[index] = all_.back();
  all_[index]->index = index;
  all_.pop_back();
  ++stats_.freed;
  peers_.erase(peer.addr);  // destroys peer
}

Peer* PeerTable::FindSlow(const transport::NetAddress& addr) {
  auto it = peers_.find(addr);
  if (it == peers_.end()) return nullptr;
  last_ = it->second.get();
  return last_;
}

void PeerTable::LearnPathSlow(Peer& peer, transport::Datagram& net, size_t max_datagram_bytes) {
  const size_t datagram = std::min(net.MaxDatagramBytesTo(peer.addr), max_datagram_bytes);
  // Nothing queues below the socket on a local path, nor (unless a rate was
  // configured) through a software device: the pacer, which models a NIC
  // queue, would only hold such packets back.
  peer.paced =
      config_.link_rate_auto ? !net.IsSoftwarePath(peer.addr) : !net.IsLocalPath(peer.addr);
  peer.payload_bytes = static_cast<uint32_t>(
      datagram > wire::kDataHeaderBytes ? datagram - wire::kDataHeaderBytes : 1);
}

void PeerTable::SweepIdle(TimeNs now) {
  constexpr size_t kPerCall = 64;
  const size_t count = std::min(kPerCall, all_.size());
  for (size_t i = 0; i < count; ++i) {
    Peer* peer = NextInSweep();
    if (peer->Idle() && now - peer->last_heard_ns >= config_.peer_idle_timeout_ns) Remove(*peer);
  }
}

bool PeerTable::ReplaceIdle(TimeNs now, DurationNs quiet_ns) {
  constexpr int kCandidates = 8;
  for (int i = 0; i < kCandidates; ++i) {
    Peer* candidate = NextInSweep();
    if (candidate != nullptr && candidate->Idle() && now - candidate->last_heard_ns >= quiet_ns) {
      Remove(*candidate);
      return true;
    }
  }
  return false;
}

}  // namespace wharf::homa
