// mesh/mesh_snapshot.h: MeshSnapshot, everything the mesh's HTTP pages show,
// copied out of the loop's state at one moment (snapshot_board.h says how
// and when). Plain values: the HTTP threads render them while the loop goes
// on. The renderers are metrics_exporter.h (Prometheus) and api_json.h.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/clock.h"
#include "daemon/status_report.h"
#include "mesh/prober.h"
#include "mesh/probe_series.h"
#include "mesh/window_histogram.h"
#include "wharf/status.h"

namespace wharf::mesh {

// What the attached applications' own calls and messages measured on one
// peer and transport (passive_book.h).
struct PassiveSnapshot {
  std::string transport;  // "homa", "tcp"
  std::string peer;       // its address, "198.18.0.2:4000"
  std::string host;       // the pinglist host at that address, "" if none
  uint64_t round_trips = 0;  // answered, ever
  uint64_t failures = 0;     // unanswered, ever
  TimeNs last_ns = 0;        // the last batch with something in it
  // Indexed by Window; a window's `lost` holds its unanswered requests.
  std::array<SeriesState, kWindows.size()> state{};
  std::array<WindowSummary, kWindows.size()> rtt{};
  LatencyBuckets rtt_buckets;
  std::vector<HistoryPoint> history;
};

// One target over one transport.
struct TargetSnapshot {
  std::string host;
  std::string transport;  // "homa", "tcp"
  std::string uri;        // where its probes go
  std::string origin;     // the pinglist rules that ask for it
  DurationNs interval_ns = 0;  // after the total-rate stretch
  DurationNs timeout_ns = 0;
  uint32_t size_bytes = 0;
  uint8_t priority = 0;  // the class's, 0..7
  // The DSCP its packets carry (the class selector of the priority), or -1
  // where the transport does not mark per message (tcp://).
  int dscp = -1;
  SeriesCounters counters;
  size_t in_flight = 0;
  // Indexed by Window (k10s, k1m, k10m).
  std::array<SeriesState, kWindows.size()> state{};
  std::array<WindowSummary, kWindows.size()> rtt{};
  std::array<WindowSummary, kWindows.size()> network{};
  LatencyBuckets rtt_buckets;
  LatencyBuckets network_buckets;
  // 0 = never.
  TimeNs last_answer_ns = 0;
  TimeNs last_sent_ns = 0;
  StatusCode last_failure = StatusCode::kOk;
  // Round trips in 10-second points over the last 10 minutes.
  std::vector<HistoryPoint> history;
  // The applications' own traffic to the same address and transport: an
  // index into MeshSnapshot::peers, or -1 when there is none.
  int passive = -1;
};

// The pinglist as the prober runs it.
struct PinglistSnapshot {
  std::string path;     // "" when mesh.pinglist is not set
  std::string version;  // of the list in use ("" when none loaded)
  std::string self;     // this host's name in it ("" when none)
  std::vector<std::string> hosts;  // every host's name, in the list's order
  // Of the last load attempt: "" when it worked; else why, while the list
  // before stays in use.
  std::string error;
  uint64_t loads = 0;
  uint64_t load_failures = 0;
  TimeNs loaded_ns = 0;  // when the list in use was loaded
};

struct MeshSnapshot {
  TimeNs taken_ns = 0;  // the loop's clock (monotonic) when it was taken
  PinglistSnapshot pinglist;
  std::vector<TargetSnapshot> targets;
  // Every peer the applications' traffic measured, targets or not.
  std::vector<PassiveSnapshot> peers;
  uint64_t passive_untracked = 0;  // PassiveBook::Counters
  uint64_t passive_evicted = 0;
  ProberCounters prober;
  uint64_t prober_epoch = 0;
  double probes_per_second = 0;  // all targets together, as scheduled
  double stretch = 1;            // intervals multiplied by this for the cap
  uint64_t probes_skipped = 0;   // a late loop skipped them
  uint64_t probes_answered = 0;  // by this daemon's responder
  uint64_t probes_malformed = 0;
  // The daemon's own report: applications, transports' counters.
  daemon::DaemonReport daemon;
};

}  // namespace wharf::mesh
