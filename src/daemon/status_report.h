// daemon/status_report.h: what `wharf status` shows of wharfd, as plain
// values (DaemonReport), and the one adapter that turns them into JSON.
// wharfd fills a report on its loop thread (Daemon::StatusJson); nothing
// else of the daemon includes the JSON library.
//
// Its texts come partly from applications (program names, endpoint names,
// the reasons sessions closed). They are checked where they enter
// (app_session.cc), and the adapter still never throws on them: bytes that
// are not UTF-8 become U+FFFD, and any exception the library raises becomes
// a Status (docs/security.md).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "daemon/loop_watchdog.h"
#include "wharf/result.h"

namespace wharf::daemon {

// Daemon-wide counts.
struct DaemonCounters {
  uint64_t applications_attached = 0;  // kWelcome sent
  uint64_t applications_detached = 0;  // sessions torn down and freed
  uint64_t attaches_refused = 0;       // uid not allowed, too many, bad hello
  uint64_t connections_refused = 0;    // control connections closed at accept
  // Unattached connections closed to make room for a newer one (the
  // oldest of the uid with the most: daemon.max_unattached*).
  uint64_t connections_evicted = 0;
  // Unattached connections closed because no hello came in time
  // (daemon.hello_timeout), whatever else they sent.
  uint64_t hello_timeouts = 0;
  // Status requests refused over daemon.status_requests_per_second.
  uint64_t status_requests_limited = 0;
  // Sessions wharfd closed because of what the application did (a broken
  // ring, garbage on the control socket), not because it left.
  uint64_t applications_faulted = 0;
  uint64_t passes = 0;
  uint64_t sleeps = 0;
};

// One attached application (or one closing).
struct ApplicationReport {
  uint64_t id = 0;
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string program;
  std::string endpoint;
  bool closing = false;
  std::string close_reason;  // "" unless closing
  uint64_t heap_bytes = 0;
  uint64_t receive_bytes_in_use = 0;
  uint64_t inflight = 0;
  uint64_t requests_in_service = 0;
  uint64_t connections = 0;
  bool idle = false;
  // Per peer its transports name a path to: (peer, path), e.g.
  // ("ucx://198.18.0.2:4000", "tcp/eth0").
  std::vector<std::pair<std::string, std::string>> paths;
  // The session's counters, by name (SessionCounters).
  std::vector<std::pair<std::string, uint64_t>> counters;
};

struct DaemonReport {
  pid_t pid = 0;
  std::string socket;
  int64_t uptime_seconds = 0;
  DaemonCounters counters;
  std::string last_fault;
  LoopStats loop;
  // Control connections not attached (yet): status queries, hellos in flight.
  uint64_t unattached_connections = 0;
  // Whether the kernel refuses fds passed to the control socket; if not,
  // how many fds the background closer took (control_socket.h).
  bool kernel_refuses_fds = false;
  uint64_t fds_closed_off_loop = 0;
  std::vector<ApplicationReport> applications;
  // Per listen socket ("homa://0.0.0.0:4000"): its counters.
  std::vector<std::pair<std::string, std::vector<std::pair<std::string, uint64_t>>>> transports;
};

// The report as one JSON document (the shape docs/daemon.md shows). Never
// throws.
Result<std::string> RenderStatusJson(const DaemonReport& report);

}  // namespace wharf::daemon
