// AppSession: executing one command the application wrote. Each arrives
// copied out of the ring and checked by the validator (opcode, flags, heap
// range); what is checked here is what only the session knows: cookies,
// handles, peers, limits. Nothing a command says can reach another
// application: handles index this session's own tables and engine.
#include <string>

#include "base/text.h"
#include "daemon/app_session.h"
#include "shm/commands.h"
#include "wharf/endpoint.h"

namespace wharf::daemon {

using shm::Descriptor;
using shm::Opcode;

namespace {

TimeNs DeadlineOf(uint64_t raw) {
  if (raw == 0 || raw > static_cast<uint64_t>(INT64_MAX)) return kNever;
  return static_cast<TimeNs>(raw);
}

std::string OpName(const Descriptor& d) {
  return std::string(shm::OpcodeName(static_cast<Opcode>(d.opcode)));
}

}  // namespace

void AppSession::Fault(const Descriptor& d, Status why) {
  ++counters_.bad_commands;
  Descriptor f{};
  f.opcode = static_cast<uint16_t>(Opcode::kFault);
  f.status = static_cast<uint32_t>(why.code());
  f.aux[0] = d.opcode;
  f.cookie = d.cookie;
  std::string text = OpName(d) + ": " + why.message();
  Push(f, Buffer::Copy(std::string_view(text).substr(0, shm::kMaxErrorText)));
}

bool AppSession::StartOp(const Descriptor& d) {
  if (d.cookie == 0 || d.cookie >= (1ull << 63)) {
    Fault(d, InvalidArgumentError("cookie " + std::to_string(d.cookie) +
                                  " is not an operation id (1 to 2^63-1)"));
    return false;
  }
  if (live_ops_.contains(d.cookie)) {
    Fault(d, AlreadyExistsError("operation " + std::to_string(d.cookie) + " is already in flight"));
    return false;
  }
  if (inflight() >= limits_.max_inflight) {
    ++counters_.bad_commands;
    Complete(d.cookie, ResourceExhaustedError("wharfd limits.max_inflight (" +
                                              std::to_string(limits_.max_inflight) +
                                              " operations in flight) reached"));
    return false;
  }
  live_ops_.insert(d.cookie);
  return true;
}

void AppSession::Refuse(uint64_t cookie, const Status& why) {
  if (auto it = live_ops_.find(cookie); it != live_ops_.end()) {
    live_ops_.erase(it);
  }
  ++counters_.bad_commands;
  Complete(cookie, why);
}

bool AppSession::OwnConnection(const Descriptor& d) {
  if (conns_.contains(d.handle)) return true;
  // Connection ids are per application (each has its own engine), so an id
  // another application holds names nothing here; saying so beats the
  // engine's bare "unknown connection".
  Refuse(d.cookie, NotFoundError(OpName(d) + ": connection " + std::to_string(d.handle) +
                                 " is not one of this application's open connections"));
  return false;
}

Buffer AppSession::Payload(const Descriptor& d) {
  if (d.length == 0) return Buffer();
  // The validator checked the range lies in the heap. The engine puts its
  // frame header in the bytes before the payload when there are some: the
  // application's own memory, which its allocator leaves free for that.
  const uint64_t headroom = std::min<uint64_t>(d.heap_offset, Buffer::kHeadroom);
  const uint64_t start = d.heap_offset - headroom;
  std::span<std::byte> whole = *region_->HeapRange(start, d.length + headroom);
  if (!lent_.try_emplace(start, d.cookie).second) lent_again_.emplace(start, d.cookie);
  counters_.bytes_sent += d.length;
  return Buffer::Wrap(whole, send_owner_, headroom);
}

const engine::Uri* AppSession::PeerHandle(uint64_t handle) const {
  if (handle >= peers_.size() || !peers_[handle].has_value()) return nullptr;
  return &*peers_[handle];
}

void AppSession::Execute(const Descriptor& d, TimeNs /*now*/) {
  switch (static_cast<Opcode>(d.opcode)) {
    case Opcode::kNop:
      Complete(d.cookie, OkStatus());
      return;
    case Opcode::kSend:
      if (StartOp(d) && OwnConnection(d)) engine_->Send(d.cookie, d.handle, Payload(d));
      return;
    case Opcode::kRecv:
      if (StartOp(d) && OwnConnection(d)) engine_->Recv(d.cookie, d.handle);
      return;
    case Opcode::kCancel:
      // An operation that already finished is no error: the two crossed.
      if (live_ops_.contains(d.handle)) engine_->Cancel(d.handle);
      return;
    case Opcode::kCall:
      ExecuteCall(d);
      return;
    case Opcode::kConnect: {
      if (!StartOp(d)) return;
      const engine::Uri* peer = PeerHandle(d.handle);
      if (peer == nullptr) {
        Refuse(d.cookie, InvalidArgumentError("CONNECT: unknown peer handle " +
                                              std::to_string(d.handle) + " (no ADD_PEER for it)"));
        return;
      }
      if (conns_.size() + opening_ops_.size() >= limits_.max_connections) {
        Refuse(d.cookie, ResourceExhaustedError("wharfd limits.max_connections (" +
                                                std::to_string(limits_.max_connections) +
                                                ") reached"));
        return;
      }
      opening_ops_.insert(d.cookie);
      engine_->Connect(d.cookie, *peer, (d.flags & shm::kFlagOrdered) != 0,
                       DeadlineOf(d.aux[0]));
      return;
    }
    case Opcode::kListen:
      engine_->Listen();
      return;
    case Opcode::kAccept:
      if (!StartOp(d)) return;
      opening_ops_.insert(d.cookie);
      accept_ops_.insert(d.cookie);
      engine_->Accept(d.cookie, DeadlineOf(d.aux[0]));
      return;
    case Opcode::kDisconnect:
      if (StartOp(d) && OwnConnection(d)) engine_->Disconnect(d.cookie, d.handle);
      return;
    case Opcode::kReleaseConn:
      if (conns_.erase(d.handle) == 0) {
        Fault(d, NotFoundError("connection " + std::to_string(d.handle) + " is not open"));
        return;
      }
      engine_->Release(d.handle);
      return;
    case Opcode::kBarrier: {
      if (!StartOp(d)) return;
      const engine::Uri* coordinator = PeerHandle(d.handle);
      if (coordinator == nullptr || d.status == 0) {
        Refuse(d.cookie, InvalidArgumentError("BARRIER: unknown coordinator handle " +
                                              std::to_string(d.handle) + " or no members"));
        return;
      }
      engine_->BarrierArrive(d.cookie, *coordinator, (d.flags & shm::kFlagCoordinator) != 0,
                             d.aux[1], d.aux[2], d.status, DeadlineOf(d.aux[0]));
      return;
    }
    case Opcode::kServe:
      if (d.status >= kFirstReservedMethod) {
        Fault(d, InvalidArgumentError("method " + std::to_string(d.status) + " is reserved"));
        return;
      }
      if ((d.flags & shm::kFlagServed) == 0) {
        served_.erase(d.status);
        engine_->SetServed(d.status, false);
        return;
      }
      if (!served_.contains(d.status) && served_.size() >= kMaxServedMethods) {
        Fault(d, ResourceExhaustedError("serves " + std::to_string(served_.size()) +
                                        " methods already (at most " +
                                        std::to_string(kMaxServedMethods) + ")"));
        return;
      }
      served_.insert(d.status);
      engine_->SetServed(d.status, true);
      return;
    case Opcode::kRespond:
      ExecuteRespond(d);
      return;
    case Opcode::kReleaseBuffer:
      ExecuteReleaseBuffer(d);
      return;
    case Opcode::kAddPeer:
      ExecuteAddPeer(d);
      return;
    default:
      // The validator lets only the opcodes above through.
      Fault(d, InvalidArgumentError("not a command"));
      return;
  }
}

void AppSession::ExecuteCall(const Descriptor& d) {
  if (!StartOp(d)) return;
  const TimeNs deadline = DeadlineOf(d.aux[0]);
  if ((d.flags & shm::kFlagToPeer) == 0) {
    if (!OwnConnection(d)) return;
    engine_->CallOnConnection(d.cookie, d.handle, d.status, Payload(d), deadline);
    return;
  }
  const engine::Uri* peer = PeerHandle(d.handle);
  if (peer == nullptr) {
    Refuse(d.cookie, InvalidArgumentError("CALL: unknown peer handle " + std::to_string(d.handle) +
                                          " (no ADD_PEER for it)"));
    return;
  }
  engine_->Call(d.cookie, *peer, d.status, Payload(d), deadline);
}

void AppSession::ExecuteRespond(const Descriptor& d) {
  // The payload's range is the application's again once we are done with
  // it: at once, unless the engine sends from it (an OK answer).
  auto release_payload = [&] {
    if (d.length == 0 || d.cookie == 0) return;
    Descriptor released{};
    released.opcode = static_cast<uint16_t>(Opcode::kSendReleased);
    released.cookie = d.cookie;
    Push(released);
  };
  auto it = calls_.find(d.handle);
  if (it == calls_.end()) {
    if (d.handle != 0 && d.handle < next_call_handle_) {
      // A request we handed out and forgot since: its client withdrew it or
      // died (OnCallCancelled), or this is a second answer. Dropped, as the
      // engine drops an answer nobody waits for.
      ++counters_.late_answers;
      release_payload();
      return;
    }
    Fault(d, NotFoundError("request " + std::to_string(d.handle) + " is not awaiting an answer"));
    return;
  }
  if (d.status > static_cast<uint32_t>(StatusCode::kDataLoss)) {
    Fault(d, InvalidArgumentError("status code " + std::to_string(d.status) + " is unknown"));
    return;
  }
  const engine::ServerCallRef ref = it->second;
  calls_.erase(it);
  call_handles_.erase(ref);
  if (d.status == 0) {
    engine_->Respond(ref, OkStatus(), Payload(d));
    return;
  }
  // An error: its text, copied (never parsed in place), then the range is free.
  std::string text;
  if (d.length > 0) {
    std::span<std::byte> bytes = *region_->HeapRange(d.heap_offset, std::min<uint64_t>(d.length, shm::kMaxErrorText));
    text.assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    release_payload();
    // It reaches the client's logs and terminal: printable, cut between
    // characters.
    text = PrintableText(text, shm::kMaxErrorText);
  }
  engine_->Respond(ref, Status(static_cast<StatusCode>(d.status), std::move(text)));
}

void AppSession::ExecuteReleaseBuffer(const Descriptor& d) {
  Result<uint64_t> size = receive_area_->Size(d.heap_offset);
  if (!size.ok()) {
    Fault(d, InvalidArgumentError("offset " + std::to_string(d.heap_offset) +
                                  " is not a buffer wharfd delivered (released twice?)"));
    return;
  }
  if (*size != d.length) {
    Fault(d, InvalidArgumentError("buffer at " + std::to_string(d.heap_offset) + " has " +
                                  std::to_string(*size) + " bytes, not " +
                                  std::to_string(d.length)));
    return;
  }
  (void)receive_area_->Free(d.heap_offset);
  // Up to three more ranges by their start (the receive area always starts
  // past offset 0, so 0 names none).
  for (uint64_t more : d.aux) {
    if (more != 0 && !receive_area_->Free(more).ok()) {
      Fault(d, InvalidArgumentError("offset " + std::to_string(more) +
                                    " is not a buffer wharfd delivered (released twice?)"));
      return;
    }
  }
}

void AppSession::ExecuteAddPeer(const Descriptor& d) {
  if (d.handle >= shm::kMaxPeerHandles) {
    Fault(d, InvalidArgumentError("peer handle " + std::to_string(d.handle) + " is over " +
                                  std::to_string(shm::kMaxPeerHandles - 1)));
    return;
  }
  Result<engine::Uri> uri = engine::UnpackUri({{d.aux[0], d.aux[1], d.aux[2]}});
  if (!uri.ok()) {
    Fault(d, uri.status());
    return;
  }
  if (peers_.size() <= d.handle) peers_.resize(d.handle + 1);
  peers_[d.handle] = std::move(*uri);
}

}  // namespace wharf::daemon
