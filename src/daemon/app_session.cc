// AppSession: attach, the per-pass work, the engine's sink, completions out
// and teardown. The commands themselves are in session_commands.cc.
#include "daemon/app_session.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "base/log.h"
#include "base/text.h"
#include "shm/commands.h"

namespace wharf::daemon {

using shm::Descriptor;
using shm::Opcode;

void AppSession::RegionOwner::Release(std::span<std::byte> whole) noexcept {
  if (session_ == nullptr) return;
  (session_->*on_release_)(static_cast<uint64_t>(whole.data() - region_->heap().data()),
                           whole.size());
}

AppSession::AppSession(SessionHost& host, uint64_t id,
                       std::unique_ptr<shm::ControlConnection> control)
    : host_(host),
      clock_(host.clock()),
      limits_(host.config().limits),
      id_(id),
      control_(std::move(control)) {}

AppSession::~AppSession() {
  // Nothing is placed in our area from now on; then the engine (it may
  // release lent and placed Buffers into us), then the rest.
  if (transport_.get() != nullptr) transport_.get()->SetReceiveAllocator(nullptr);
  for (AppEndpoint& s : secondary_) s.get()->SetReceiveAllocator(nullptr);
  engine_.reset();
  secondary_.clear();
  transport_ = AppEndpoint();
  if (send_owner_ != nullptr) send_owner_->Detach();
  if (receive_owner_ != nullptr) receive_owner_->Detach();
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
  Result<shm::HeapAllocator> area =
      shm::HeapAllocator::Create(send_area_bytes, layout.heap_bytes - send_area_bytes);
  if (!area.ok()) return refuse(area.status());
  receive_area_.emplace(std::move(*area));
  shm::DescriptorRules rules{
      .heap_bytes = layout.heap_bytes,
      .max_message_bytes = host_.config().engine.limits.max_message_bytes,
      .opcodes = {Opcode::kNop, Opcode::kSend, Opcode::kRecv, Opcode::kCancel, Opcode::kCall,
                  Opcode::kConnect, Opcode::kListen, Opcode::kAccept, Opcode::kDisconnect,
                  Opcode::kReleaseConn, Opcode::kBarrier, Opcode::kServe, Opcode::kRespond,
                  Opcode::kReleaseBuffer, Opcode::kAddPeer},
      .known_flags = shm::kKnownCommandFlags,
  };
  commands_ = std::make_unique<shm::ValidatingConsumer>(region_->command_ring(), "command ring",
                                                        rules);
  completions_ =
      std::make_unique<shm::ValidatingProducer>(region_->completion_ring(), "completion ring");
  send_owner_ = std::make_shared<RegionOwner>(this, region_, &AppSession::NoteSendReleased);
  receive_owner_ = std::make_shared<RegionOwner>(this, region_, &AppSession::ReleasePlaced);

  // The endpoint, on the daemon's sockets.
  Result<AppEndpoint> endpoint = host_.OpenAppEndpoint(hello.address, &address_);
  if (!endpoint.ok()) return refuse(endpoint.status());
  transport_ = std::move(*endpoint);
  transport_.get()->SetReceiveAllocator(this);
  engine::TransportOpener opener =
      [this](std::string_view scheme) -> Result<transport::MessageTransport*> {
    WHARF_ASSIGN_OR_RETURN(AppEndpoint opened, host_.OpenSecondary(scheme));
    opened.get()->SetReceiveAllocator(this);
    secondary_.push_back(std::move(opened));
    return secondary_.back().get();
  };
  engine_ = std::make_unique<engine::Engine>(transport_.get(), std::move(opener), clock_,
                                             host_.config().engine.limits, this);

  shm::WelcomeMsg w{.status = OkStatus(),
                    .app_id = id_,
                    .geometry = g,
                    .max_message_bytes = host_.config().engine.limits.max_message_bytes,
                    .address = address_};
  const int fds[] = {region_->fd()};
  WHARF_RETURN_IF_ERROR(control_->Send(shm::EncodeWelcome(w), fds));
  attached_ = true;
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
    const uint64_t before = counters_.commands;
    TakeCommands(now);
    r.work += static_cast<int>(counters_.commands - before);
  }
  if (engine_ != nullptr) {
    transport::PollResult e = engine_->Poll();
    r.work += e.work;
    r.next_deadline = e.next_deadline;
    r.now = e.now;
  }
  if (!closing_) r.handed_off = FlushCompletions();
  return r;
}

bool AppSession::PrepareToSleep() {
  if (!attached_ || closing_) return true;
  // Backpressured: its commands wait until it reads its completions, which
  // NextDeadline looks at again soon; entries in its command ring are no
  // reason to stay awake (that would spin the daemon for a stuck client).
  if (backlog_.size() >= limits_.max_backlog) return true;
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
  if (!backlog_.empty() && !closing_) next = std::min(next, clock_.NowNs() + kNsPerMs);
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
  return receive_area_ ? receive_area_->bytes_in_use() : 0;
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
        if (got.status().code() != StatusCode::kDeadlineExceeded) ++counters_.control_refused;
        Close(got.status().WithContext("control socket"));
      }
      return;
    }
    if (!got->has_value()) return;
    if (control_->counters().extra_fds_closed != extra_fds_seen_) {
      // Applications send no fds; the connection closed the ones that came.
      ++counters_.control_refused;
      Close(InvalidArgumentError("control socket: a message carried file descriptors (" +
                                 std::to_string(control_->counters().extra_fds_closed -
                                                extra_fds_seen_) +
                                 "); applications send none"));
      return;
    }
    Result<shm::AttachMessage> m = shm::DecodeAttach((*got)->bytes);
    if (!m.ok()) {
      ++counters_.control_refused;
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
          ++counters_.control_refused;
          Close(InvalidArgumentError("control socket: " +
                                     std::string(m->type == shm::ControlType::kWake ? "a wake-up"
                                                                                   : "a stats request") +
                                     " before hello"));
          return;
        }
        if (m->type == shm::ControlType::kWake) break;  // its doorbell: the commands are read below
        {
          std::vector<shm::Counter> stats;
          for (auto& [name, value] : EngineCounters()) stats.push_back({name, value});
          stats.push_back({"session.commands", counters_.commands});
          stats.push_back({"session.completions", counters_.completions});
          stats.push_back({"session.bad_commands", counters_.bad_commands});
          stats.push_back({"session.backpressure_passes", counters_.backpressure_passes});
          stats.push_back({"session.requests_refused", counters_.requests_refused});
          stats.push_back({"session.received_in_place", counters_.received_in_place});
          (void)control_->Send(shm::EncodeStatsReply(stats));
        }
        break;
      default:
        ++counters_.control_refused;
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

void AppSession::TakeCommands(TimeNs now) {
  if (backlog_.size() >= limits_.max_backlog) {
    // The application is not reading its completions: take nothing more
    // from it until it does. Nobody else waits on it.
    ++counters_.backpressure_passes;
    return;
  }
  batch_.resize(std::min<size_t>(limits_.commands_per_pass, commands_->capacity()));
  Result<size_t> n = commands_->TryPop(batch_);
  if (!n.ok()) {
    ++counters_.bad_commands;
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
    ++counters_.commands;
    Execute(batch_[i], now);
  }
  if (engine_ != nullptr) engine_->ClearHostNow();
  if (batch && engine_ != nullptr) engine_->EndBatch();
}

void AppSession::Push(Descriptor entry, Buffer payload) {
  // A payload that can never fit the receive area would wait there for
  // good: the operation fails instead, and a request is refused to its
  // client.
  if (receive_area_ && payload.size() > receive_area_->capacity()) {
    const Status too_big = ResourceExhaustedError(
        "a message of " + std::to_string(payload.size()) +
        " bytes does not fit the application's receive area (" +
        std::to_string(receive_area_->capacity()) + " bytes: wharfd limits.heap_bytes / 2)");
    ++counters_.bad_commands;
    if (entry.opcode == static_cast<uint16_t>(Opcode::kRequest)) {
      auto it = calls_.find(entry.handle);
      if (it != calls_.end()) {
        const engine::ServerCallRef ref = it->second;
        call_handles_.erase(ref);
        calls_.erase(it);
        engine_->Respond(ref, too_big);
      }
      return;
    }
    if (entry.opcode == static_cast<uint16_t>(Opcode::kCompletion)) {
      entry.status = static_cast<uint32_t>(too_big.code());
      entry.handle = 0;
      payload = Buffer::Copy(std::string_view(too_big.message()).substr(0, shm::kMaxErrorText));
    }
  }
  backlog_.push_back(Pending{entry, std::move(payload)});
}

void AppSession::Complete(uint64_t cookie, const Status& status, Buffer message, uint64_t value) {
  Descriptor d{};
  d.opcode = static_cast<uint16_t>(Opcode::kCompletion);
  d.status = static_cast<uint32_t>(status.code());
  d.cookie = cookie;
  d.handle = value;
  if (released_head_ < released_.size() && TakeReleased(cookie)) d.flags = shm::kFlagSendReleased;
  if (!status.ok()) {
    std::string_view text = status.message();
    message = Buffer::Copy(text.substr(0, shm::kMaxErrorText));
  }
  Push(d, std::move(message));
}

bool AppSession::FlushCompletions() {
  if (completions_ == nullptr) return false;
  if (released_head_ < released_.size()) PushReleased();
  if (backlog_.empty()) return false;
  // Give each entry at the front its receive-area range, in order, until
  // the heap or the ring is full.
  size_t ready = 0;
  const size_t room = completions_->capacity();
  for (Pending& p : backlog_) {
    if (ready == room) break;
    if (!p.payload.empty() && !HandOverPlaced(p)) {
      Result<uint64_t> at = receive_area_->Allocate(p.payload.size());
      if (!at.ok()) break;  // full: the application must release buffers first
      std::span<std::byte> dst = *region_->HeapRange(*at, p.payload.size());
      std::memcpy(dst.data(), p.payload.data(), p.payload.size());
      counters_.bytes_received += p.payload.size();
      p.entry.heap_offset = *at;
      p.entry.length = p.payload.size();
      p.payload = Buffer();
    }
    ++ready;
  }
  if (ready == 0) return false;
  batch_.resize(ready);
  for (size_t i = 0; i < ready; ++i) batch_[i] = backlog_[i].entry;
  Result<size_t> pushed = completions_->TryPush(std::span(batch_.data(), ready));
  if (!pushed.ok()) {
    Close(pushed.status());
    return false;
  }
  // Nobody waits for a kSendReleased alone (the application reuses the
  // range when it next looks): only other entries are worth a wake-up.
  bool urgent = false;
  for (size_t i = 0; i < *pushed; ++i) {
    urgent = urgent || batch_[i].opcode != static_cast<uint16_t>(Opcode::kSendReleased);
  }
  backlog_.erase(backlog_.begin(), backlog_.begin() + static_cast<ptrdiff_t>(*pushed));
  counters_.completions += *pushed;
  if (urgent) RingApplication();
  return urgent;
}

void AppSession::RingApplication() {
  // Once per sleep of the application: entries published while it is
  // still waking up need no second wake-up.
  const uint32_t token = completions_->PeerWaitingToken();
  if (token != 0 && token != woke_token_) {
    woke_token_ = token;
    ++counters_.doorbells_rung;
    // Non-blocking; a full socket means it has been rung already.
    (void)control_->Send(shm::EncodeRequest(shm::ControlType::kWake));
  }
}

void AppSession::NoteSendReleased(uint64_t heap_offset, uint64_t /*bytes*/) {
  auto it = lent_.find(heap_offset);
  if (it == lent_.end()) return;
  const uint64_t cookie = it->second;
  auto again = lent_again_.empty() ? lent_again_.end() : lent_again_.find(heap_offset);
  if (again != lent_again_.end()) {
    it->second = again->second;  // the range is still lent to that one
    lent_again_.erase(again);
  } else {
    lent_.erase(it);
  }
  if (cookie == 0 || closing_) return;
  released_.push_back(cookie);
}

bool AppSession::TakeReleased(uint64_t cookie) {
  // Bounded: a completion without a release (a receive, a failed call whose
  // payload the engine still holds) looks at a few entries only.
  constexpr size_t kLookAhead = 8;
  const size_t end = std::min(released_.size(), released_head_ + kLookAhead);
  for (size_t i = released_head_; i < end; ++i) {
    if (released_[i] != cookie) continue;
    released_[i] = 0;
    while (released_head_ < released_.size() && released_[released_head_] == 0) ++released_head_;
    if (released_head_ == released_.size()) {
      released_.clear();
      released_head_ = 0;
    }
    return true;
  }
  return false;
}

void AppSession::PushReleased() {
  Descriptor d{};
  size_t in_entry = 0;
  for (size_t i = released_head_; i < released_.size(); ++i) {
    if (released_[i] == 0) continue;
    if (in_entry == 0) {
      d = Descriptor{};
      d.opcode = static_cast<uint16_t>(Opcode::kSendReleased);
      d.cookie = released_[i];
    } else {
      d.aux[in_entry - 1] = released_[i];
    }
    if (++in_entry == 4) {
      Push(d);
      in_entry = 0;
    }
  }
  if (in_entry > 0) Push(d);
  released_.clear();
  released_head_ = 0;
}

// ------------------------------------------------------------ engine sink

void AppSession::OnComplete(uint64_t op_id, Status status, Buffer message, uint64_t value) {
  auto live = live_ops_.find(op_id);
  if (live == live_ops_.end()) return;  // teardown's own, or already reported
  live_ops_.erase(live);
  // Connects and accepts are rare: a call's completion looks at neither set
  // (each lookup there is a division by a prime).
  if (!opening_ops_.empty() && opening_ops_.erase(op_id) > 0 && status.ok()) conns_.insert(value);
  if (!accept_ops_.empty() && accept_ops_.erase(op_id) > 0 && status.ok()) {
    // The application learns who connected with the accept: the peer's
    // address is its payload.
    message = Buffer::Copy(engine_->PeerOf(value).value_or(""));
  }
  if (closing_) return;
  Complete(op_id, status, std::move(message), value);
}

void AppSession::OnRequest(engine::IncomingCall call) {
  if (closing_) {
    engine_->Respond(call.ref, UnavailableError("server application exited"));
    return;
  }
  if (backlog_.size() >= limits_.max_backlog || inflight() >= limits_.max_inflight) {
    ++counters_.requests_refused;
    engine_->Respond(call.ref, ResourceExhaustedError(
                                   "server application is not keeping up (wharfd "
                                   "limits.max_inflight / limits.max_backlog)"));
    return;
  }
  const uint64_t handle = next_call_handle_++;
  calls_.emplace(handle, call.ref);
  call_handles_.emplace(call.ref, handle);
  // The peer's address, named once per peer.
  auto it = peer_names_.find(call.client);
  if (it == peer_names_.end()) {
    // Start over when full: ids are never reused, so the application's older
    // names stay valid until it evicts them.
    if (peer_names_.size() >= shm::kMaxPeerNames) peer_names_.clear();
    it = peer_names_.emplace(call.client, next_peer_name_++).first;
    Descriptor name{};
    name.opcode = static_cast<uint16_t>(Opcode::kPeerName);
    name.handle = it->second;
    Push(name, Buffer::Copy(call.peer));
  }
  Descriptor d{};
  d.opcode = static_cast<uint16_t>(Opcode::kRequest);
  d.handle = handle;
  d.status = call.method;
  d.aux[0] = call.deadline_ns == kNever ? 0 : static_cast<uint64_t>(call.deadline_ns);
  d.aux[1] = it->second;
  Push(d, std::move(call.request));
}

void AppSession::OnCallCancelled(const engine::ServerCallRef& ref) {
  auto it = call_handles_.find(ref);
  if (it == call_handles_.end() || closing_) return;
  // The client withdrew the call (or died): we forget it now, so it no
  // longer counts against limits.max_inflight, and the application's answer,
  // if one still comes, is dropped (ExecuteRespond). Answering the engine
  // at once frees what the transport holds for it (a remote client's homa
  // RPC stays in service until answered); nobody reads the answer.
  const engine::ServerCallRef withdrawn = ref;
  const uint64_t handle = it->second;
  calls_.erase(handle);
  call_handles_.erase(it);
  engine_->Respond(withdrawn, CancelledError("the client withdrew the call"));
  Descriptor d{};
  d.opcode = static_cast<uint16_t>(Opcode::kCallCancelled);
  d.handle = handle;
  Push(d);
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
  if (attached_) {
    WHARF_LOG(kInfo, "wharfd: application {} (pid {}) detached: {}", id_, peer().pid,
              why.ToString());
    // Tell it why, if it is still there to hear (a broken ring, a refusal).
    if (why.code() != StatusCode::kUnavailable) (void)control_->Send(shm::EncodeFault(why));
  }
  Teardown();
}

void AppSession::Teardown() {
  backlog_.clear();
  if (engine_ == nullptr) return;
  // Its clients hear now rather than at their deadline.
  for (auto& [handle, ref] : calls_) {
    engine_->Respond(ref, UnavailableError("server application exited"));
  }
  calls_.clear();
  call_handles_.clear();
  // Its calls are withdrawn (their servers are told) and its operations end.
  std::vector<uint64_t> ops(live_ops_.begin(), live_ops_.end());
  for (uint64_t op : ops) engine_->Cancel(op);
  live_ops_.clear();
  // Its connections' peers are told. The ids only need to avoid the
  // application's, which are all gone now.
  uint64_t op = 1;
  for (uint64_t conn : conns_) {
    live_ops_.insert(op);
    engine_->Disconnect(op++, conn);
  }
  conns_.clear();
}

}  // namespace wharf::daemon
