// bench/cluster_tuning.h: the homa settings `wharf bench cluster`
// gives every wharf node and wharfd for the emulated network, as an
// operator would for a real one. wharf's defaults are for a 25 Gbit/s
// datacenter link: 60 kB unscheduled per message and 400 kB granted at once
// would overflow a 100 Mbit/s port's buffer several times over (in a 4-host
// W4 run at 0.8 load, 37% of the data went out twice and short-message P99
// slowdown was 395; with these, 0.4% and 24).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace wharf::bench {

// The software part of an unloaded small-message round trip on this kind
// of machine (a namespace ping: 25-60 us), for the bandwidth-delay product.
inline constexpr int64_t kHostRoundTripNs = 50'000;

// KEY=VALUE settings for a link of `link_bps` with `mtu`-byte packets:
//   homa.unsched_bytes      one bandwidth-delay product (host round trip
//                           plus a full packet's wire time each way),
//                           rounded up to whole MTUs;
//   homa.max_incoming_bytes 8 of those (one per message granted at once,
//                           homa.overcommit's default);
//   homa.tick               1 ms, or the time the link takes to carry
//                           125 kB (1 ms of 1 Gbit/s) when longer: resends
//                           start after 5 ticks, and on a slow link a
//                           granted message can wait that long behind
//                           shorter ones at a busy sender;
//   homa.max_nic_backlog    100 us (wharf's default), or three full
//                           packets' wire time when longer: a sender that
//                           sleeps between pacer slots must find the next
//                           packet allowed when it wakes, or the link idles
//                           (at 100 Mbit/s a packet takes 123 us).
std::vector<std::string> HomaSettingsForLink(uint64_t link_bps, int mtu);

}  // namespace wharf::bench
