// netns/bottleneck.h: the link-rate bottleneck of a benchmark cluster. Puts a
// tc tbf of one rate on every host's egress (its eth0) and ingress (the
// switch port facing it), sized for that rate, and reads the queues back
// (`tc -s`: bytes, drops, overlimits, backlog) for the report. Also parses
// and formats tc rates ("1gbit", "200mbit").
//
// Why tbf and these sizes (docs/benchmarks.md, "The cluster harness"):
//   burst   = max(64 KiB, rate x 1 ms). veth hands tbf GSO packets of up to
//             64 KiB; a smaller bucket makes tbf split each one in software,
//             and a bucket below what 1 ms of line rate carries makes the
//             achieved rate hostage to how promptly the qdisc watchdog timer
//             fires on a loaded machine. 1 ms of burst is also roughly what a
//             datacenter switch port forwards back to back.
//   latency = 5 ms: the queue holds rate x 5 ms (+ burst) before tbf drops,
//             a few ms of buffering like a shallow-buffered switch port;
//             deep enough that one TCP flow fills the link, shallow enough
//             that the queueing the benchmark measures stays bounded.
//
// With priority levels the limit is an htb over strict-priority classes
// chosen by DSCP (netns_cluster.h, TbfOptions::priority_levels), the same
// buffer, and a bucket of max(two frames, rate x 200 us): its queues cut
// GSO packets into frames, so no 64 KiB floor is needed, and a small
// bucket keeps an idle link from passing many frames at once (see
// ApplyBottleneck). Does not hold cluster setup (netns_cluster.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "netns/netns_cluster.h"
#include "wharf/result.h"

namespace wharf::netns {

// Slowest and fastest bottleneck the bench accepts: below 1 Mbit/s a 64 KiB
// burst is half a second of traffic; above 100 Gbit/s veth cannot keep up.
inline constexpr int64_t kMinBottleneckBitsPerSecond = 1'000'000;
inline constexpr int64_t kMaxBottleneckBitsPerSecond = 100'000'000'000;

// Parses a rate in tc's bit units: a non-negative decimal number (fractions
// allowed) and bit, kbit, mbit, gbit or tbit (powers of 1000),
// case-insensitive; a bare number is bits per second. "bps" units are
// refused: tc reads them as bytes per second and wharf's config as bits, so
// either reading would surprise someone. kInvalidArgument names the text.
Result<int64_t> ParseRateBitsPerSecond(std::string_view text);

// The shortest exact tc spelling: 1000000000 -> "1gbit", 250000 -> "250kbit",
// 1234 -> "1234bit".
std::string FormatRate(int64_t bits_per_second);

// The tbf parameters for `bits_per_second` (see the file comment).
TbfOptions TbfForRate(int64_t bits_per_second);
// The bucket size TbfForRate chooses, in bytes.
int64_t TbfBurstBytes(int64_t bits_per_second);

// One tbf queue of the bottleneck: where it sits and what `tc -s` said.
struct QueueStats {
  int host = -1;         // the host whose link it limits
  bool ingress = false;  // false: the host's eth0; true: the switch port facing it
  std::string netns;
  std::string device;
  int64_t sent_bytes = 0;
  int64_t sent_packets = 0;
  int64_t dropped_packets = 0;
  int64_t overlimits = 0;     // times a packet had to wait for tokens
  int64_t backlog_bytes = 0;  // queued at the time of reading
  int64_t backlog_packets = 0;
};

// What ApplyBottleneck installed.
struct BottleneckReport {
  int64_t rate_bits_per_second = 0;
  TbfOptions tbf;
  int64_t burst_bytes = 0;
  // One entry per tbf, in host order, egress before ingress; counters zero.
  std::vector<QueueStats> queues;
};

// Limits every host of `cluster` to `bits_per_second` in both directions
// (egress on eth0; with `ingress`, also on the switch port facing it, where
// traffic from several senders to one host queues), with
// `priority_levels` strict-priority queues behind each limit (1: one FIFO;
// TbfOptions::priority_levels). Replaces earlier limits. kInvalidArgument
// for a rate outside the bounds above or levels outside 1..8.
Result<BottleneckReport> ApplyBottleneck(NetnsCluster& cluster, int64_t bits_per_second,
                                         bool ingress = true, int priority_levels = 1);

// `tc -s qdisc show` of every queue ApplyBottleneck installed, now.
Result<std::vector<QueueStats>> ReadBottleneckQueues(const NetnsCluster& cluster,
                                                     bool ingress = true);

// Reads the counters of the first qdisc in `tc -s qdisc show dev D root`
// output into `stats` (sizes like "12Kb" are powers of 1024, as tc prints
// them). kInvalidArgument if there is no "Sent" line.
Status ParseTcQdiscStats(std::string_view text, QueueStats& stats);

}  // namespace wharf::netns
