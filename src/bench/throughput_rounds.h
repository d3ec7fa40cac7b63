// bench/throughput_rounds.h: how `wharf bench throughput --rounds N`
// reads N measurements of each row. The run measures every series (and
// iperf3) once per round, round after round, so each row's samples are
// spread over the whole run; a row's reported figures are those of its
// median round (RPC/s, or Gbit/s for goodput, and that round's latency and
// CPU with them), and ratios are the median of each round's own ratio
// (throughput_report.h). Why: this machine's speed drifts over minutes (RPC
// rows by about 10%, homa's bulk over the veth pair by half; it is a VM),
// and a baseline measured minutes before the row it is compared with
// carries that drift into the ratio. Pure: no processes.
#pragma once

#include <vector>

#include "bench/cluster_throughput.h"
#include "bench/throughput_report.h"

namespace wharf::bench {

// Whether two rows measured the same thing (series, in-flight count, size),
// in different rounds or against each other.
bool SameRow(const ThroughputRow& a, const ThroughputRow& b);

// The median of `values` (the lower middle one for an even count); -1 when
// empty.
double Median(std::vector<double> values);

// Of rows that measured the same thing in different rounds, the one whose
// RPC/s is the median (lower middle for an even count). `rows` not empty.
const ThroughputRow& MedianRow(const std::vector<const ThroughputRow*>& rows);

// Fills `path`'s rows, iperf3, errors and notes from path.rounds: each
// (series, in-flight) row of any round once, as its median round; iperf3 as
// its median run; errors and notes of every round, each once. Nothing when
// there are no rounds.
void MergeRounds(ThroughputPathResult& path);

}  // namespace wharf::bench
