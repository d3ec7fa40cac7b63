// LinkModel: per-link configs and FIFO transmit queues.
#include "transport/fake/link_model.h"

#include <algorithm>
#include <limits>

namespace wharf::transport::fake {

DurationNs SerializationNs(const LinkConfig& config, size_t bytes) {
  if (config.bandwidth_bps == 0) return 0;
  // bits * 1e9 / rate, rounded up. Datagrams are at most 64 KiB, so
  // bits * 1e9 < 2^50 and cannot overflow 64 bits.
  uint64_t bits = (static_cast<uint64_t>(bytes) + config.per_packet_overhead_bytes) * 8;
  uint64_t ns =
      (bits * static_cast<uint64_t>(kNsPerSec) + config.bandwidth_bps - 1) / config.bandwidth_bps;
  return static_cast<DurationNs>(ns);
}

void LinkModel::Set(std::string_view src_host, std::string_view dst_host,
                    const LinkConfig& config) {
  configs_[MakeKey(src_host, dst_host)] = config;
}

const LinkConfig& LinkModel::Get(std::string_view src_host, std::string_view dst_host) const {
  auto it = configs_.find(MakeKey(src_host, dst_host));
  return it == configs_.end() ? default_ : it->second;
}

TimeNs LinkModel::Transmit(std::string_view src_host, std::string_view dst_host, size_t bytes,
                           TimeNs now_ns) {
  DurationNs serialize_ns = SerializationNs(Get(src_host, dst_host), bytes);
  if (serialize_ns == 0) return now_ns;
  TimeNs& busy = busy_until_ns_[MakeKey(src_host, dst_host)];
  TimeNs start_ns = std::max(busy, now_ns);
  busy = start_ns + serialize_ns;
  return busy;
}

TimeNs LinkModel::BusyUntil(std::string_view src_host, std::string_view dst_host) const {
  auto it = busy_until_ns_.find(MakeKey(src_host, dst_host));
  return it == busy_until_ns_.end() ? std::numeric_limits<TimeNs>::min() : it->second;
}

}  // namespace wharf::transport::fake
