// daemon/wharfd.h: Daemon, the heart of wharfd. It owns the control socket
// applications attach through, the sockets every application's endpoint
// shares (one homa:// UDP socket: one pacer and one SRPT scheduler for the
// whole host), one AppSession per attached application, and the loop that
// drives them all: spin while there is work, then sleep in epoll on the
// control socket, the applications' doorbells and the sockets.
//
// One thread runs everything (Run); Stop may be called from any thread or a
// signal handler's helper thread. Policy lives in the sessions' limits
// (daemon_config.h); admission (allowed uids, how many applications, how
// many connections may wait unattached and for how long) here.
//
// The rule it keeps (docs/security.md): nothing an application sends can
// block the loop or make it throw, and nothing an unattached connection
// does can take what attached applications need. A LoopWatchdog times
// every turn of the loop, so a stall shows in `wharf status`.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "daemon/app_session.h"
#include "daemon/daemon_config.h"
#include "daemon/daemon_service.h"
#include "daemon/local_switch.h"
#include "daemon/loop_watchdog.h"
#include "daemon/status_report.h"
#include "engine/engine.h"
#include "engine/transport_set.h"
#include "engine/waiter.h"
#include "shm/background_closer.h"
#include "shm/control_socket.h"

namespace wharf::daemon {

class Daemon final : public SessionHost, public ServiceHost {
 public:
  // Opens the control socket and the listen sockets. The caller runs Run().
  static Result<std::unique_ptr<Daemon>> Start(DaemonConfig config,
                                               const Clock& clock = SystemClock::Get());
  ~Daemon() override;

  // Serves until Stop(). Returns the first fatal error (none expected).
  Status Run();
  // Thread-safe; Run returns soon after.
  void Stop();

  // Runs `service` on the loop from now on (one at most; before Run): it
  // serves its methods on the own endpoints and is polled every pass.
  Status AddService(std::unique_ptr<DaemonService> service);
  // Thread-safe: asks the service to re-read its files (SIGHUP).
  void RequestReload();

  // The daemon as `wharf status` shows it. On the Run thread (the sessions
  // answer status requests with it).
  DaemonReport Report() const override;
  Result<std::string> StatusJson() const { return RenderStatusJson(Report()); }
  const DaemonCounters& counters() const { return counters_; }
  LoopStats loop_stats() const { return watchdog_.Stats(); }
  const std::string& socket_path() const { return config_.socket_path; }
  // Where the daemon's own homa:// endpoint listens ("" if disabled).
  std::string homa_address() const;

  // SessionHost
  Result<AppEndpoint> OpenAppEndpoint(std::string_view address,
                                      std::string* public_address) override;
  Result<AppEndpoint> OpenSecondary(std::string_view scheme) override;
  Status Admit(const shm::PeerCredentials& peer) override;
  void NoteAttached() override { ++counters_.applications_attached; }
  void NoteRefused() override { ++counters_.attaches_refused; }
  const DaemonConfig& config() const override { return config_; }
  const Clock& clock() const override { return clock_; }

  // ServiceHost
  engine::EngineApi* OwnEngine(std::string_view scheme) override;
  transport::NetAddress OwnAddress(std::string_view scheme) const override;
  const std::vector<transport::NetAddress>& HostAddresses() const override {
    return host_addresses_;
  }
  bool TakeApplicationRtts(
      TimeNs now, size_t max_sessions,
      const std::function<void(std::string_view scheme, const engine::PeerRttDelta&)>& visit)
      override;
  void WakeLoop() override { waiter_->WakeAlways(); }

 private:
  // The daemon's own endpoint on a listen socket: it keeps the socket
  // polled while no application is attached, and answers requests to it.
  class OwnSink;
  struct OwnEndpoint {
    std::unique_ptr<OwnSink> sink;
    std::unique_ptr<transport::MessageTransport> transport;
    std::unique_ptr<engine::Engine> engine;
  };

  Daemon(DaemonConfig config, const Clock& clock);
  Status OpenOwnEndpoint(std::string_view scheme, const std::string& address);
  // Wraps `inner` so endpoints of this daemon reach it in-process.
  Result<AppEndpoint> Switched(std::unique_ptr<transport::MessageTransport> inner,
                               uint16_t endpoint_id);
  // One pass over everything; the merged result for the wait loop.
  transport::PollResult Pass();
  void AcceptConnections(TimeNs now);
  // Makes room for one more unattached connection from `uid`: closes the
  // oldest unattached one of the uid with the most, if a cap is reached.
  void EvictForNewcomer(uid_t uid);
  // Keeps what a finished session's engine measured and no service took
  // yet (a short-lived application's last second), for the next take.
  void KeepDepartedRtts(AppSession& session, TimeNs now);
  // A status request's answer, within daemon.status_requests_per_second.
  Result<std::string> AnswerStatusRequest();
  // Before sleeping: the fds to watch, and every session's "wake me" flag.
  void BeforeSleep();

  const DaemonConfig config_;
  const Clock& clock_;
  const TimeNs started_ns_;
  std::unique_ptr<engine::Waiter> waiter_;
  std::unique_ptr<shm::ControlListener> listener_;
  // Closes what the control connections may hold off the loop; only where
  // the kernel cannot refuse passed fds (null otherwise). Declared before
  // the sessions, so it outlives their connections.
  std::unique_ptr<shm::BackgroundCloser> closer_;
  std::unique_ptr<engine::TransportSet> transports_;
  // Same-host delivery between applications' endpoints; outlives them.
  std::unique_ptr<LocalSwitch> switch_;
  // Declared before own_: the own endpoints' sinks point at it.
  std::unique_ptr<DaemonService> service_;
  std::vector<std::unique_ptr<OwnEndpoint>> own_;
  transport::NetAddress homa_bind_;  // listen.homa, port resolved
  std::vector<transport::NetAddress> host_addresses_;  // read at Start
  // By id; destroyed before the transports (declared after them).
  std::map<uint64_t, std::unique_ptr<AppSession>> sessions_;
  uint64_t next_session_id_ = 1;
  uint16_t next_auto_endpoint_ = 0x8000;
  std::atomic<bool> stop_{false};
  // The loop slept since the last pass: read every control socket.
  bool slept_ = false;
  static constexpr DurationNs kControlCheckInterval = kNsPerMs;
  TimeNs next_control_check_ns_ = 0;
  // Some session awaited an answer at the end of the last pass: Run spins
  // for daemon.busy_spin instead of endpoint.spin after work.
  bool awaiting_answers_ = false;
  std::vector<int> fds_scratch_;
  std::vector<int> watched_fds_;
  DaemonCounters counters_;
  LoopWatchdog watchdog_;
  // Status requests: a token bucket of daemon.status_requests_per_second,
  // as many deep.
  double status_tokens_ = 0;
  TimeNs status_tokens_at_ns_ = 0;
  // The reason of the last session counted in applications_faulted, with
  // who it was ("" until one is).
  std::string last_fault_;
  // KeepDepartedRtts' store, keyed by an index into departed_schemes_
  // ("homa", "tcp": as many as transports; capped at kMaxDepartedSchemes).
  engine::PeerRttTable departed_rtts_{engine::PeerRttTable::Options{}};
  std::vector<std::string> departed_schemes_;
  // The session id TakeApplicationRtts goes on from (0: a new round).
  uint64_t rtt_take_cursor_ = 0;
  static constexpr size_t kMaxDepartedSchemes = 8;
};

}  // namespace wharf::daemon
