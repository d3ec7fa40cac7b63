// The homa settings of a cluster run for its link rate.
#include "bench/cluster_tuning.h"

#include <algorithm>

#include "base/clock.h"

namespace wharf::bench {

std::vector<std::string> HomaSettingsForLink(uint64_t link_bps, int mtu) {
  link_bps = std::max<uint64_t>(link_bps, 1);
  const auto packet = static_cast<uint64_t>(std::max(mtu, 576));
  // Ethernet framing beyond the IP packet: preamble, header, FCS, gap.
  const uint64_t wire_bits = (packet + 38) * 8;
  const auto packet_ns = static_cast<int64_t>(wire_bits * kNsPerSec / link_bps);
  const int64_t rtt_ns = kHostRoundTripNs + 2 * packet_ns;
  const auto bdp = static_cast<uint64_t>(static_cast<unsigned __int128>(link_bps) / 8 *
                                         static_cast<uint64_t>(rtt_ns) / kNsPerSec);
  const uint64_t unsched = std::max<uint64_t>(1, (bdp + packet - 1) / packet) * packet;
  const uint64_t tick_us =
      std::max<uint64_t>(1000, static_cast<uint64_t>(125'000ull * 8 * 1'000'000 / link_bps));
  const int64_t backlog_ns = std::max<int64_t>(100 * kNsPerUs, 3 * packet_ns);
  return {"homa.unsched_bytes=" + std::to_string(unsched),
          "homa.max_incoming_bytes=" + std::to_string(8 * unsched),
          "homa.tick=" + std::to_string(tick_us) + "us",
          "homa.max_nic_backlog=" + std::to_string(backlog_ns / 1000) + "us"};
}

}  // namespace wharf::bench
