// daemon/app_session.h: AppSession, one attached application as wharfd sees
// it: its control connection and credentials, its sealed region (rings and
// heap) and doorbells, and the Engine that runs its endpoint on the daemon's
// shared sockets. It attaches the application, runs its passes (control
// messages, commands, the engine, completions out), is its engine's sink
// (completions, requests and cancellations become completion-ring entries)
// and closes it. The books are kept by its parts, each with its own state:
//   CommandExecutor   carries out the commands (command_executor.h)
//   OperationTable    operations in flight and connections held
//   ServedCalls       methods served and requests awaiting an answer
//   PeerHandles       the names peers have in the rings
//   SendLoans         send-area ranges lent to the engine (zero-copy sends)
//   ReceiveArea       the receive area: placed receives and copies
//   CompletionOutbox  the entries waiting for the completion ring
//
// Isolation: everything read from the region is copied once and checked;
// a command naming something the application does not own fails for that
// application (a kCompletion or kFault and a counter) and nothing else.
// Garbage in the ring's own bookkeeping (an index out of bounds) breaks the
// session for good: it is closed with kFault, like an application that died.
//
// Lifetime: Attach (kHello handled), then Poll passes from the daemon's
// loop until the application goes (EOF on the control socket, a broken
// ring) or the daemon stops. Then Close: requests it was serving are
// answered kUnavailable, its connections disconnected, its operations
// aborted; the engine lingers for kLinger so those answers leave, and the
// destructor frees the region and every fd. Single-threaded: the daemon's
// loop thread owns it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "daemon/command_executor.h"
#include "daemon/completion_outbox.h"
#include "daemon/daemon_config.h"
#include "daemon/operation_table.h"
#include "daemon/peer_handles.h"
#include "daemon/receive_area.h"
#include "daemon/send_loans.h"
#include "daemon/served_calls.h"
#include "engine/engine.h"
#include "engine/engine_sink.h"
#include "shm/attach_protocol.h"
#include "shm/control_socket.h"
#include "shm/region.h"
#include "shm/validator.h"
#include "transport/message_transport.h"

namespace wharf::daemon {

// An application's endpoint on one of the daemon's sockets: the transport
// there, and (wrapping it) the one the engine drives, which delivers to
// other endpoints of the same daemon in-process (daemon/switched_transport.h).
struct AppEndpoint {
  std::unique_ptr<transport::MessageTransport> inner;
  std::unique_ptr<transport::MessageTransport> outer;  // destroyed first
  transport::MessageTransport* get() const { return outer ? outer.get() : inner.get(); }
};

// What a session needs from the daemon that hosts it: transports on the
// daemon's sockets. Implemented by Daemon (wharfd.h) and by tests.
class SessionHost {
 public:
  virtual ~SessionHost() = default;
  // Opens the application's endpoint for `address` (its EndpointOptions
  // address) and sets `*public_address` to the address peers use.
  virtual Result<AppEndpoint> OpenAppEndpoint(std::string_view address,
                                              std::string* public_address) = 0;
  // A transport of `scheme` for peers of another scheme than the endpoint's.
  virtual Result<AppEndpoint> OpenSecondary(std::string_view scheme) = 0;
  // May this application attach (allowed uids, how many are attached)?
  virtual Status Admit(const shm::PeerCredentials& peer) = 0;
  // The application attached (its kWelcome went out), or its hello was
  // refused (a refusing kWelcome went out).
  virtual void NoteAttached() = 0;
  virtual void NoteRefused() = 0;
  virtual const DaemonConfig& config() const = 0;
  virtual const Clock& clock() const = 0;
};

// Per-application counts, for `wharf status` and the tests.
struct SessionCounters {
  uint64_t commands = 0;
  uint64_t completions = 0;
  uint64_t bad_commands = 0;      // refused: a kFault or failed kCompletion
  uint64_t bytes_sent = 0;        // payload handed to the engine
  uint64_t bytes_received = 0;    // payload delivered into the receive area
  // Of those deliveries, messages homa received straight into the area
  // (no copy by the session; receive_area.h).
  uint64_t received_in_place = 0;
  uint64_t backpressure_passes = 0;  // passes its commands waited for room
  uint64_t control_refused = 0;   // control messages that closed it (garbage, fds)
  uint64_t requests_refused = 0;  // served requests answered kResourceExhausted
  uint64_t late_answers = 0;      // answers to requests already withdrawn, dropped
  uint64_t doorbells_rung = 0;
};

class AppSession final : public engine::EngineSink {
 public:
  // How long a closed session keeps driving its engine so the answers and
  // disconnects it sent on the application's behalf leave (a session that
  // never got an engine goes at once).
  static constexpr DurationNs kLinger = 200 * kNsPerMs;
  // Longest program name kept (escaped and cut between characters) and
  // longest endpoint address accepted from a hello.
  static constexpr size_t kMaxProgramBytes = 64;
  static constexpr size_t kMaxAddressBytes = 512;
  // Methods one application may serve at once (ServedCalls).
  static constexpr size_t kMaxServedMethods = ServedCalls::kMaxMethods;

  AppSession(SessionHost& host, uint64_t id, std::unique_ptr<shm::ControlConnection> control);
  ~AppSession() override;
  AppSession(const AppSession&) = delete;
  AppSession& operator=(const AppSession&) = delete;

  // Handles the application's kHello: opens its endpoint, creates its
  // region and doorbells, answers kWelcome with the fds. An error is also
  // sent to the application as a refusing kWelcome.
  Status Attach(const shm::HelloMsg& hello);

  // One pass: control messages (when `check_control`: reading the socket
  // costs a system call, so the daemon asks after a sleep and now and then),
  // up to commands_per_pass commands, the engine, completions out (ringing
  // the application if it sleeps).
  transport::PollResult Poll(TimeNs now, bool check_control);
  // Before the daemon sleeps: raises our "wake me" flag on the command ring;
  // false if commands arrived meanwhile (do not sleep).
  bool PrepareToSleep();
  TimeNs NextDeadline() const;
  void AppendFds(std::vector<int>* fds) const;

  // Starts closing (idempotent): `why` goes to the log and, if the socket
  // is still up, to the application as kFault.
  void Close(const Status& why);
  bool closing() const { return closing_; }
  // Why it closed (ok while open). kUnavailable: the application went;
  // anything else: wharfd gave up on it (a broken ring, garbage on the
  // control socket) and told it so with kFault.
  const Status& close_reason() const { return close_reason_; }
  // Closed and lingered long enough: the daemon may destroy it.
  bool finished(TimeNs now) const { return closing_ && now >= linger_until_ns_; }

  uint64_t id() const { return id_; }
  bool attached() const { return attached_; }
  const shm::PeerCredentials& peer() const { return control_->peer(); }
  const std::string& program() const { return program_; }
  const std::string& address() const { return address_; }
  uint64_t heap_bytes() const { return region_ ? region_->layout().heap_bytes : 0; }
  uint64_t receive_bytes_in_use() const;
  size_t inflight() const { return ops_.size() + served_.size(); }
  // Served requests it holds, awaiting its answer (part of inflight()).
  size_t requests_in_service() const { return served_.size(); }
  size_t connections() const { return ops_.connections(); }
  // What carries its traffic to each peer, where its transports say more
  // than the scheme (ucx://: UCX's lanes), as (peer, path) pairs.
  std::vector<std::pair<std::string, std::string>> Paths() const;
  // Whether an answer is on its way: a call, send or connect in flight on
  // the network, or a request the application is answering. wharfd keeps
  // polling longer while some session expects one (daemon.busy_spin).
  bool awaiting_answers() const {
    return !served_.empty() || (engine_ != nullptr && engine_->ops_awaiting_answer() > 0);
  }
  // Whether the application has no use for a CPU it may share with us: it
  // is not attached (yet or any more), or its completion ring's idle hint
  // says it spins waiting for us with nothing of its own to do. Untrusted:
  // it only decides how long wharfd keeps the CPU before yielding it.
  bool application_idle() const {
    return !attached_ || closing_ || outbox_->PeerIdle();
  }
  // Its counts, gathered from its parts.
  SessionCounters counters() const;
  // The round trips of the application's own calls and messages per peer
  // since the last take (engine::Engine::TakePeerRtts); none before Attach.
  void TakePeerRtts(
      TimeNs now,
      const std::function<void(std::string_view scheme, const engine::PeerRttDelta&)>& visit) {
    if (engine_ != nullptr) engine_->TakePeerRtts(now, visit);
  }
  // The engine's and transports' counters (empty before Attach).
  std::vector<std::pair<std::string, uint64_t>> EngineCounters() const;
  // Answers status requests arriving on its control socket (an error,
  // such as a rate limit, goes back as kFault and ends an unattached
  // connection).
  void set_status_provider(std::function<Result<std::string>()> provider) {
    status_provider_ = std::move(provider);
  }
  // Until it attaches: when it must have said hello (kNever: no limit).
  // Nothing it sends before its hello extends this.
  void set_hello_deadline(TimeNs deadline_ns) { hello_deadline_ns_ = deadline_ns; }

  // engine::EngineSink
  void OnComplete(uint64_t op_id, Status status, Buffer message, uint64_t value) override;
  void OnRequest(engine::IncomingCall call) override;
  // Requests go to the application's ring; no handler runs here.
  bool MayRunHandlersInline() const override { return false; }
  void OnCallCancelled(const engine::ServerCallRef& ref) override;

 private:
  // The session's own counts; its parts keep theirs (counters()).
  struct Counts {
    uint64_t commands = 0;
    uint64_t bad_commands = 0;  // a broken command ring
    uint64_t backpressure_passes = 0;
    uint64_t control_refused = 0;
    uint64_t requests_refused = 0;
    uint64_t doorbells_rung = 0;
  };

  void HandleControl();
  void AnswerStatusRequest();
  void TakeCommands();
  // Moves waiting entries into the completion ring; rings the application
  // if it sleeps. True if it published entries the application waits for
  // (not only kSendReleased).
  bool FlushCompletions();
  // The application's heap becomes (true) or stops being (false) the pool
  // its ucx:// transports lend regions from; stopping ends those regions.
  void LendFromHeap(bool lend);
  // What happened to the application's regions, as kRegionEvent entries.
  void ForwardRegionEvents();
  void RingApplication();
  void Teardown();

  // Constant after construction.
  SessionHost& host_;
  const Clock& clock_;
  const AppLimits limits_;
  const uint64_t id_;
  const std::unique_ptr<shm::ControlConnection> control_;

  // Lifecycle.
  std::string program_;  // from its hello, printable
  std::string address_;  // its endpoint's public address
  bool attached_ = false;  // its kWelcome went out
  bool closing_ = false;   // Close was called: for good
  Status close_reason_;    // see close_reason()
  TimeNs linger_until_ns_ = kNever;  // closing: when the daemon may destroy it
  TimeNs hello_deadline_ns_ = kNever;  // until attached (set_hello_deadline)
  std::function<Result<std::string>()> status_provider_;
  // control_->counters().extra_fds_closed when last looked at.
  uint64_t extra_fds_seen_ = 0;

  // The region and its parts, from Attach on (null before). The areas
  // before the outbox that borrows them. Shared: every Buffer lent over the
  // region keeps it mapped, and one may outlive the session.
  std::shared_ptr<shm::Region> region_;
  std::unique_ptr<shm::ValidatingConsumer> commands_;
  std::unique_ptr<ReceiveArea> receive_;
  std::unique_ptr<SendLoans> loans_;
  std::unique_ptr<CompletionOutbox> outbox_;

  OperationTable ops_;
  ServedCalls served_;
  PeerHandles peers_;

  // Declared so the engine goes before the transports it borrows.
  AppEndpoint transport_;
  std::vector<AppEndpoint> secondary_;
  std::unique_ptr<engine::Engine> engine_;
  // Borrows every part above and the engine; goes first.
  std::unique_ptr<CommandExecutor> executor_;

  std::vector<shm::Descriptor> batch_;  // scratch for the command ring
  bool sleep_armed_ = false;  // our "wake me" flag is up on the command ring
  uint32_t sleep_token_ = 0;  // numbers our sleeps (the flag's value)
  Counts counts_;
};

}  // namespace wharf::daemon
