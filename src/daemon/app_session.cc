// AppSession: attach, the control socket, the per-pass work, the engine's
// sink and teardown. The commands themselves are the CommandExecutor's.
#include "daemon/app_session.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>

#include "base/log.h"
#include "base/text.h"
#include "shm/commands.h"
#include "wire/byte_order.h"

namespace wharf::daemon {

using shm::Descriptor;
using shm::Opcode;

AppSession::AppSession(SessionHost& host, uint64_t id,
                       std::unique_ptr<shm::ControlConnection> control)
    : host_(host),
      clock_(host.clock()),
      limits_(host.config().limits),
      id_(id),
      control_(std::move(control)) {}

AppSession::~AppSession() {
  // Nothing is placed in our area from now on; then the engine (it may
  // release lent and placed Buffers into the areas), then the rest. Buffers
  // that outlive the areas (handed to another application's engine in
  // process) tell nobody: each area detaches its owner as it goes.
  if (transport_.get() != nullptr) transport_.get()->SetReceiveAllocator(nullptr);
  for (AppEndpoint& s : secondary_) s.get()->SetReceiveAllocator(nullptr);
  LendFromHeap(false);
  executor_.reset();
  engine_.reset();
  secondary_.clear();
  transport_ = AppEndpoint();
}

Status AppSession::Attach(const shm::HelloMsg& hello) {
  auto refuse = [&](Status why) {
    host_.NoteRefused();
    shm::WelcomeMsg w{.status = why};
    (void)control_->Send(shm::EncodeWelcome(w));
    return why;
  };
  // Untrusted text bound for logs, terminals and JSON: the program name
  // (any bytes a file may be called) is shown escaped and cut between
  // characters; an address must be printable UTF-8 or the attach fails.
  program_ = PrintableText(hello.program, kMaxProgramBytes);
  if (Status text = CheckText(hello.address, "hello address", kMaxAddressBytes); !text.ok()) {
    return refuse(text);
  }
  if (Status admitted = host_.Admit(peer()); !admitted.ok()) return refuse(admitted);
  // The region: the application's geometry within our limits.
  shm::Geometry g = hello.geometry;
  auto ring = [&](uint32_t asked) {
    uint32_t n = std::clamp<uint32_t>(asked == 0 ? limits_.ring_entries : asked, 8,
                                      limits_.ring_entries);
    return std::bit_floor(n);
  };
  g.command_entries = ring(g.command_entries);
  g.completion_entries = ring(g.completion_entries);
  uint64_t heap = hello.geometry.heap_bytes == 0 ? limits_.heap_bytes
                                                  : std::min(hello.geometry.heap_bytes,
                                                             limits_.heap_bytes);
  g.heap_bytes = std::max<uint64_t>(heap / 8192 * 8192, 8192);
  Result<std::unique_ptr<shm::Region>> region =
      shm::Region::Create(g, "wharfd-app-" + std::to_string(id_));
  if (!region.ok()) return refuse(region.status().WithContext("creating the shared region"));
  region_ = std::shared_ptr<shm::Region>(std::move(*region));
  const shm::Layout& layout = region_->layout();
  // The first half is the application's send area; we allocate in the rest.
  const uint64_t send_area_bytes = layout.heap_bytes / 2;
  Result<std::unique_ptr<ReceiveArea>> area =
      ReceiveArea::Create(region_, send_area_bytes, layout.heap_bytes - send_area_bytes);
  if (!area.ok()) return refuse(area.status());
  receive_ = std::move(*area);
  loans_ = std::make_unique<SendLoans>(region_);
  shm::DescriptorRules rules{
      .heap_bytes = layout.heap_bytes,
      .max_message_bytes = host_.config().engine.limits.max_message_bytes,
      .opcodes = {Opcode::kNop, Opcode::kSend, Opcode::kRecv, Opcode::kCancel, Opcode::kCall,
                  Opcode::kConnect, Opcode::kListen, Opcode::kAccept, Opcode::kDisconnect,
                  Opcode::kReleaseConn, Opcode::kBarrier, Opcode::kServe, Opcode::kRespond,
                  Opcode::kReleaseBuffer, Opcode::kAddPeer, Opcode::kRegionAsk,
                  Opcode::kRegionRead, Opcode::kRegionWrite, Opcode::kRegionAtomic,
                  Opcode::kRegionRelease, Opcode::kRegionLend, Opcode::kRegionRevoke},
      .known_flags = shm::kKnownCommandFlags,
  };
  commands_ = std::make_unique<shm::ValidatingConsumer>(region_->command_ring(), "command ring",
                                                        rules);
  outbox_ = std::make_unique<CompletionOutbox>(region_->completion_ring(), *loans_, *receive_);

  // The endpoint, on the daemon's sockets.
  Result<AppEndpoint> endpoint = host_.OpenAppEndpoint(hello.address, &address_);
  if (!endpoint.ok()) return refuse(endpoint.status());
  transport_ = std::move(*endpoint);
  transport_.get()->SetReceiveAllocator(receive_.get());
  LendFromHeap(true);
  engine::TransportOpener opener =
      [this](std::string_view scheme) -> Result<transport::MessageTransport*> {
    WHARF_ASSIGN_OR_RETURN(AppEndpoint opened, host_.OpenSecondary(scheme));
    opened.get()->SetReceiveAllocator(receive_.get());
    if (transport::RemoteMemory* m = opened.get()->remote_memory()) m->UsePool(receive_.get());
    secondary_.push_back(std::move(opened));
    return secondary_.back().get();
  };
  engine_ = std::make_unique<engine::Engine>(transport_.get(), std::move(opener), clock_,
                                             host_.config().engine.limits, this);
  executor_ = std::make_unique<CommandExecutor>(
      limits_, SessionParts{.engine = *engine_,
                            .region = *region_,
                            .ops = ops_,
                            .served = served_,
                            .peers = peers_,
                            .loans = *loans_,
                            .area = *receive_,
                            .outbox = *outbox_});

  shm::WelcomeMsg w{.status = OkStatus(),
                    .app_id = id_,
                    .geometry = g,
                    .max_message_bytes = host_.config().engine.limits.max_message_bytes,
                    .address = address_};
  const int fds[] = {region_->fd()};
  WHARF_RETURN_IF_ERROR(control_->Send(shm::EncodeWelcome(w), fds));
  attached_ = true;
  receive_->StartPlacing();
  host_.NoteAttached();
  WHARF_LOG(kInfo, "wharfd: application {} attached: pid {} uid {} ({}), endpoint {}, heap {} B",
            id_, peer().pid, peer().uid, program_.empty() ? "?" : program_, address_,
            layout.heap_bytes);
  return OkStatus();
}

transport::PollResult AppSession::Poll(TimeNs now, bool check_control) {
  transport::PollResult r;
  r.next_deadline = kNever;
  // Before the hello, the control socket is all there is.
  if (!closing_ && (check_control || !attached_)) HandleControl();
  if (!attached_) {
    if (!closing_ && now >= hello_deadline_ns_) {
      Close(DeadlineExceededError("no hello within " +
                                  std::to_string(host_.config().hello_timeout_ns / kNsPerMs) +
                                  " ms of connecting (daemon.hello_timeout)"));
    }
    return r;
  }
  if (!closing_) {
    if (sleep_armed_) {
      // Its kWake messages, if any, were read by HandleControl.
      sleep_armed_ = false;
      commands_->SetWaiting(false);
    }
    const uint64_t before = counts_.commands;
    TakeCommands();
    r.work += static_cast<int>(counts_.commands - before);
  }
  if (engine_ != nullptr) {
    transport::PollResult e = engine_->Poll();
    r.work += e.work;
    r.next_deadline = e.next_deadline;
    r.now = e.now;
    ForwardRegionEvents();
  }
  if (!closing_) r.handed_off = FlushCompletions();
  return r;
}

bool AppSession::PrepareToSleep() {
  if (!attached_ || closing_) return true;
  // Backpressured: its commands wait until it reads its completions, which
  // NextDeadline looks at again soon; entries in its command ring are no
  // reason to stay awake (that would spin the daemon for a stuck client).
  if (outbox_->backlog() >= limits_.max_backlog) return true;
  sleep_armed_ = true;
  if (++sleep_token_ == 0) sleep_token_ = 1;
  commands_->SetWaitingToken(sleep_token_);
  return !commands_->HasEntries();
}

TimeNs AppSession::NextDeadline() const {
  TimeNs next = engine_ != nullptr ? engine_->NextDeadline() : kNever;
  if (!attached_ && !closing_) next = std::min(next, hello_deadline_ns_);
  // Entries waiting for ring or heap room: the application frees either
  // without ringing us, so look again soon.
  if (outbox_ != nullptr && !outbox_->empty() && !closing_) {
    next = std::min(next, clock_.NowNs() + kNsPerMs);
  }
  if (closing_) next = std::min(next, linger_until_ns_);
  return next;
}

void AppSession::AppendFds(std::vector<int>* fds) const {
  if (closing_) {
    if (engine_ != nullptr) engine_->AppendReadableFds(fds);
    return;
  }
  fds->push_back(control_->fd());
  if (engine_ != nullptr) engine_->AppendReadableFds(fds);
}

uint64_t AppSession::receive_bytes_in_use() const {
  return receive_ != nullptr ? receive_->bytes_in_use() : 0;
}

SessionCounters AppSession::counters() const {
  SessionCounters c{.commands = counts_.commands,
                    .bad_commands = counts_.bad_commands,
                    .backpressure_passes = counts_.backpressure_passes,
                    .control_refused = counts_.control_refused,
                    .requests_refused = counts_.requests_refused,
                    .doorbells_rung = counts_.doorbells_rung};
  if (executor_ != nullptr) {
    c.bad_commands += executor_->bad_commands();
    c.late_answers = executor_->late_answers();
  }
  if (outbox_ != nullptr) {
    c.completions = outbox_->completions();
    c.bad_commands += outbox_->payloads_refused();
  }
  if (loans_ != nullptr) c.bytes_sent = loans_->bytes_lent();
  if (receive_ != nullptr) {
    c.bytes_received = receive_->bytes_received();
    c.received_in_place = receive_->received_in_place();
  }
  return c;
}

std::vector<std::pair<std::string, uint64_t>> AppSession::EngineCounters() const {
  if (engine_ == nullptr) return {};
  return engine_->Counters();
}

void AppSession::HandleControl() {
  // Bounded: a peer cannot keep us here by sending many messages.
  for (int i = 0; i < 16 && !closing_; ++i) {
    Result<std::optional<shm::ControlMessage>> got = control_->Receive();
    if (!got.ok()) {
      if (got.status().code() == StatusCode::kUnavailable) {
        Close(UnavailableError("application closed its control socket"));
      } else {
        if (got.status().code() != StatusCode::kDeadlineExceeded) ++counts_.control_refused;
        Close(got.status().WithContext("control socket"));
      }
      return;
    }
    if (!got->has_value()) return;
    if (control_->counters().extra_fds_closed != extra_fds_seen_) {
      // Applications send no fds; the connection closed the ones that came.
      ++counts_.control_refused;
      Close(InvalidArgumentError("control socket: a message carried file descriptors (" +
                                 std::to_string(control_->counters().extra_fds_closed -
                                                extra_fds_seen_) +
                                 "); applications send none"));
      return;
    }
    Result<shm::AttachMessage> m = shm::DecodeAttach((*got)->bytes);
    if (!m.ok()) {
      ++counts_.control_refused;
      Close(m.status().WithContext("control socket"));
      return;
    }
    switch (m->type) {
      case shm::ControlType::kHello:
        if (attached_) {
          Close(InvalidArgumentError("second hello on an attached session"));
          return;
        }
        if (Status s = Attach(m->hello); !s.ok()) {
          WHARF_LOG(kWarn, "wharfd: attach of pid {} refused: {}", peer().pid, s.ToString());
          Close(s);
          return;
        }
        break;
      case shm::ControlType::kStatusRequest:
        AnswerStatusRequest();
        break;
      case shm::ControlType::kWake:
      case shm::ControlType::kStatsRequest:
        if (!attached_) {
          // Only a hello or a status request may come first: a connection
          // must not idle along on doorbells while it holds a slot.
          ++counts_.control_refused;
          Close(InvalidArgumentError("control socket: " +
                                     std::string(m->type == shm::ControlType::kWake ? "a wake-up"
                                                                                   : "a stats request") +
                                     " before hello"));
          return;
        }
        if (m->type == shm::ControlType::kWake) break;  // its doorbell: the commands are read below
        {
          const SessionCounters c = counters();
          std::vector<shm::Counter> stats;
          for (auto& [name, value] : EngineCounters()) stats.push_back({name, value});
          stats.push_back({"session.commands", c.commands});
          stats.push_back({"session.completions", c.completions});
          stats.push_back({"session.bad_commands", c.bad_commands});
          stats.push_back({"session.backpressure_passes", c.backpressure_passes});
          stats.push_back({"session.requests_refused", c.requests_refused});
          stats.push_back({"session.received_in_place", c.received_in_place});
          (void)control_->Send(shm::EncodeStatsReply(stats));
        }
        break;
      default:
        ++counts_.control_refused;
        Close(InvalidArgumentError("control socket: unexpected message type " +
                                   std::to_string(static_cast<int>(m->type))));
        return;
    }
  }
}

void AppSession::AnswerStatusRequest() {
  Result<std::string> json =
      status_provider_ ? status_provider_() : Result<std::string>(std::string("{}"));
  if (!json.ok()) {
    // Refused (the rate limit) or not made: said to a status query, which
    // then goes; an attached application's request is dropped, as a kFault
    // would end its session.
    if (!attached_) {
      (void)control_->Send(shm::EncodeFault(json.status()));
      Close(json.status());
    }
    return;
  }
  if (Status sent = control_->Send(shm::EncodeStatusReply(*json)); !sent.ok()) {
    WHARF_LOG(kWarn, "wharfd: status reply of {} bytes not sent: {}", json->size(),
              sent.ToString());
  }
}

void AppSession::TakeCommands() {
  if (outbox_->backlog() >= limits_.max_backlog) {
    // The application is not reading its completions: take nothing more
    // from it until it does. Nobody else waits on it.
    ++counts_.backpressure_passes;
    return;
  }
  batch_.resize(std::min<size_t>(limits_.commands_per_pass, commands_->capacity()));
  Result<size_t> n = commands_->TryPop(batch_);
  if (!n.ok()) {
    ++counts_.bad_commands;
    Close(n.status());
    return;
  }
  // What the commands of one pass send leaves together (one sendmmsg, one
  // GSO send per peer) when they are done.
  const bool batch = engine_ != nullptr && *n > 1;
  if (batch) engine_->BeginBatch();
  // One clock read for the calls' deadlines of the whole run, taken now:
  // the pass's `now` came before the sockets were read.
  if (engine_ != nullptr && *n > 0) engine_->SetHostNow(clock_.NowNs());
  for (size_t i = 0; i < *n && !closing_; ++i) {
    ++counts_.commands;
    executor_->Execute(batch_[i]);
  }
  if (engine_ != nullptr) engine_->ClearHostNow();
  if (batch && engine_ != nullptr) engine_->EndBatch();
}

bool AppSession::FlushCompletions() {
  if (outbox_ == nullptr) return false;
  Result<bool> urgent = outbox_->Flush();
  if (!urgent.ok()) {
    Close(urgent.status());
    return false;
  }
  if (*urgent) RingApplication();
  return *urgent;
}

void AppSession::RingApplication() {
  if (!outbox_->TakeDoorbell()) return;
  ++counts_.doorbells_rung;
  // Non-blocking; a full socket means it has been rung already.
  (void)control_->Send(shm::EncodeRequest(shm::ControlType::kWake));
}

// ------------------------------------------------------------ engine sink

void AppSession::OnComplete(uint64_t op_id, Status status, Buffer message, uint64_t value) {
  // A region read's bytes are in the application's send area already
  // (REGION_READ): nothing to deliver; dropping the loan tells it so.
  if (loans_ != nullptr && loans_->Owns(message)) message = Buffer();
  const OperationTable::Ended ended = ops_.Finish(op_id, status.ok(), value);
  if (ended == OperationTable::Ended::kUnknown) return;  // teardown's own, or already reported
  if (ended == OperationTable::Ended::kAccepted) {
    // The application learns who connected with the accept: the peer's
    // address is its payload, after a stream's method (shm/commands.h).
    const std::string peer = engine_->PeerOf(value).value_or("");
    if (const uint32_t method = engine_->StreamMethodOf(value).value_or(0); method != 0) {
      message = Buffer::Allocate(4 + peer.size());
      wire::StoreU32(message.data(), method);
      std::memcpy(message.data() + 4, peer.data(), peer.size());
    } else {
      message = Buffer::Copy(peer);
    }
  }
  if (closing_) return;
  outbox_->Complete(op_id, status, std::move(message), value);
}

void AppSession::OnRequest(engine::IncomingCall call) {
  if (closing_) {
    engine_->Respond(call.ref, UnavailableError("server application exited"));
    return;
  }
  if (outbox_->backlog() >= limits_.max_backlog || inflight() >= limits_.max_inflight) {
    ++counts_.requests_refused;
    engine_->Respond(call.ref, ResourceExhaustedError(
                                   "server application is not keeping up (wharfd "
                                   "limits.max_inflight / limits.max_backlog)"));
    return;
  }
  const uint64_t handle = served_.Add(call.ref);
  // The peer's address, named once per peer.
  const auto [peer_name, is_new] = peers_.NameOf(call.client);
  if (is_new) {
    Descriptor name{};
    name.opcode = static_cast<uint16_t>(Opcode::kPeerName);
    name.handle = peer_name;
    outbox_->Push(name, Buffer::Copy(call.peer));
  }
  Descriptor d{};
  d.opcode = static_cast<uint16_t>(Opcode::kRequest);
  d.handle = handle;
  d.status = call.method;
  d.aux[0] = call.deadline_ns == kNever ? 0 : static_cast<uint64_t>(call.deadline_ns);
  d.aux[1] = peer_name;
  const size_t bytes = call.request.size();
  if (!outbox_->Push(d, std::move(call.request))) {
    // It can never fit the application's receive area: refused to its client.
    served_.Take(handle);
    engine_->Respond(call.ref, outbox_->TooBig(bytes));
  }
}

void AppSession::OnCallCancelled(const engine::ServerCallRef& ref) {
  if (closing_) return;
  // The client withdrew the call (or died): we forget it now, so it no
  // longer counts against limits.max_inflight, and the application's answer,
  // if one still comes, is dropped (CommandExecutor, kRespond). Answering
  // the engine at once frees what the transport holds for it (a remote
  // client's homa RPC stays in service until answered); nobody reads the
  // answer.
  const engine::ServerCallRef withdrawn = ref;
  uint64_t handle = 0;
  if (!served_.Forget(withdrawn, &handle)) return;
  engine_->Respond(withdrawn, CancelledError("the client withdrew the call"));
  Descriptor d{};
  d.opcode = static_cast<uint16_t>(Opcode::kCallCancelled);
  d.handle = handle;
  outbox_->Push(d);
}

// ---------------------------------------------------------------- closing

void AppSession::Close(const Status& why) {
  if (closing_) return;
  closing_ = true;
  close_reason_ = why.ok() ? UnknownError("closed") : why;
  // Only an engine has answers to let leave; a session without one (a
  // status query, a refused attach) is freed on the next pass, so those
  // do not hold slots of the daemon's accept limit or fds for kLinger.
  linger_until_ns_ = clock_.NowNs() + (engine_ != nullptr ? kLinger : 0);
  // Nothing more is placed in its area, and sends released from now on are
  // not told.
  if (receive_ != nullptr) receive_->StopPlacing();
  if (loans_ != nullptr) loans_->StopTelling();
  if (attached_) {
    WHARF_LOG(kInfo, "wharfd: application {} (pid {}) detached: {}", id_, peer().pid,
              why.ToString());
    // Tell it why, if it is still there to hear (a broken ring, a refusal).
    if (why.code() != StatusCode::kUnavailable) (void)control_->Send(shm::EncodeFault(why));
  }
  Teardown();
}

void AppSession::Teardown() {
  if (outbox_ != nullptr) outbox_->Clear();
  if (engine_ == nullptr) return;
  // Its regions end now (their holders told), not when the session goes.
  LendFromHeap(false);
  // Its clients hear now rather than at their deadline.
  for (const engine::ServerCallRef& ref : served_.TakeAll()) {
    engine_->Respond(ref, UnavailableError("server application exited"));
  }
  // Its calls are withdrawn (their servers are told) and its operations end.
  for (uint64_t op : ops_.Operations()) engine_->Cancel(op);
  ops_.ClearOperations();
  // Its connections' peers are told. The ids only need to avoid the
  // application's, which are all gone now.
  uint64_t op = 1;
  for (uint64_t conn : ops_.Connections()) {
    ops_.Start(op);
    engine_->Disconnect(op++, conn);
  }
  ops_.ClearConnections();
}

void AppSession::LendFromHeap(bool lend) {
  auto use = [&](const AppEndpoint& e) {
    if (e.get() == nullptr) return;
    if (transport::RemoteMemory* m = e.get()->remote_memory()) {
      m->UsePool(lend ? receive_.get() : nullptr);
    }
  };
  use(transport_);
  for (const AppEndpoint& e : secondary_) use(e);
}

void AppSession::ForwardRegionEvents() {
  transport::RegionEvent e;
  while (engine_->PopRegionEvent(&e)) {
    if (closing_) continue;
    Descriptor d{};
    d.opcode = static_cast<uint16_t>(Opcode::kRegionEvent);
    d.status = static_cast<uint32_t>(e.kind);
    d.handle = e.region;
    switch (e.kind) {
      case transport::RegionEvent::Kind::kImmediate:
        d.cookie = e.value;
        d.aux[0] = e.offset;
        d.aux[1] = e.length;
        // The region lies in the receive area (LendFromHeap): the entry
        // names it in place, with no payload to deliver.
        if (receive_->HoldsRegion(e.bytes)) {
          d.heap_offset = receive_->HeapOffsetOf(e.bytes);
          d.length = e.bytes.size();
        }
        break;
      case transport::RegionEvent::Kind::kLent: {
        const TimeNs now = clock_.NowNs();
        d.aux[0] = e.held.size;
        d.aux[1] = e.held.access;
        d.aux[2] = e.held.expires_ns > now
                       ? static_cast<uint64_t>((e.held.expires_ns - now) / kNsPerMs)
                       : 0;
        break;
      }
      default:
        break;
    }
    outbox_->Push(d);
  }
}

std::vector<std::pair<std::string, std::string>> AppSession::Paths() const {
  std::vector<std::pair<std::string, std::string>> paths;
  auto add = [&paths](const AppEndpoint& e) {
    // The inner transport is the one on the network (outer only switches).
    const transport::MessageTransport* t = e.inner ? e.inner.get() : e.get();
    if (t == nullptr) return;
    for (auto& p : t->Paths()) paths.push_back(std::move(p));
  };
  add(transport_);
  for (const AppEndpoint& e : secondary_) add(e);
  return paths;
}

}  // namespace wharf::daemon
