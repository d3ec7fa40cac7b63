// mesh/passive_book.h: PassiveBook, what the applications' own calls and
// messages say about each path, as wharfd's mesh shows it beside its
// probes: per peer address and transport, the round trips the attached
// applications' engines measured (engine::PeerRttTable), over the same
// sliding windows and Prometheus buckets as a probe series. Passive
// measurement: no packet is sent for it. A round trip here includes the
// server's handling time (an application's answer may take as long as its
// handler runs), which a probe's network time leaves out.
//
// Bounded: at most max_peers series of about 33 KiB each; a peer without a
// new value for idle_timeout_ns is forgotten (ForgetIdle), and a new peer
// that finds the book full is not kept (counters().untracked).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"

#include "base/clock.h"
#include "base/compact_histogram.h"
#include "mesh/probe_series.h"
#include "mesh/window_histogram.h"
#include "transport/net_address.h"

namespace wharf::mesh {

// One peer over one transport.
class PassiveSeries {
 public:
  PassiveSeries(std::string transport, transport::NetAddress peer, TimeNs now)
      : transport_(std::move(transport)), peer_(peer), rtt_(now) {}

  // A batch taken from an engine at `now`: answered round trips and
  // unanswered requests (shown as the windows' `lost`).
  void Add(TimeNs now, const CompactHistogram& round_trips, uint64_t failures);

  const std::string& transport() const { return transport_; }
  const transport::NetAddress& peer() const { return peer_; }
  const SlidingWindows& rtt() const { return rtt_; }
  const LatencyBuckets& rtt_buckets() const { return rtt_buckets_; }
  uint64_t round_trips() const { return round_trips_; }
  uint64_t failures() const { return failures_; }
  TimeNs last_ns() const { return last_ns_; }

 private:
  std::string transport_;
  transport::NetAddress peer_;
  SlidingWindows rtt_;
  LatencyBuckets rtt_buckets_;
  uint64_t round_trips_ = 0;
  uint64_t failures_ = 0;
  TimeNs last_ns_ = 0;
};

// Owned by the MeshService; single-threaded, on the daemon's loop.
class PassiveBook {
 public:
  struct Options {
    size_t max_peers = 1'024;
    // Longer than the longest window: an idle peer's 10 min window empties
    // before it goes.
    DurationNs idle_timeout_ns = 11 * 60 * kNsPerSec;
  };
  struct Counters {
    uint64_t untracked = 0;  // batches of a new peer dropped: the book was full
    uint64_t evicted = 0;    // peers forgotten after idle_timeout_ns
  };

  explicit PassiveBook(Options options) : options_(options) {}

  void Add(TimeNs now, std::string_view transport, const transport::NetAddress& peer,
           const CompactHistogram& round_trips, uint64_t failures);
  // Forgets peers idle for idle_timeout_ns. Moves series: indexes from
  // before are stale.
  void ForgetIdle(TimeNs now);

  // The series of `peer` over `transport`, or null; or its index.
  const PassiveSeries* Find(std::string_view transport, const transport::NetAddress& peer) const;
  std::optional<size_t> IndexOf(std::string_view transport, const transport::NetAddress& peer) const;
  // By index, 0 .. size() - 1, in no particular order; stable until
  // ForgetIdle (Add only appends).
  size_t size() const { return series_.size(); }
  const PassiveSeries& series(size_t i) const { return *series_[i]; }
  const Counters& counters() const { return counters_; }

 private:
  static std::string KeyOf(std::string_view transport, const transport::NetAddress& peer);

  const Options options_;
  std::vector<std::unique_ptr<PassiveSeries>> series_;
  absl::flat_hash_map<std::string, size_t> index_;  // KeyOf -> series_ index
  Counters counters_;
};

}  // namespace wharf::mesh
