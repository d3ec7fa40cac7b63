// transport/fake/link_model.h: the timing and fault parameters of the fake
// network's links, and the per-link transmit queue that turns "send N bytes
// now" into "the last bit leaves at T".
//
// A link is one direction between two named hosts (A->B is not B->A). Each has
// a LinkConfig, either set for that pair or the network-wide default. This file
// holds no packets, no randomness and no log: FakeNetwork decides faults and
// schedules deliveries; LinkModel only answers "when".
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "base/clock.h"

namespace wharf::transport::fake {

// How one direction of a link behaves. Plain value; the defaults are a perfect
// link with a fixed 1 us one-way latency.
struct LinkConfig {
  // Fixed one-way propagation latency, added after serialisation.
  DurationNs delay_ns = 1 * kNsPerUs;
  // Link rate in bits per second; 0 means infinite (no serialisation delay, no
  // queueing). When set, packets on this link leave one after another in FIFO
  // order, so a burst of sends arrives spread out by bytes * 8 / rate each.
  uint64_t bandwidth_bps = 0;
  // Bytes charged per packet on top of the datagram payload when computing
  // serialisation time (e.g. 42 for Ethernet + IPv4 + UDP headers). Default 0
  // keeps test arithmetic simple.
  uint32_t per_packet_overhead_bytes = 0;

  // Random faults, decided per packet from the network's seeded PRNG.
  // Probability in [0, 1] that a packet is lost after it was transmitted.
  double drop_probability = 0.0;
  // Probability that the receiver gets a second copy (at the same instant).
  double duplicate_probability = 0.0;
  // Probability that a packet is held back by reorder_extra_delay_ns after it
  // left the link, so packets sent after it overtake it.
  double reorder_probability = 0.0;
  DurationNs reorder_extra_delay_ns = 10 * kNsPerUs;
};

// Serialisation time of `bytes` (plus the per-packet overhead) at the link's
// rate, rounded up to whole nanoseconds; 0 when the rate is infinite.
DurationNs SerializationNs(const LinkConfig& config, size_t bytes);

// Owns the configs and the transmit-queue state of every link. Owned by
// FakeNetwork; single-threaded like it.
class LinkModel {
 public:
  // The config used for every pair without its own.
  void SetDefault(const LinkConfig& config) { default_ = config; }
  const LinkConfig& Default() const { return default_; }

  // Sets the config of the src->dst direction only.
  void Set(std::string_view src_host, std::string_view dst_host, const LinkConfig& config);
  // The config of src->dst: its own if set, otherwise the default.
  const LinkConfig& Get(std::string_view src_host, std::string_view dst_host) const;

  // Puts `bytes` on the src->dst transmit queue at `now_ns` and returns when
  // its last bit has left: max(now, when the previous packet on this link
  // finished) + serialisation time. Propagation delay is not included (see
  // LinkConfig::delay_ns); the caller adds it.
  TimeNs Transmit(std::string_view src_host, std::string_view dst_host, size_t bytes,
                  TimeNs now_ns);

  // When the src->dst link will next be idle (<= now means idle now).
  TimeNs BusyUntil(std::string_view src_host, std::string_view dst_host) const;

 private:
  using Key = std::pair<std::string, std::string>;
  static Key MakeKey(std::string_view src, std::string_view dst) {
    return {std::string(src), std::string(dst)};
  }

  LinkConfig default_;
  // Per-pair overrides of default_.
  std::map<Key, LinkConfig> configs_;
  // Per link: time the last queued packet finishes serialising. Links never
  // used or with infinite rate have no entry.
  std::map<Key, TimeNs> busy_until_ns_;
};

}  // namespace wharf::transport::fake
