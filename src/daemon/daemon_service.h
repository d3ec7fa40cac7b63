// daemon/daemon_service.h: DaemonService, a part of wharfd that runs on the
// daemon's loop and speaks through the daemon's own endpoints (the mesh
// prober: mesh/mesh_service.h), and ServiceHost, what the daemon lends it.
// The daemon knows nothing of what a service does: it hands it the requests
// for the methods it serves and the completions of the operations it
// started, polls it once per pass and wakes for its deadline. Modules above
// the daemon (mesh) implement services; the daemon does not depend on them.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "daemon/status_report.h"
#include "engine/engine_api.h"
#include "engine/engine_sink.h"
#include "engine/peer_rtt_table.h"
#include "transport/message_transport.h"
#include "transport/net_address.h"
#include "wharf/buffer.h"
#include "wharf/result.h"
#include "wharf/status.h"

namespace wharf::daemon {

// What the daemon lends a service. Valid while the service is attached;
// called on the loop thread only.
class ServiceHost {
 public:
  virtual ~ServiceHost() = default;
  // The daemon's own engine over `scheme` ("homa", "tcp"), or null when that
  // listener is off. Operations started on it complete through
  // DaemonService::OnComplete; op ids are the service's to choose (nonzero,
  // below 2^63).
  virtual engine::EngineApi* OwnEngine(std::string_view scheme) = 0;
  // Where that engine listens (port resolved); kNone address when off.
  virtual transport::NetAddress OwnAddress(std::string_view scheme) const = 0;
  // This host's interface addresses (ports 0), as read at the daemon's
  // start.
  virtual const std::vector<transport::NetAddress>& HostAddresses() const = 0;
  // The round trips of the applications' own calls and messages, per peer
  // and scheme, since the last take: the attached applications' engines
  // (engine::PeerRttTable), not the own engines, whose calls are the
  // service's, and what detached ones left. At most `max_sessions` sessions
  // per call, going on where the last call stopped, so that many
  // applications with many peers do not stall the loop in one pass; true
  // once a call has reached the last session (the next starts a new round).
  virtual bool TakeApplicationRtts(
      TimeNs now, size_t max_sessions,
      const std::function<void(std::string_view scheme, const engine::PeerRttDelta&)>& visit) = 0;
  // The daemon as `wharf status` shows it.
  virtual DaemonReport Report() const = 0;
  // Wakes the loop for a pass soon. The only method any thread may call.
  virtual void WakeLoop() = 0;
};

// Owned by the Daemon (Daemon::AddService); runs on its loop thread.
class DaemonService {
 public:
  virtual ~DaemonService() = default;
  // Called once, before the loop runs: the host stays valid for the
  // service's life (its destructor must not use it: the own engines may be
  // gone). Returns the methods the service serves on every own endpoint,
  // or why it cannot run (the daemon then does not start).
  virtual Result<std::vector<uint32_t>> Attach(ServiceHost* host) = 0;
  // A request for a served method on `scheme`'s own endpoint: answer it
  // with `engine.Respond`, now or later. `now` is when the engine handed
  // it over.
  virtual void OnRequest(std::string_view scheme, engine::EngineApi& engine,
                         engine::IncomingCall call, TimeNs now) = 0;
  // An operation the service started on `scheme`'s engine ended. Must not
  // call into that engine (engine_sink.h): note it, act in Poll. `now` is
  // when the engine handed it over; `stamps` when the kernel sent the
  // request and received the answer (EngineApi::completing_stamps), 0 where
  // not known.
  virtual void OnComplete(std::string_view scheme, uint64_t op_id, Status status, Buffer message,
                          TimeNs now, engine::KernelStamps stamps) = 0;
  // Once per pass of the loop: the work done and when it must run next.
  virtual transport::PollResult Poll(TimeNs now) = 0;
  // A thread other than the loop's asks the service to re-read what it
  // reads from files (SIGHUP). Thread-safe; the work happens in Poll.
  virtual void RequestReload() {}
};

}  // namespace wharf::daemon
