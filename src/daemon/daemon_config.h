// daemon/daemon_config.h: DaemonConfig, wharfd's settings: where its control
// socket is and who may use it, the addresses it listens on per transport,
// per-application limits, logging, and the engine settings (homa.*, tcp.*,
// udp.*, endpoint.*) every application's endpoint runs with. Loaded from a
// YAML file (packaging/wharfd.yaml is the commented default) plus
// "section.name=value" overrides; errors name the file, line and key.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/log.h"
#include "engine/engine_config.h"
#include "wharf/result.h"

namespace wharf::daemon {

// What one application (one attachment) may use.
struct AppLimits {
  // The region's heap (limits.heap_bytes): half for the messages it sends,
  // half for those it receives; it bounds the memory an application pins
  // in wharfd's name.
  uint64_t heap_bytes = 64ull << 20;
  // Entries of each ring (limits.ring_entries); a power of two.
  uint32_t ring_entries = 1024;
  // Operations in flight, served requests awaiting an answer included
  // (limits.max_inflight).
  size_t max_inflight = 4096;
  // Connections open at once, both directions (limits.max_connections).
  size_t max_connections = 1024;
  // Completion-ring entries wharfd holds for an application whose ring is
  // full before it stops taking that application's commands: backpressure
  // for it alone.
  size_t max_backlog = 4096;
  // Commands taken from one application per pass, so one busy application
  // cannot starve the others.
  size_t commands_per_pass = 64;
};

// The mesh prober's and the HTTP server's keys. wharfd's daemon module only
// reads them; the mesh module (mesh/mesh_service.h) acts on them.
struct MeshSettings {
  // http.listen: where /metrics, /api/v1 and the dashboard are served;
  // loopback by default (the figures describe the network), "" = off.
  std::string http_listen = "127.0.0.1:4002";
  // mesh.pinglist: the pinglist file (mesh/pinglist.h); "" = probe nobody
  // (the daemon still answers others' probes).
  std::string pinglist;
  // mesh.name: this host's name in the pinglist; "" = found by address and
  // port.
  std::string name;
  // mesh.max_probes_per_second: every target together; intervals stretch
  // alike to stay under it.
  uint32_t max_probes_per_second = 10000;
  // mesh.reload_check: how often the pinglist file is checked for a change
  // (SIGHUP checks at once).
  DurationNs reload_check_ns = kNsPerSec;
};

struct DaemonConfig {
  // daemon.socket: the control socket. `--socket` and WHARF_SOCKET override.
  std::string socket_path = "/run/wharf/wharfd.sock";
  // daemon.socket_group: group of the socket file (mode 0660); empty keeps
  // wharfd's own group.
  std::string socket_group;
  // daemon.allowed_uids: uids that may attach; empty: anyone who can open
  // the socket (file permissions decide).
  std::vector<uid_t> allowed_uids;
  // daemon.log_level.
  LogLevel log_level = LogLevel::kInfo;
  // daemon.busy_spin: how long wharfd keeps polling after the last work
  // while answers are awaited (RPCs in flight, requests an application is
  // answering), instead of endpoint.spin. Its spin yields the CPU to any
  // other runnable thread; 0 uses endpoint.spin always.
  DurationNs busy_spin_ns = kNsPerMs;
  // daemon.hello_timeout: a control connection that has not said hello
  // this long after it connected is closed, whatever else it sent (status
  // queries included: each is a connection of its own).
  DurationNs hello_timeout_ns = 5 * kNsPerSec;
  // daemon.max_unattached / daemon.max_unattached_per_uid: control
  // connections waiting without a hello, in all and per uid. One more
  // closes the oldest of the uid with the most, so a uid that floods the
  // socket only crowds itself out.
  size_t max_unattached = 64;
  size_t max_unattached_per_uid = 16;
  // daemon.status_requests_per_second: status answers per second, all
  // connections together (as many may come at once); over it a request is
  // answered kResourceExhausted. Each answer walks every application.
  uint32_t status_requests_per_second = 50;
  // daemon.stall_threshold: a turn of the loop longer than this counts as
  // a stall in `wharf status` (every application waits while it runs).
  DurationNs stall_threshold_ns = 10 * kNsPerMs;
  // daemon.refuse_passed_fds: have the kernel refuse files passed over the
  // control socket (Linux 6.16+). false: take and close them off the loop,
  // as on older kernels; for the tests of that path.
  bool refuse_passed_fds = true;
  // listen.homa / listen.tcp: the sockets applications' endpoints share by
  // default ("" disables one). An application asking for port 0 gets an
  // endpoint there.
  std::string listen_homa = "0.0.0.0:4000";
  std::string listen_tcp = "0.0.0.0:4001";
  // limits.max_applications: attachments at once.
  size_t max_applications = 256;
  AppLimits limits;
  // homa.*, tcp.*, udp.*, endpoint.*: as in docs/configuration.md.
  engine::EngineConfig engine;
  // http.*, mesh.*
  MeshSettings mesh;
};

// Loads `file` (empty: built-in defaults) then `overrides`. Unknown keys
// are errors (a typo must not silently keep a default).
Result<DaemonConfig> LoadDaemonConfig(
    const std::string& file, const std::vector<std::pair<std::string, std::string>>& overrides);

}  // namespace wharf::daemon
