// The kernel-udp baseline's datagram header and reassembly table.
#include "bench/kernel_udp_reassembly.h"

#include <netinet/in.h>

#include <algorithm>
#include <cstring>

#include "bench/little_endian.h"

namespace wharf::bench {
namespace {

// A released slot keeps a buffer up to this size for the next message; a
// larger one is freed, so that idle slots do not hold megabytes each.
constexpr size_t kRetainBytes = 64 << 10;


}  // namespace

void EncodeKernelUdpHeader(const KernelUdpHeader& h, char* out) {
  PutLe(h.rpc_id, 8, out);
  PutLe(h.offset, 4, out + 8);
  PutLe(h.total_bytes, 4, out + 12);
}

KernelUdpHeader DecodeKernelUdpHeader(const char* in) {
  return {.rpc_id = GetLe(in, 8),
          .offset = static_cast<uint32_t>(GetLe(in + 8, 4)),
          .total_bytes = static_cast<uint32_t>(GetLe(in + 12, 4))};
}

UdpPeerKey PeerKeyOf(const sockaddr_storage& a) {
  UdpPeerKey k;
  k.bytes[0] = static_cast<uint8_t>(a.ss_family);
  if (a.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(a);
    std::memcpy(&k.bytes[2], &in.sin_port, 2);
    std::memcpy(&k.bytes[4], &in.sin_addr, 4);
  } else if (a.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(a);
    std::memcpy(&k.bytes[2], &in6.sin6_port, 2);
    std::memcpy(&k.bytes[4], &in6.sin6_addr, 16);
  }
  return k;
}

size_t UdpReassembler::KeyHash::operator()(const Key& k) const {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (uint8_t b : k.peer.bytes) h = (h ^ b) * 1099511628211ull;
  return static_cast<size_t>(h ^ (k.rpc_id * 0x9e3779b97f4a7c15ull));
}

UdpReassembler::UdpReassembler(const Options& options)
    : options_(options), slots_(std::max<size_t>(1, options.max_partial)) {
  free_.reserve(slots_.size());
  for (int i = static_cast<int>(slots_.size()) - 1; i >= 0; --i) free_.push_back(i);
  index_.reserve(slots_.size());
}

UdpAddResult UdpReassembler::Add(const UdpPeerKey& peer, std::span<const char> datagram,
                                 TimeNs now) {
  ShrinkReleased();
  ++counters_.datagrams;
  UdpAddResult r;
  if (datagram.size() < kKernelUdpHeaderBytes) {
    ++counters_.malformed;
    return r;
  }
  const KernelUdpHeader h = DecodeKernelUdpHeader(datagram.data());
  const std::span<const char> payload = datagram.subspan(kKernelUdpHeaderBytes);
  r.rpc_id = h.rpc_id;
  r.total_bytes = h.total_bytes;
  // The sender's cut is fixed, so each fragment's offset and length are
  // known from the total: anything else is not ours or corrupt.
  const uint64_t total = h.total_bytes;
  const bool ok = total <= kKernelUdpMaxMessageBytes && h.offset <= total &&
                  h.offset % kKernelUdpMaxPayloadBytes == 0 && (total == 0 || h.offset < total) &&
                  payload.size() == std::min<uint64_t>(kKernelUdpMaxPayloadBytes, total - h.offset);
  if (!ok) {
    ++counters_.malformed;
    return r;
  }
  if (total <= kKernelUdpMaxPayloadBytes) {  // one datagram: nothing to store
    ++counters_.completed;
    r.outcome = UdpAddOutcome::kComplete;
    if (options_.keep_payload) r.message = payload;
    return r;
  }

  const Key key{.peer = peer, .rpc_id = h.rpc_id};
  int s;
  if (auto it = index_.find(key); it != index_.end()) {
    s = it->second;
    if (slots_[s].total_bytes != h.total_bytes) {
      ++counters_.malformed;
      return r;
    }
  } else {
    s = Take(key, h.total_bytes, now);
    if (s < 0) {
      ++counters_.table_full;
      r.outcome = UdpAddOutcome::kTableFull;
      return r;
    }
  }
  Slot& slot = slots_[s];
  const uint32_t fragment = h.offset / kKernelUdpMaxPayloadBytes;
  uint64_t& word = slot.seen[fragment / 64];
  const uint64_t bit = uint64_t{1} << (fragment % 64);
  if (word & bit) {
    ++counters_.duplicates;
    r.outcome = UdpAddOutcome::kDuplicate;
    return r;
  }
  word |= bit;
  ++slot.received;
  if (options_.keep_payload)
    std::memcpy(slot.data.data() + h.offset, payload.data(), payload.size());
  slot.last_ns = now;
  Unlink(s);
  LinkAtTail(s);
  if (slot.received < slot.fragments) {
    r.outcome = UdpAddOutcome::kPartial;
    return r;
  }
  ++counters_.completed;
  r.outcome = UdpAddOutcome::kComplete;
  if (options_.keep_payload) r.message = std::span<const char>(slot.data.data(), total);
  Release(s);
  released_ = s;  // its buffer is the message until the next call
  return r;
}

void UdpReassembler::Expire(TimeNs now) {
  ShrinkReleased();
  while (head_ >= 0 && slots_[head_].last_ns + options_.idle_timeout_ns <= now) {
    ++counters_.expired;
    const int s = head_;
    Release(s);
    released_ = s;
    ShrinkReleased();
  }
}

TimeNs UdpReassembler::NextExpiryNs() const {
  return head_ < 0 ? kNever : slots_[head_].last_ns + options_.idle_timeout_ns;
}

int UdpReassembler::Take(const Key& key, uint32_t total_bytes, TimeNs now) {
  if (free_.empty()) return -1;
  if (options_.keep_payload && buffered_bytes_ + total_bytes > options_.max_buffered_bytes) {
    return -1;
  }
  const int s = free_.back();
  free_.pop_back();
  Slot& slot = slots_[s];
  slot.key = key;
  slot.total_bytes = total_bytes;
  slot.fragments = static_cast<uint32_t>((total_bytes + kKernelUdpMaxPayloadBytes - 1) /
                                         kKernelUdpMaxPayloadBytes);
  slot.received = 0;
  slot.last_ns = now;
  slot.seen.assign((slot.fragments + 63) / 64, 0);
  if (options_.keep_payload) {
    slot.data.resize(total_bytes);
    buffered_bytes_ += total_bytes;
  }
  index_.emplace(key, s);
  LinkAtTail(s);
  return s;
}

void UdpReassembler::Release(int s) {
  Slot& slot = slots_[s];
  Unlink(s);
  index_.erase(slot.key);
  if (options_.keep_payload) buffered_bytes_ -= slot.total_bytes;
  free_.push_back(s);
}

void UdpReassembler::ShrinkReleased() {
  if (released_ < 0) return;
  std::vector<char>& data = slots_[released_].data;
  if (data.capacity() > kRetainBytes) std::vector<char>().swap(data);
  released_ = -1;
}

void UdpReassembler::Unlink(int s) {
  Slot& slot = slots_[s];
  if (slot.prev >= 0) {
    slots_[slot.prev].next = slot.next;
  } else if (head_ == s) {
    head_ = slot.next;
  }
  if (slot.next >= 0) {
    slots_[slot.next].prev = slot.prev;
  } else if (tail_ == s) {
    tail_ = slot.prev;
  }
  slot.prev = slot.next = -1;
}

void UdpReassembler::LinkAtTail(int s) {
  Slot& slot = slots_[s];
  slot.prev = tail_;
  slot.next = -1;
  if (tail_ >= 0) slots_[tail_].next = s;
  tail_ = s;
  if (head_ < 0) head_ = s;
}

}  // namespace wharf::bench
