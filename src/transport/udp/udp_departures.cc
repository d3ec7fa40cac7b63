// DepartureStamps: kernel transmit stamps matched to their datagrams.
#include "transport/udp/udp_departures.h"

#include <linux/errqueue.h>
#include <linux/net_tstamp.h>
#include <netinet/in.h>
#include <time.h>

#include <algorithm>
#include <cstring>

#include "transport/udp/udp_socket_options.h"

namespace wharf::transport::udp {

std::optional<TransmitStamp> ParseTransmitStamp(const msghdr& msg) {
  const std::optional<int64_t> realtime = ReadSoftwareTimestamp(msg);
  if (!realtime.has_value()) return std::nullopt;
  std::optional<uint32_t> key;
  for (const cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr;
       c = CMSG_NXTHDR(const_cast<msghdr*>(&msg), const_cast<cmsghdr*>(c))) {
    const bool v4 = c->cmsg_level == SOL_IP && c->cmsg_type == IP_RECVERR;
    const bool v6 = c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_RECVERR;
    if ((v4 || v6) && c->cmsg_len >= CMSG_LEN(sizeof(sock_extended_err))) {
      sock_extended_err ee;
      std::memcpy(&ee, CMSG_DATA(c), sizeof(ee));
      // ee_info says which point of the path stamped it: only the send.
      if (ee.ee_origin == SO_EE_ORIGIN_TIMESTAMPING && ee.ee_info == SCM_TSTAMP_SND) {
        key = ee.ee_data;
      }
    }
  }
  if (!key.has_value()) return std::nullopt;
  return TransmitStamp{.key = *key, .realtime_ns = *realtime};
}

void DepartureStamps::NoteSent(Socket socket, uint64_t token, TimeNs now_ns) {
  PerSocket& s = sockets_[Index(socket)];
  const uint32_t key = s.next_key++;
  Slot& slot = s.slots[key % kMaxOutstanding];
  if (slot.awaited) {
    // kMaxOutstanding sends later its stamp has still not come: give it up.
    ++counters_.lost;
    --s.awaiting;
  }
  slot = Slot{.token = token, .key = key, .awaited = true, .sent_ns = now_ns};
  ++s.awaiting;
  s.oldest_ns = std::min(s.oldest_ns, now_ns);
}

void DepartureStamps::OnStamp(Socket socket, uint32_t key, TimeNs sent_ns) {
  PerSocket& s = sockets_[Index(socket)];
  Slot& slot = s.slots[key % kMaxOutstanding];
  if (!slot.awaited || slot.key != key) {
    ++counters_.lost;  // given up already, or a number we never handed out
    return;
  }
  slot.awaited = false;
  --s.awaiting;
  if (ready_head_ > 0 && ready_head_ == ready_.size()) {
    ready_.clear();
    ready_head_ = 0;
  }
  if (ready_.size() - ready_head_ >= kMaxOutstanding) {
    ++counters_.lost;  // nobody takes them
    return;
  }
  ready_.push_back(Departure{.token = slot.token, .sent_ns = sent_ns});
  ++counters_.reported;
}

void DepartureStamps::ResetSocket(Socket socket) {
  PerSocket& s = sockets_[Index(socket)];
  counters_.lost += s.awaiting;
  s = PerSocket{};
}

void DepartureStamps::Expire(TimeNs now_ns) {
  for (PerSocket& s : sockets_) {
    if (s.awaiting == 0 || s.oldest_ns > now_ns - kGiveUpNs) continue;
    TimeNs oldest = kNever;
    for (Slot& slot : s.slots) {
      if (!slot.awaited) continue;
      if (slot.sent_ns <= now_ns - kGiveUpNs) {
        slot.awaited = false;
        --s.awaiting;
        ++counters_.lost;
      } else {
        oldest = std::min(oldest, slot.sent_ns);
      }
    }
    s.oldest_ns = oldest;
  }
}

size_t DepartureStamps::Take(std::span<Departure> out) {
  const size_t n = std::min(out.size(), ready_.size() - ready_head_);
  std::copy_n(ready_.begin() + static_cast<std::ptrdiff_t>(ready_head_), n, out.begin());
  ready_head_ += n;
  if (ready_head_ == ready_.size()) {
    ready_.clear();
    ready_head_ = 0;
  }
  return n;
}

}  // namespace wharf::transport::udp
