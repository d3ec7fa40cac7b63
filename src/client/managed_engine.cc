// ManagedEngine: operations as ring commands, completions back into the
// sink, and re-attaching when wharfd comes back.
#include "client/managed_engine.h"

#include <cstring>

#include "base/log.h"
#include "shm/commands.h"
#include "wire/byte_order.h"

namespace wharf::internal {

using shm::Descriptor;
using shm::Opcode;

namespace {

Descriptor Command(Opcode op, uint64_t cookie = 0, uint64_t handle = 0) {
  Descriptor d{};
  d.opcode = static_cast<uint16_t>(op);
  d.cookie = cookie;
  d.handle = handle;
  return d;
}

uint64_t RawDeadline(TimeNs deadline_ns) {
  return deadline_ns == kNever || deadline_ns <= 0 ? 0 : static_cast<uint64_t>(deadline_ns);
}

// Peer names wharfd sent that we keep (ids are never reused by wharfd, and
// it names again any it forgot).
constexpr size_t kMaxPeerNamesKept = 2 * shm::kMaxPeerNames;

}  // namespace

Result<std::unique_ptr<ManagedEngine>> ManagedEngine::Attach(const ManagedOptions& options,
                                                             const Clock& clock,
                                                             engine::EngineSink* sink) {
  std::unique_ptr<ManagedEngine> e(new ManagedEngine(options, clock, sink));
  WHARF_ASSIGN_OR_RETURN(std::unique_ptr<DaemonLink> link,
                         DaemonLink::Attach(options.socket_path, options.address,
                                            options.geometry, options.attach_timeout));
  e->address_ = link->welcome().address;
  e->Adopt(std::move(link));
  return e;
}

ManagedEngine::~ManagedEngine() {
  // Payloads wharfd still reads stay valid: the region outlives them.
  lent_.clear();
}

void ManagedEngine::Adopt(std::unique_ptr<DaemonLink> link) {
  link_ = std::move(link);
  ++generation_;
  broken_.reset();
  outbox_.clear();
  peer_handles_.clear();
  peer_names_.clear();
  peer_name_order_.clear();
  conn_peers_.clear();
  conn_stream_methods_.clear();
  waiting_flag_ = false;
  woke_token_ = 0;
  if (keep_awake_) link_->completions().SetWaitingToken(NextSleepToken());
  // What the application set up before survives a daemon restart.
  for (uint32_t method : served_) {
    Descriptor d = Command(Opcode::kServe);
    d.status = method;
    d.flags = shm::kFlagServed;
    Push(d);
  }
  for (uint32_t method : served_streams_) {
    Descriptor d = Command(Opcode::kServe);
    d.status = method;
    d.flags = shm::kFlagServed | shm::kFlagStream;
    Push(d);
  }
  if (listening_) Push(Command(Opcode::kListen));
  FlushCommands();
}

void ManagedEngine::Broken(const Status& why) {
  if (broken_.has_value()) return;
  broken_ = why;
  next_attach_ns_ = clock_.NowNs() + kReattachInterval;
  if (why.code() != StatusCode::kCancelled) {
    WHARF_LOG(kWarn, "wharf: endpoint {} lost wharfd: {}", address_, why.ToString());
  }
  std::vector<uint64_t> ops(pending_.begin(), pending_.end());
  pending_.clear();
  opening_.clear();
  accepting_.clear();
  accepting_streams_.clear();
  regions_.Clear();
  for (uint64_t op : ops) sink_->OnComplete(op, why, Buffer(), 0);
  // wharfd reads none of these any more.
  lent_.clear();
  if (link_ != nullptr) link_->receive_area()->Detach();
}

bool ManagedEngine::Usable(uint64_t op_id) {
  if (broken_.has_value() && clock_.NowNs() >= next_attach_ns_) {
    next_attach_ns_ = clock_.NowNs() + kReattachInterval;
    Result<std::unique_ptr<DaemonLink>> link = DaemonLink::Attach(
        options_.socket_path, address_, options_.geometry, options_.attach_timeout);
    if (link.ok()) {
      ++counts_.reattaches;
      WHARF_LOG(kInfo, "wharf: endpoint {} attached to wharfd again", address_);
      Adopt(std::move(*link));
    }
  }
  if (!broken_.has_value()) return true;
  if (op_id != 0) sink_->OnComplete(op_id, *broken_, Buffer(), 0);
  return false;
}

void ManagedEngine::Push(const Descriptor& d) {
  ++counts_.commands;
  // In a batch the command waits in the outbox, so that wharfd sees the
  // batch's commands together and is rung once, at EndBatch.
  if (batch_depth_ == 0 && outbox_.empty() && link_->commands().TryPush(d)) return;
  if (batch_depth_ > 0) ++counts_.batched_commands;
  outbox_.push_back(d);
}

void ManagedEngine::BeginBatch() { ++batch_depth_; }

void ManagedEngine::EndBatch() {
  if (batch_depth_ == 0) return;  // unmatched: ignored (engine_api.h)
  if (--batch_depth_ == 0) FlushCommands();
}

void ManagedEngine::FlushUnlessBatching(bool urgent) {
  if (batch_depth_ == 0) FlushCommands(urgent);
}

void ManagedEngine::FlushCommands(bool urgent) {
  if (broken_.has_value() || link_ == nullptr) return;
  while (!outbox_.empty()) {
    if (!link_->commands().TryPush(outbox_.front())) break;
    outbox_.pop_front();
  }
  if (!urgent) return;
  // Once per sleep of wharfd's (it may take a while to wake and see us).
  const uint32_t token = link_->commands().PeerWaitingToken();
  if (token != 0 && token != woke_token_) {
    woke_token_ = token;
    ++counts_.doorbells_rung;
    link_->WakeDaemon();
  }
}

Status ManagedEngine::Lend(uint64_t tag, Buffer payload, Descriptor* d) {
  if (payload.empty()) return OkStatus();
  WHARF_ASSIGN_OR_RETURN(Buffer placed, PlaceInSendArea(std::move(payload), d));
  lent_[tag] = std::move(placed);
  return OkStatus();
}

Result<Buffer> ManagedEngine::PlaceInSendArea(Buffer payload, Descriptor* d) {
  // wharfd takes a longer descriptor for a hostile application's and ends
  // the session: an honest oversized message must fail here, alone.
  const uint64_t max = link_->welcome().max_message_bytes;
  if (payload.size() > max) {
    return InvalidArgumentError("a message of " + std::to_string(payload.size()) +
                                " bytes exceeds wharfd's homa.max_message_bytes (" +
                                std::to_string(max) + ")");
  }
  const std::shared_ptr<SendArea>& area = link_->send_area();
  std::optional<std::pair<uint64_t, uint64_t>> range = area->RangeOf(payload);
  if (!range.has_value()) {
    // Not in the shared heap: one copy, into it.
    std::optional<Buffer> copy = area->Allocate(payload.size());
    if (!copy.has_value()) {
      return ResourceExhaustedError(
          "the shared heap's send area is full (wharfd limits.heap_bytes; release or wait for "
          "sends)");
    }
    std::memcpy(copy->data(), payload.data(), payload.size());
    ++counts_.copied_sends;
    payload = std::move(*copy);
    range = area->RangeOf(payload);
  }
  d->heap_offset = range->first;
  d->length = range->second;
  return payload;
}

void ManagedEngine::StartOp(uint64_t op_id, Descriptor d, Buffer payload) {
  if (!Usable(op_id)) return;
  if (Status lent = Lend(op_id, std::move(payload), &d); !lent.ok()) {
    sink_->OnComplete(op_id, std::move(lent), Buffer(), 0);
    return;
  }
  pending_.insert(op_id);
  Push(d);
  FlushUnlessBatching();
}

uint64_t ManagedEngine::PeerHandle(const engine::Uri& uri) {
  const engine::PackedUri packed = engine::PackUri(uri);
  auto it = peer_handles_.find(packed);
  if (it != peer_handles_.end()) return it->second;
  if (peer_handles_.size() >= shm::kMaxPeerHandles) peer_handles_.clear();  // wharfd overwrites
  const uint64_t handle = peer_handles_.size();
  Descriptor d = Command(Opcode::kAddPeer, 0, handle);
  std::memcpy(d.aux, packed.words, sizeof packed.words);
  Push(d);
  peer_handles_.emplace(packed, handle);
  return handle;
}

// ------------------------------------------------------------- operations

void ManagedEngine::Connect(uint64_t op_id, const engine::Uri& peer, bool ordered,
                            uint32_t stream_method, TimeNs deadline_ns) {
  if (!Usable(op_id)) return;
  Descriptor d = Command(Opcode::kConnect, op_id, PeerHandle(peer));
  d.flags = ordered || stream_method != 0 ? shm::kFlagOrdered : 0;
  d.status = stream_method;
  d.aux[0] = RawDeadline(deadline_ns);
  opening_[op_id] = {peer.scheme + "://" + peer.address.ToString() +
                         (peer.endpoint_name.empty() ? "" : "/" + peer.endpoint_name),
                     stream_method};
  StartOp(op_id, d);
}

void ManagedEngine::Listen() {
  listening_ = true;
  if (!Usable(0)) return;
  Push(Command(Opcode::kListen));
  FlushUnlessBatching();
}

void ManagedEngine::Accept(uint64_t op_id, TimeNs deadline_ns) {
  Descriptor d = Command(Opcode::kAccept, op_id);
  d.aux[0] = RawDeadline(deadline_ns);
  accepting_.insert(op_id);
  StartOp(op_id, d);
}

void ManagedEngine::ServeStreams(uint32_t method, bool served) {
  if (served) {
    served_streams_.insert(method);
  } else {
    served_streams_.erase(method);
  }
  if (!Usable(0)) return;
  Descriptor d = Command(Opcode::kServe);
  d.status = method;
  d.flags = shm::kFlagStream | (served ? shm::kFlagServed : 0);
  Push(d);
  FlushUnlessBatching();
}

void ManagedEngine::AcceptStream(uint64_t op_id, TimeNs deadline_ns) {
  Descriptor d = Command(Opcode::kAccept, op_id);
  d.flags = shm::kFlagStream;
  d.aux[0] = RawDeadline(deadline_ns);
  accepting_.insert(op_id);
  accepting_streams_.insert(op_id);
  StartOp(op_id, d);
}

Result<uint32_t> ManagedEngine::StreamMethodOf(uint64_t conn) const {
  if (!conn_peers_.contains(conn)) return NotFoundError("connection " + std::to_string(conn));
  auto it = conn_stream_methods_.find(conn);
  return it == conn_stream_methods_.end() ? 0 : it->second;
}

void ManagedEngine::Send(uint64_t op_id, uint64_t conn, Buffer message) {
  StartOp(op_id, Command(Opcode::kSend, op_id, conn), std::move(message));
}

void ManagedEngine::Recv(uint64_t op_id, uint64_t conn) {
  StartOp(op_id, Command(Opcode::kRecv, op_id, conn));
}

void ManagedEngine::Call(uint64_t op_id, const engine::Uri& peer, uint32_t method, Buffer request,
                         TimeNs deadline_ns, const transport::SendOptions& options) {
  if (options.priority != transport::kPriorityBySize || options.stamp_departure) {
    sink_->OnComplete(op_id,
                      UnimplementedError("a call at a chosen priority or with its departure "
                                         "stamped is not available through wharfd yet; only "
                                         "embedded engines carry them"),
                      Buffer(), 0);
    return;
  }
  if (!Usable(op_id)) return;
  Descriptor d = Command(Opcode::kCall, op_id, PeerHandle(peer));
  d.flags = shm::kFlagToPeer;
  d.status = method;
  d.aux[0] = RawDeadline(deadline_ns);
  StartOp(op_id, d, std::move(request));
}

void ManagedEngine::CallOnConnection(uint64_t op_id, uint64_t conn, uint32_t method,
                                     Buffer request, TimeNs deadline_ns) {
  Descriptor d = Command(Opcode::kCall, op_id, conn);
  d.status = method;
  d.aux[0] = RawDeadline(deadline_ns);
  StartOp(op_id, d, std::move(request));
}

void ManagedEngine::Disconnect(uint64_t op_id, uint64_t conn) {
  StartOp(op_id, Command(Opcode::kDisconnect, op_id, conn));
}

void ManagedEngine::BarrierArrive(uint64_t op_id, const engine::Uri& coordinator,
                                  bool is_coordinator, uint64_t group, uint64_t round,
                                  uint32_t members, TimeNs deadline_ns) {
  if (!Usable(op_id)) return;
  Descriptor d = Command(Opcode::kBarrier, op_id, PeerHandle(coordinator));
  d.flags = is_coordinator ? shm::kFlagCoordinator : 0;
  d.status = members;
  d.aux[0] = RawDeadline(deadline_ns);
  d.aux[1] = group;
  d.aux[2] = round;
  StartOp(op_id, d);
}

void ManagedEngine::Release(uint64_t conn) {
  conn_peers_.erase(conn);
  conn_stream_methods_.erase(conn);
  if (broken_.has_value()) return;
  Push(Command(Opcode::kReleaseConn, 0, conn));
  FlushUnlessBatching(/*urgent=*/false);
}

Result<std::string> ManagedEngine::PeerOf(uint64_t conn) const {
  auto it = conn_peers_.find(conn);
  if (it == conn_peers_.end()) return NotFoundError("connection " + std::to_string(conn));
  return it->second;
}

void ManagedEngine::SetServed(uint32_t method, bool served) {
  if (served) {
    served_.insert(method);
  } else {
    served_.erase(method);
  }
  if (!Usable(0)) return;
  Descriptor d = Command(Opcode::kServe);
  d.status = method;
  d.flags = served ? shm::kFlagServed : 0;
  Push(d);
  FlushUnlessBatching();
}

void ManagedEngine::Respond(const engine::ServerCallRef& call, Status status, Buffer payload,
                            transport::MessagePriority /*priority*/) {
  // A request from an earlier link cannot be answered on this one.
  if (broken_.has_value() || call.key.client_port != link_generation()) return;
  const uint64_t tag = next_tag_++;
  Descriptor d = Command(Opcode::kRespond, tag, call.key.client_id);
  d.status = static_cast<uint32_t>(status.code());
  if (!status.ok()) {
    std::string_view text = status.message();
    payload = Buffer::Copy(text.substr(0, shm::kMaxErrorText));
  }
  if (Status lent = Lend(tag, std::move(payload), &d); !lent.ok()) {
    // No room for the answer, or too large: the client still hears, with
    // why (a payload in the heap, or none if even that has no room).
    d.status = static_cast<uint32_t>(StatusCode::kResourceExhausted);
    d.heap_offset = d.length = 0;
    (void)Lend(tag, Buffer::Copy(lent.message().substr(0, shm::kMaxErrorText)), &d);
  }
  Push(d);
  FlushUnlessBatching();
}

void ManagedEngine::Sync(uint64_t op_id) {
  // wharfd executes commands in order: its answer to a kNop comes after
  // everything before it took effect.
  StartOp(op_id, Command(Opcode::kNop, op_id));
}

// ------------------------------------------------------------ remote memory

void ManagedEngine::AskRegion(uint64_t op_id, const engine::Uri& peer,
                              const transport::RegionSpec& spec) {
  if (!Usable(op_id)) return;
  Descriptor d = Command(Opcode::kRegionAsk, op_id, PeerHandle(peer));
  d.aux[0] = spec.size;
  d.aux[1] = spec.alignment | uint64_t{spec.access} << 32;
  d.aux[2] = spec.lifetime_ms;
  StartOp(op_id, d);
}

void ManagedEngine::ReadRegion(uint64_t op_id, uint64_t handle, uint64_t offset, Buffer into) {
  if (!Usable(op_id)) return;
  Descriptor d = Command(Opcode::kRegionRead, op_id, handle);
  d.aux[0] = offset;
  Buffer area;
  std::optional<Buffer> copy_to;
  if (!into.empty()) {
    const bool in_area = link_->send_area()->RangeOf(into).has_value();
    Buffer target = in_area ? std::move(into) : Buffer();
    if (!in_area) {
      // wharfd writes only into the heap: a Buffer from elsewhere gets the
      // bytes by one copy at the end.
      std::optional<Buffer> copy = link_->send_area()->Allocate(into.size());
      if (!copy) {
        sink_->OnComplete(op_id, ResourceExhaustedError("the shared heap's send area is full"),
                          Buffer(), 0);
        return;
      }
      ++counts_.copied_sends;
      target = std::move(*copy);
      copy_to = std::move(into);
    }
    Result<Buffer> placed = PlaceInSendArea(std::move(target), &d);
    if (!placed.ok()) {
      sink_->OnComplete(op_id, placed.status(), Buffer(), 0);
      return;
    }
    area = std::move(*placed);
  }
  regions_.StartRead(op_id, std::move(area), std::move(copy_to));
  pending_.insert(op_id);
  Push(d);
  FlushUnlessBatching();
}

void ManagedEngine::WriteRegion(uint64_t op_id, uint64_t handle, uint64_t offset, Buffer from,
                                std::optional<uint64_t> immediate) {
  Descriptor d = Command(Opcode::kRegionWrite, op_id, handle);
  d.aux[0] = offset;
  if (immediate) {
    d.flags = shm::kFlagImmediate;
    d.aux[1] = *immediate;
  }
  StartOp(op_id, d, std::move(from));
}

void ManagedEngine::RegionAtomic(uint64_t op_id, uint64_t handle, uint64_t offset,
                                 transport::RegionAtomicOp op, uint64_t value, uint64_t compare) {
  Descriptor d = Command(Opcode::kRegionAtomic, op_id, handle);
  d.flags = op == transport::RegionAtomicOp::kCompareSwap ? shm::kFlagCompareSwap : 0;
  d.aux[0] = offset;
  d.aux[1] = value;
  d.aux[2] = compare;
  StartOp(op_id, d);
}

Status ManagedEngine::ReleaseRegion(uint64_t handle) {
  if (!Usable(0)) return *broken_;
  // wharfd refuses an unknown handle with a kFault (logged, counted).
  Push(Command(Opcode::kRegionRelease, 0, handle));
  FlushUnlessBatching(/*urgent=*/false);
  return OkStatus();
}

void ManagedEngine::LendRegion(uint64_t op_id, const engine::Uri& peer,
                               const transport::RegionSpec& spec) {
  if (!Usable(op_id)) return;
  // The pool is the heap: a block of the send area, aligned by taking more.
  // (wharfd ends the session of an application whose command names a range
  // over its message limit: refused here instead.)
  const uint64_t alignment = std::max<uint64_t>(spec.alignment, 8);
  if (spec.size == 0 || spec.size > link_->welcome().max_message_bytes || alignment > 4096 ||
      (alignment & (alignment - 1)) != 0) {
    sink_->OnComplete(op_id, InvalidArgumentError("region of " + std::to_string(spec.size) +
                                                  " bytes aligned to " +
                                                  std::to_string(spec.alignment) +
                                                  " (managed: at most homa.max_message_bytes)"),
                      Buffer(), 0);
    return;
  }
  std::optional<Buffer> block = link_->send_area()->Allocate(spec.size + alignment);
  if (!block) {
    sink_->OnComplete(op_id, ResourceExhaustedError("the shared heap's send area is full"),
                      Buffer(), 0);
    return;
  }
  const auto raw = reinterpret_cast<uintptr_t>(block->data());
  std::span<std::byte> bytes(block->data() + (alignment - raw % alignment) % alignment, spec.size);
  std::memset(bytes.data(), 0, bytes.size());
  const uint64_t at = link_->send_area()->RangeOf(*block)->first + (bytes.data() - block->data());
  Descriptor d = Command(Opcode::kRegionLend, op_id, PeerHandle(peer));
  d.heap_offset = at;
  d.length = bytes.size();
  d.aux[0] = spec.access;
  d.aux[1] = spec.lifetime_ms;
  regions_.StartLending(op_id, std::move(*block), bytes);
  pending_.insert(op_id);
  Push(d);
  FlushUnlessBatching();
}

void ManagedEngine::LendMemory(uint64_t op_id, const engine::Uri& peer,
                               std::span<std::byte> memory, uint8_t access,
                               uint32_t lifetime_ms) {
  if (!Usable(op_id)) return;
  std::optional<uint64_t> at = link_->send_area()->OffsetOf(memory);
  if (at && memory.size() > link_->welcome().max_message_bytes) {
    sink_->OnComplete(op_id,
                      InvalidArgumentError("managed, a region lent is at most wharfd's "
                                           "homa.max_message_bytes (" +
                                           std::to_string(link_->welcome().max_message_bytes) +
                                           " bytes)"),
                      Buffer(), 0);
    return;
  }
  if (!at) {
    sink_->OnComplete(op_id,
                      InvalidArgumentError("managed, lent memory must come from "
                                           "Endpoint::AllocateBuffer (the shared heap's send "
                                           "area), kept alive until the region ends"),
                      Buffer(), 0);
    return;
  }
  Descriptor d = Command(Opcode::kRegionLend, op_id, PeerHandle(peer));
  d.heap_offset = *at;
  d.length = memory.size();
  d.aux[0] = access;
  d.aux[1] = lifetime_ms;
  regions_.StartLending(op_id, std::nullopt, memory);
  pending_.insert(op_id);
  Push(d);
  FlushUnlessBatching();
}

Status ManagedEngine::RevokeRegion(uint64_t region) {
  if (!Usable(0)) return *broken_;
  // wharfd refuses an id it did not lend for us with a kFault.
  Push(Command(Opcode::kRegionRevoke, 0, region));
  FlushUnlessBatching(/*urgent=*/false);
  regions_.Revoked(region, clock_.NowNs());
  return OkStatus();
}

std::span<std::byte> ManagedEngine::LentRegionBytes(uint64_t region) {
  return regions_.LentBytes(region);
}

bool ManagedEngine::PopRegionEvent(transport::RegionEvent* out) { return regions_.PopEvent(out); }

void ManagedEngine::Cancel(uint64_t op_id) {
  if (!pending_.contains(op_id) || broken_.has_value()) return;
  Push(Command(Opcode::kCancel, 0, op_id));
  FlushUnlessBatching();
}

void ManagedEngine::Shutdown(const Status& why) {
  Broken(why.ok() ? CancelledError("endpoint closed") : why);
  next_attach_ns_ = kNever;  // closed for good
  link_.reset();             // wharfd sees EOF and frees our session
}

// ----------------------------------------------------------------- polling

transport::PollResult ManagedEngine::Poll() {
  transport::PollResult r;
  r.next_deadline = kNever;
  if (broken_.has_value()) {
    if (next_attach_ns_ != kNever) Usable(0);
    if (broken_.has_value()) return r;
  }
  if (keep_awake_) {
    // wharfd sends a wake-up once per token: read them (or fd() stays
    // readable) and raise a new token, so the next batch wakes us again.
    if (std::optional<Status> gone = link_->CheckControl()) {
      Broken(*gone);
      return r;
    }
    link_->completions().SetWaitingToken(NextSleepToken());
  } else if (waiting_flag_) {
    waiting_flag_ = false;
    link_->completions().SetWaiting(false);
    // Read the wake-up (and notice a departed daemon while at it).
    if (std::optional<Status> gone = link_->CheckControl()) {
      Broken(*gone);
      return r;
    }
  }
  // Buffers the application dropped since the last pass go back to wharfd.
  releases_.clear();
  link_->receive_area()->TakeReleased(&releases_);
  // Four ranges per entry: the first with its length, three more by offset.
  for (size_t i = 0; i < releases_.size(); i += 4) {
    Descriptor d = Command(Opcode::kReleaseBuffer);
    d.heap_offset = releases_[i].first;
    d.length = releases_[i].second;
    for (size_t k = 1; k < 4 && i + k < releases_.size(); ++k) {
      d.aux[k - 1] = releases_[i + k].first;
    }
    Push(d);
  }
  if (!releases_.empty() || !outbox_.empty()) FlushCommands(/*urgent=*/!outbox_.empty());
  // Everything that is there, in batches (bounded: a ring's worth): a
  // thread that sleeps after this pass, or an application that waits for
  // fd() to be readable, is not woken for entries already published.
  batch_.resize(64);
  size_t n = 0;
  for (uint32_t round = 0; round * 64 < link_->completions().capacity(); ++round) {
    const size_t got = link_->completions().TryPop(batch_);
    for (size_t i = 0; i < got && !broken_.has_value(); ++i) Dispatch(batch_[i]);
    n += got;
    if (got < batch_.size() || broken_.has_value()) break;
  }
  more_completions_ = !broken_.has_value() && n > 0 &&
                      link_->completions().LoadPeerIndex() != link_->completions().position();
  counts_.completions += n;
  r.work = static_cast<int>(n + releases_.size());
  // The control socket only matters when wharfd goes: look now and then,
  // not on every spin (it costs a system call).
  if (n == 0 && ++idle_polls_ >= 256) {
    idle_polls_ = 0;
    if (std::optional<Status> gone = link_->CheckControl()) Broken(*gone);
  }
  return r;
}

TimeNs ManagedEngine::NextDeadline() const {
  // Deadlines are wharfd's; a broken link retries attaching.
  if (broken_.has_value()) return next_attach_ns_;
  if (more_completions_) return clock_.NowNs();  // a full ring's worth was not all
  return outbox_.empty() ? kNever : clock_.NowNs() + kNsPerMs;
}

void ManagedEngine::AppendReadableFds(std::vector<int>* fds) const {
  if (link_ == nullptr || broken_.has_value()) return;
  fds->push_back(link_->control().fd());
}

bool ManagedEngine::PrepareToSleep() {
  if (link_ == nullptr || broken_.has_value()) return true;
  if (std::optional<Status> gone = link_->CheckControl()) {
    Broken(*gone);
    return false;
  }
  waiting_flag_ = true;
  link_->completions().SetWaitingToken(NextSleepToken());
  // Entries that arrived before wharfd could see the flag: do not sleep.
  return link_->completions().LoadPeerIndex() == link_->completions().position();
}

void ManagedEngine::SetIdle(bool idle) {
  if (link_ != nullptr && !broken_.has_value()) link_->completions().SetIdle(idle);
}

void ManagedEngine::KeepAwake() {
  keep_awake_ = true;
  if (link_ != nullptr && !broken_.has_value()) {
    link_->completions().SetWaitingToken(NextSleepToken());
  }
}

Buffer ManagedEngine::AllocateBuffer(size_t size) {
  // Called under the host's lock like everything else here (the link is
  // replaced on re-attach); a Buffer keeps its own area alive.
  std::shared_ptr<SendArea> area = link_ != nullptr ? link_->send_area() : nullptr;
  if (area != nullptr) {
    if (std::optional<Buffer> b = area->Allocate(size)) return std::move(*b);
  }
  return Buffer::Allocate(size);
}

std::vector<std::pair<std::string, uint64_t>> ManagedEngine::Counters() const {
  std::vector<std::pair<std::string, uint64_t>> all;
  if (link_ != nullptr && !broken_.has_value()) {
    Result<std::vector<shm::Counter>> stats = link_->Stats(std::chrono::seconds(1));
    if (stats.ok()) {
      for (auto& c : *stats) all.emplace_back(std::move(c.name), c.value);
    }
  }
  all.emplace_back("managed.commands", counts_.commands);
  all.emplace_back("managed.completions", counts_.completions);
  all.emplace_back("managed.copied_sends", counts_.copied_sends);
  all.emplace_back("managed.batched_commands", counts_.batched_commands);
  all.emplace_back("managed.faults", counts_.faults);
  all.emplace_back("managed.reattaches", counts_.reattaches);
  all.emplace_back("managed.region_events_dropped", regions_.events_dropped());
  all.emplace_back("managed.doorbells_rung", counts_.doorbells_rung);
  all.emplace_back("managed.send_area_bytes_in_use",
                   link_ != nullptr ? link_->send_area()->bytes_in_use() : 0);
  return all;
}

// ------------------------------------------------------------ completions

std::string ManagedEngine::TakeText(const Descriptor& e) {
  if (e.length == 0) return "";
  Buffer b = link_->receive_area()->Wrap(e.heap_offset, e.length);
  return std::string(b.AsStringView());  // b's release returns the range
}

void ManagedEngine::Dispatch(const Descriptor& e) {
  switch (static_cast<Opcode>(e.opcode)) {
    case Opcode::kCompletion: {
      if ((e.flags & shm::kFlagSendReleased) != 0) lent_.erase(e.cookie);
      if (pending_.erase(e.cookie) == 0) {
        // Not ours to complete (a daemon bug): give the range back.
        (void)TakeText(e);
        return;
      }
      const auto code = static_cast<StatusCode>(e.status);
      if (regions_.Owns(e.cookie)) {
        ManagedRegions::Outcome done = regions_.Finish(
            e.cookie, code == StatusCode::kOk ? OkStatus() : Status(code, TakeText(e)), e.handle);
        sink_->OnComplete(e.cookie, std::move(done.status), std::move(done.message), done.value);
        return;
      }
      if (code != StatusCode::kOk) {
        opening_.erase(e.cookie);
        accepting_.erase(e.cookie);
        accepting_streams_.erase(e.cookie);
        sink_->OnComplete(e.cookie, Status(code, TakeText(e)), Buffer(), 0);
        return;
      }
      Buffer message = e.length == 0 ? Buffer() : link_->receive_area()->Wrap(e.heap_offset, e.length);
      // Connects and accepts are rare: a call's completion looks at neither
      // map (each lookup there is a division by a prime).
      auto it = opening_.empty() ? opening_.end() : opening_.find(e.cookie);
      if (it != opening_.end()) {
        conn_peers_[e.handle] = std::move(it->second.peer);
        if (it->second.stream_method != 0) {
          conn_stream_methods_[e.handle] = it->second.stream_method;
        }
        opening_.erase(it);
      } else if (!accepting_.empty() && accepting_.erase(e.cookie) > 0) {
        // An accept's payload is the peer's address, after a stream's
        // method (shm/commands.h).
        std::string_view peer = message.AsStringView();
        if (accepting_streams_.erase(e.cookie) > 0 && peer.size() >= 4) {
          conn_stream_methods_[e.handle] = wire::LoadU32(message.data());
          peer.remove_prefix(4);
        }
        conn_peers_[e.handle] = std::string(peer);
        message = Buffer();
      }
      sink_->OnComplete(e.cookie, OkStatus(), std::move(message), e.handle);
      return;
    }
    case Opcode::kRequest: {
      engine::IncomingCall call;
      call.ref.key.client_id = e.handle;
      call.ref.key.client_port = link_generation();
      call.method = e.status;
      call.deadline_ns = e.aux[0] == 0 ? kNever : static_cast<TimeNs>(e.aux[0]);
      auto name = peer_names_.find(e.aux[1]);
      call.peer = name != peer_names_.end() ? std::string_view(name->second) : std::string_view();
      call.request = e.length == 0 ? Buffer() : link_->receive_area()->Wrap(e.heap_offset, e.length);
      sink_->OnRequest(std::move(call));
      return;
    }
    case Opcode::kCallCancelled: {
      engine::ServerCallRef ref;
      ref.key.client_id = e.handle;
      ref.key.client_port = link_generation();
      sink_->OnCallCancelled(ref);
      return;
    }
    case Opcode::kSendReleased:
      lent_.erase(e.cookie);
      for (uint64_t more : e.aux) {
        if (more != 0) lent_.erase(more);
      }
      return;
    case Opcode::kPeerName: {
      if (peer_names_.size() >= kMaxPeerNamesKept) {
        peer_names_.erase(peer_name_order_.front());
        peer_name_order_.pop_front();
      }
      peer_names_[e.handle] = TakeText(e);
      peer_name_order_.push_back(e.handle);
      return;
    }
    case Opcode::kRegionEvent:
      regions_.OnEvent(e, link_->receive_area()->View(e.heap_offset, e.length), clock_.NowNs());
      return;
    case Opcode::kFault: {
      ++counts_.faults;
      WHARF_LOG(kWarn, "wharf: wharfd refused a command of endpoint {}: {}", address_, TakeText(e));
      return;
    }
    default:
      (void)TakeText(e);
      return;
  }
}

}  // namespace wharf::internal
