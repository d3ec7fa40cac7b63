// mesh/mesh_service.h: MeshService, the mesh prober as it runs inside
// wharfd (a daemon::DaemonService): it answers other daemons' probes on the
// daemon's own endpoints (MeshResponder), probes the targets its pinglist
// gives this host (Prober) through those same endpoints' engines, reloads
// the pinglist when the file changes or on SIGHUP, and builds the
// snapshots its HTTP pages show (SnapshotBoard). docs/mesh.md describes it.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"

#include "base/clock.h"
#include "daemon/daemon_config.h"
#include "daemon/daemon_service.h"
#include "mesh/file_watch.h"
#include "mesh/passive_book.h"
#include "mesh/pinglist.h"
#include "mesh/probe_responder.h"
#include "mesh/prober.h"
#include "mesh/snapshot_board.h"

namespace wharf::mesh {

// Owned by the Daemon once added (Daemon::AddService); runs on its loop
// thread, except board() and RequestReload, which any thread may use.
class MeshService final : public daemon::DaemonService, private ProbeSender {
 public:
  // Targets copied into a snapshot per pass of the loop: each costs six
  // window summaries (merging up to ten histograms each), some tens of
  // microseconds for this many, which the applications' traffic waits.
  static constexpr size_t kSnapshotTargetsPerPass = 4;
  // How often the attached applications' round trips are taken from their
  // engines (ServiceHost::TakeApplicationRtts): the passive windows' grain.
  static constexpr DurationNs kPassiveTakeInterval = kNsPerSec;
  // Sessions taken from per pass of the loop: each hands over up to
  // endpoint.peer_rtt_peers histograms (a microsecond each to keep).
  static constexpr size_t kPassiveSessionsPerPass = 8;

  // Reads the pinglist (settings.pinglist, if set): a bad one is an error
  // here, at the daemon's start. `epoch` is this run's random prober epoch.
  static Result<std::unique_ptr<MeshService>> Create(const daemon::MeshSettings& settings,
                                                     const Clock& clock, uint64_t epoch);
  ~MeshService() override;

  // daemon::DaemonService
  Result<std::vector<uint32_t>> Attach(daemon::ServiceHost* host) override;
  void OnRequest(std::string_view scheme, engine::EngineApi& engine, engine::IncomingCall call,
                 TimeNs now) override;
  void OnComplete(std::string_view scheme, uint64_t op_id, Status status, Buffer message,
                  TimeNs now, engine::KernelStamps stamps) override;
  transport::PollResult Poll(TimeNs now) override;
  void RequestReload() override;

  // Where the HTTP handlers get snapshots. Thread-safe.
  SnapshotBoard& board() { return *board_; }
  const Clock& clock() const { return clock_; }
  // For tests, on the loop thread.
  const Prober& prober() const { return prober_; }
  const PinglistSnapshot& pinglist_state() const { return pinglist_state_; }

 private:
  MeshService(const daemon::MeshSettings& settings, const Clock& clock, uint64_t epoch);
  // ProbeSender: through the own engine of the target's transport.
  void SendProbe(uint64_t op_id, const ProbeTargetSpec& target, Buffer request,
                 TimeNs deadline_ns) override;
  // Makes `list` the one in use: finds this host in it and gives the prober
  // its targets. On error nothing changes.
  Status Apply(Pinglist list, TimeNs now);
  // Re-reads the file if it changed (or `forced`); a bad file keeps the
  // list in use and records why.
  void CheckPinglist(TimeNs now, bool forced);
  // Takes the applications' round trips into passive_, a few sessions per
  // pass; at the end of a round, forgets idle peers (unless a snapshot is
  // being built: that would move them). True when the round is over.
  bool TakePassive(TimeNs now);
  // Copies up to kSnapshotTargetsPerPass targets (then peers) into the
  // snapshot being built; publishes it once complete.
  void BuildSnapshot(TimeNs now);
  void CopyTarget(size_t index, TimeNs now);
  void CopyPeer(size_t index, TimeNs now);

  const daemon::MeshSettings settings_;
  const Clock& clock_;
  daemon::ServiceHost* host_ = nullptr;  // set by Attach
  MeshResponder responder_;
  Prober prober_;
  std::unique_ptr<SnapshotBoard> board_;
  // The list in use (none until the first good load).
  std::unique_ptr<Pinglist> pinglist_;
  // Read at Create, applied at Attach.
  std::unique_ptr<Pinglist> first_list_;
  PinglistSnapshot pinglist_state_;
  FileWatch watch_;
  TimeNs next_check_ns_ = 0;
  std::atomic<bool> reload_requested_{false};
  PassiveBook passive_{PassiveBook::Options{}};
  TimeNs next_passive_take_ns_ = 0;
  bool passive_round_open_ = false;  // a take round goes on next pass
  // The snapshot being built, how many targets and peers it holds so far,
  // and the pinglist host of each peer a target matched (by passive_ index).
  std::shared_ptr<MeshSnapshot> building_;
  size_t built_targets_ = 0;
  size_t built_peers_ = 0;
  absl::flat_hash_map<size_t, std::string> peer_hosts_;
};

}  // namespace wharf::mesh
