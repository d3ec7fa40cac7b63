// daemon/app_session.h: AppSession, one attached application as wharfd sees
// it: its control connection and credentials, its sealed region (rings and
// heap) and doorbells, and the Engine that runs its endpoint on the daemon's
// shared sockets. It executes the commands the application writes, after
// validating each one (shm/validator.h; shm/commands.h says what they mean),
// and is its engine's sink: completions, requests and cancellations become
// completion-ring entries, payloads are copied into the application's
// receive area.
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
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"

#include "base/clock.h"
#include "daemon/daemon_config.h"
#include "engine/engine.h"
#include "engine/engine_sink.h"
#include "engine/uri.h"
#include "shm/attach_protocol.h"
#include "shm/control_socket.h"
#include "shm/heap_allocator.h"
#include "shm/region.h"
#include "shm/validator.h"
#include "transport/message_transport.h"

namespace wharf::daemon {

// An application's endpoint on one of the daemon's sockets: the transport
// there, and (wrapping it) the one the engine drives, which delivers to
// other endpoints of the same daemon in-process (engine/switched_transport.h).
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
  // (no copy by the session; session_receive.cc).
  uint64_t received_in_place = 0;
  uint64_t backpressure_passes = 0;  // passes its commands waited for room
  uint64_t control_refused = 0;   // control messages that closed it (garbage, fds)
  uint64_t requests_refused = 0;  // served requests answered kResourceExhausted
  uint64_t late_answers = 0;      // answers to requests already withdrawn, dropped
  uint64_t doorbells_rung = 0;
};

class AppSession final : public engine::EngineSink, public transport::ReceiveAllocator {
 public:
  // How long a closed session keeps driving its engine so the answers and
  // disconnects it sent on the application's behalf leave (a session that
  // never got an engine goes at once).
  static constexpr DurationNs kLinger = 200 * kNsPerMs;
  // Longest program name kept (escaped and cut between characters) and
  // longest endpoint address accepted from a hello.
  static constexpr size_t kMaxProgramBytes = 64;
  static constexpr size_t kMaxAddressBytes = 512;
  // Methods one application may serve at once: the engine keeps a table of
  // them, and every table fed by an application has a cap.
  static constexpr size_t kMaxServedMethods = 1024;

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
  size_t inflight() const { return live_ops_.size() + calls_.size(); }
  // Served requests it holds, awaiting its answer (part of inflight()).
  size_t requests_in_service() const { return calls_.size(); }
  size_t connections() const { return conns_.size(); }
  // Whether an answer is on its way: a call, send or connect in flight on
  // the network, or a request the application is answering. wharfd keeps
  // polling longer while some session expects one (daemon.busy_spin).
  bool awaiting_answers() const {
    return !calls_.empty() || (engine_ != nullptr && engine_->ops_awaiting_answer() > 0);
  }
  // Whether the application has no use for a CPU it may share with us: it
  // is not attached (yet or any more), or its completion ring's idle hint
  // says it spins waiting for us with nothing of its own to do. Untrusted:
  // it only decides how long wharfd keeps the CPU before yielding it.
  bool application_idle() const {
    return !attached_ || closing_ || completions_->PeerIdle();
  }
  const SessionCounters& counters() const { return counters_; }
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
  // A completion-ring entry waiting for room (ring or receive area).
  struct Pending {
    shm::Descriptor entry{};
    Buffer payload;  // handed over (placed) or copied into the receive area when pushed
  };
  // Lends a range of the application's heap as a Buffer and tells the
  // session (`on_release`, with the range's heap offset and size) when the
  // Buffer is done with it. Two: the send area lent to the engine
  // (zero-copy sends; NoteSendReleased) and the receive-area ranges homa
  // received messages into (placed receives, session_receive.cc;
  // ReleasePlaced). Holds the region, so the mapping outlives every Buffer
  // over it, even one the session outlives.
  class RegionOwner final : public BufferOwner {
   public:
    using OnRelease = void (AppSession::*)(uint64_t heap_offset, uint64_t bytes);
    RegionOwner(AppSession* session, std::shared_ptr<shm::Region> region, OnRelease on_release)
        : session_(session), region_(std::move(region)), on_release_(on_release) {}
    void Release(std::span<std::byte> whole) noexcept override;
    void Detach() { session_ = nullptr; }

   private:
    AppSession* session_;  // null once the session is gone
    std::shared_ptr<shm::Region> region_;
    OnRelease on_release_;
  };

  // transport::ReceiveAllocator (session_receive.cc): a range of the
  // receive area for a message homa is about to receive, while such ranges
  // not yet handed over take at most a quarter of the area.
  Buffer AllocateReceive(size_t bytes) override;
  // For FlushCompletions: hands a placed payload over to the application as
  // it lies (its range becomes the entry's); false if it is not placed.
  bool HandOverPlaced(Pending& p);
  void ReleasePlaced(uint64_t block_offset, uint64_t bytes);

  // session_commands.cc: one validated command.
  void Execute(const shm::Descriptor& d, TimeNs now);
  void ExecuteCall(const shm::Descriptor& d);
  void ExecuteRespond(const shm::Descriptor& d);
  void ExecuteReleaseBuffer(const shm::Descriptor& d);
  void ExecuteAddPeer(const shm::Descriptor& d);
  // Checks a command's cookie; on failure reports it (kFault) and returns false.
  bool StartOp(const shm::Descriptor& d);
  // Ends an operation StartOp began with a failure the session decided on
  // (the command named something this application does not have).
  void Refuse(uint64_t cookie, const Status& why);
  // Whether `handle` is one of this application's connections; if not, the
  // operation `d` (already started) is refused and false returned.
  bool OwnConnection(const shm::Descriptor& d);
  // The payload of a command as a Buffer over the send area (no copy); the
  // engine may prepend its frame in the 64 bytes before it.
  Buffer Payload(const shm::Descriptor& d);
  const engine::Uri* PeerHandle(uint64_t handle) const;
  void Fault(const shm::Descriptor& d, Status why);

  void HandleControl();
  void AnswerStatusRequest();
  void TakeCommands(TimeNs now);
  // Moves pending entries into the ring (allocating receive-area ranges);
  // rings the application if it sleeps. True if it published entries the
  // application waits for (not only kSendReleased).
  bool FlushCompletions();
  void Push(shm::Descriptor entry, Buffer payload = Buffer());
  void RingApplication();
  void Complete(uint64_t cookie, const Status& status, Buffer message = Buffer(),
                uint64_t value = 0);
  // The engine let go of a send-area range: its operation's cookie waits in
  // released_ for the operation's completion (kFlagSendReleased) or the
  // next FlushCompletions (kSendReleased entries, four cookies each).
  void NoteSendReleased(uint64_t heap_offset, uint64_t bytes);
  // Whether `cookie` waits in released_ (it leaves): looked for near the
  // front only, where a call's release is when its response completes it.
  bool TakeReleased(uint64_t cookie);
  void PushReleased();
  void Teardown();

  SessionHost& host_;
  const Clock& clock_;
  const AppLimits limits_;
  const uint64_t id_;
  std::unique_ptr<shm::ControlConnection> control_;
  std::string program_;
  std::string address_;
  bool attached_ = false;
  bool closing_ = false;
  Status close_reason_;
  TimeNs linger_until_ns_ = kNever;

  std::shared_ptr<shm::Region> region_;
  std::unique_ptr<shm::ValidatingConsumer> commands_;
  std::unique_ptr<shm::ValidatingProducer> completions_;
  std::optional<shm::HeapAllocator> receive_area_;
  std::shared_ptr<RegionOwner> send_owner_;
  std::shared_ptr<RegionOwner> receive_owner_;
  uint64_t placed_bytes_ = 0;  // receive-area bytes in placed Buffers not handed over
  bool handing_over_ = false;  // ReleasePlaced keeps the range (HandOverPlaced)

  // Declared so the engine goes before the transports it borrows.
  AppEndpoint transport_;
  std::vector<AppEndpoint> secondary_;
  std::unique_ptr<engine::Engine> engine_;

  // Operations in flight, by the application's cookie (= the engine op id).
  // The tables that change once per RPC are open addressing or recycle
  // their nodes (no malloc per RPC in the steady state).
  absl::flat_hash_set<uint64_t> live_ops_;
  // Which operations connect or accept (their value is a connection).
  std::unordered_set<uint64_t> opening_ops_;
  std::unordered_set<uint64_t> accept_ops_;  // of those, the accepts
  // Sends whose payload the engine still holds: heap offset -> cookie, in
  // an open-addressing map (a lookup and an erase per RPC); the same range
  // lent again while still lent (rare) goes to lent_again_.
  absl::flat_hash_map<uint64_t, uint64_t> lent_;
  std::unordered_multimap<uint64_t, uint64_t> lent_again_;
  // Cookies of released sends not yet told (0: told with a completion), in
  // release order; released_head_ is the first not yet told.
  std::vector<uint64_t> released_;
  size_t released_head_ = 0;
  std::unordered_set<uint64_t> conns_;
  // Methods it serves (kServe), capped at kMaxServedMethods.
  std::unordered_set<uint32_t> served_;
  // Served requests awaiting the application's answer.
  absl::flat_hash_map<uint64_t, engine::ServerCallRef> calls_;
  absl::flat_hash_map<engine::ServerCallRef, uint64_t, engine::ServerCallRefHash> call_handles_;
  uint64_t next_call_handle_ = 1;
  // The application's peer handles (kAddPeer), index = handle.
  std::vector<std::optional<engine::Uri>> peers_;
  // Peers already named to the application (kPeerName), looked up on every
  // request by the engine's PeerRef: a few words to hash, where the address
  // text was a string.
  absl::flat_hash_map<engine::PeerRef, uint64_t, engine::PeerRefHash> peer_names_;
  uint64_t next_peer_name_ = 1;

  std::deque<Pending> backlog_;
  std::vector<shm::Descriptor> batch_;  // scratch for ring I/O
  bool sleep_armed_ = false;  // our "wake me" flag is up on the command ring
  uint32_t sleep_token_ = 0;  // numbers our sleeps (the flag's value)
  uint32_t woke_token_ = 0;   // the application's sleep we last woke
  // control_->counters().extra_fds_closed when last looked at.
  uint64_t extra_fds_seen_ = 0;
  SessionCounters counters_;
  std::function<Result<std::string>()> status_provider_;
  TimeNs hello_deadline_ns_ = kNever;
};

}  // namespace wharf::daemon
