// mesh/collector.h: Collector, the loop of `wharf mesh collect`: every
// interval it fetches /api/v1/matrix from each source wharfd in each window
// (10s, 1m, 10m) and keeps, per source and window, the last good matrix and
// the last round's outcome; Matrix(window) merges them (cluster_matrix.h)
// for whoever asks, a source that failed its last round shown unreachable
// with its error and the age of its last good data. What it serves over
// HTTP is collector_http.h's; signals and printing are the command's.
// FetchMatrices, beside it, is the one-shot fetch `wharf mesh` prints.
//
// Time and fetching are injected (a Clock, a FetchFunction), so tests run
// rounds by hand on a SimClock with canned answers; Start() runs them on a
// thread of its own, on the real clock, with HttpGet.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "mesh/cluster_matrix.h"
#include "wharf/result.h"

namespace wharf::mesh {

// GETs `path_and_query` from `url` within `timeout` (HttpGet's signature).
// Called from several threads at once when CollectorOptions::parallel > 1.
using FetchFunction = std::function<Result<std::string>(
    const std::string& url, const std::string& path_and_query, DurationNs timeout)>;

// The windows a collector keeps, in the daemon's names.
inline constexpr std::array<std::string_view, 3> kCollectorWindows = {"10s", "1m", "10m"};

// What one round did, for the command's one line per round.
struct CollectorRound {
  uint64_t number = 0;  // 1, 2, ...
  size_t sources = 0;   // sources asked
  size_t answered = 0;  // sources that gave every window's matrix
  // "name: error" of each source that did not, in source order.
  std::vector<std::string> failures;
  DurationNs took_ns = 0;  // on the collector's clock
};

struct CollectorOptions {
  // The sources' base URLs, as FetchFunction takes them ("http://10.0.0.1:4002");
  // at least one, each once.
  std::vector<std::string> sources;
  DurationNs interval = 5 * kNsPerSec;       // from one round's start to the next's, > 0
  DurationNs fetch_timeout = 2 * kNsPerSec;  // per fetch, > 0
  // Sources fetched at once in a round, 1..64 (1: one after another on the
  // round's thread).
  int parallel = 8;
  // Called on the loop's thread after each round Start() runs (not for
  // RunRound called by hand); the command prints its line there.
  std::function<void(const CollectorRound&)> on_round;
};

// One window's matrix from every source, `parallel` (1..64) at a time, each
// within `timeout`: what `wharf mesh` shows once. A source that fails, or
// answers something that is not a matrix, is unreachable with the error;
// fetched_ns is when the fetches began, on `clock`. In `urls` order.
std::vector<SourceFetch> FetchMatrices(const std::vector<std::string>& urls,
                                       std::string_view window, DurationNs timeout,
                                       const FetchFunction& fetch, const Clock& clock,
                                       int parallel = 8);

// Owned by its creator (the command, or a test). RunRound, Start and Stop
// from one thread; Matrix and rounds() from any (the HTTP server's
// workers). The Clock must be thread-safe when Start() is used.
class Collector {
 public:
  // Checks the options. Errors say which.
  static Result<std::unique_ptr<Collector>> Create(CollectorOptions options, const Clock& clock,
                                                   FetchFunction fetch);
  ~Collector();  // stops the thread, if started
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  // One round, now: every source in every window (a source whose first
  // fetch finds it down, refused or timed out, is not asked for its other
  // windows this round: each would cost a timeout), then the outcome
  // recorded. A bad answer (not a matrix) counts as a failure. Returns when
  // every fetch has ended.
  CollectorRound RunRound() ABSL_LOCKS_EXCLUDED(mu_);

  // Runs rounds every options.interval on a thread until Stop(): the first
  // at once; a round that overruns makes the next start when it ends.
  void Start() ABSL_LOCKS_EXCLUDED(mu_);
  // Wakes and joins the thread (after its round in progress ends, which its
  // fetch timeout bounds). Idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  // The merged matrix of `window` ("10s", "1m", "10m") as of now, or
  // InvalidArgument for another window. Before the first round every
  // source is unreachable with "no answer yet".
  Result<ClusterMatrix> Matrix(std::string_view window) const ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t rounds() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // One source in one window.
  struct WindowRecord {
    bool reachable = false;  // its last fetch gave a matrix
    std::string error;       // why not; "" before any fetch
    std::optional<DaemonMatrix> last_good;
    TimeNs last_good_ns = 0;  // when last_good was fetched
  };
  struct SourceRecord {
    std::string url;
    std::array<WindowRecord, kCollectorWindows.size()> windows;
  };
  Collector(CollectorOptions options, const Clock& clock, FetchFunction fetch);
  // One source's matrix in each window (kCollectorWindows order), or why not.
  std::vector<Result<DaemonMatrix>> FetchSource(const std::string& url) const;
  void Loop() ABSL_LOCKS_EXCLUDED(mu_);

  const CollectorOptions options_;
  const Clock& clock_;
  const FetchFunction fetch_;

  mutable Mutex mu_;
  std::vector<SourceRecord> records_ ABSL_GUARDED_BY(mu_);  // in options_.sources order
  uint64_t rounds_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  CondVar wake_;        // Stop() -> the loop
  std::thread thread_;  // Start()'s; joined by Stop()
};

}  // namespace wharf::mesh
