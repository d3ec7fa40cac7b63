// homa/pacer.h: Pacer, the sender's estimate of the NIC queue. Homa's SRPT
// only works if packets wait in the sender's own SRPT queue rather than in a
// FIFO NIC queue, so the transport sends a paced packet only while the
// estimated backlog is below a few microseconds of link time. Short messages
// bypass the check (they still count toward the backlog).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "base/clock.h"

namespace wharf::homa {

// Owned by HomaHost (one per socket, shared by its endpoints).
// Single-threaded.
class Pacer {
 public:
  // Per-packet overhead on the wire beyond the UDP payload: IP + UDP headers
  // and Ethernet framing (preamble, header, FCS, inter-frame gap).
  static constexpr size_t kWireOverheadBytes = 20 + 8 + 38;

  Pacer(uint64_t link_bps, DurationNs max_backlog_ns)
      : link_bps_(std::max<uint64_t>(link_bps, 1)), max_backlog_ns_(max_backlog_ns) {}

  // True when a paced packet may go now.
  bool CanSend(TimeNs now) const { return idle_at_ns_ - now <= max_backlog_ns_; }

  // Records a packet of `payload_bytes` handed to the NIC at `now`.
  void OnSent(TimeNs now, size_t payload_bytes) {
    auto bits = static_cast<unsigned __int128>(payload_bytes + kWireOverheadBytes) * 8;
    auto ns = static_cast<DurationNs>(bits * kNsPerSec / link_bps_);
    idle_at_ns_ = std::max(idle_at_ns_, now) + ns;
  }

  // When CanSend() next becomes true (now or earlier means already).
  TimeNs NextSendTime() const { return idle_at_ns_ - max_backlog_ns_; }
  // Estimated queued link time at `now`.
  DurationNs Backlog(TimeNs now) const { return std::max<DurationNs>(0, idle_at_ns_ - now); }

 private:
  uint64_t link_bps_;
  DurationNs max_backlog_ns_;
  TimeNs idle_at_ns_ = 0;  // when the NIC would finish what we gave it
};

}  // namespace wharf::homa
