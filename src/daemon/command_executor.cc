// CommandExecutor: one validated command at a time, in the order the
// application wrote them.
#include "daemon/command_executor.h"

#include <algorithm>
#include <optional>
#include <span>
#include <string>

#include "base/text.h"
#include "shm/commands.h"

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

void CommandExecutor::Execute(const Descriptor& d) {
  engine::Engine& engine = p_.engine;
  switch (static_cast<Opcode>(d.opcode)) {
    case Opcode::kNop:
      p_.outbox.Complete(d.cookie, OkStatus());
      return;
    case Opcode::kSend:
      if (StartOp(d) && OwnConnection(d)) engine.Send(d.cookie, d.handle, Payload(d));
      return;
    case Opcode::kRecv:
      if (StartOp(d) && OwnConnection(d)) engine.Recv(d.cookie, d.handle);
      return;
    case Opcode::kCancel:
      // An operation that already finished is no error: the two crossed.
      if (p_.ops.live(d.handle)) engine.Cancel(d.handle);
      return;
    case Opcode::kCall:
      ExecuteCall(d);
      return;
    case Opcode::kConnect:
      ExecuteConnect(d);
      return;
    case Opcode::kListen:
      engine.Listen();
      return;
    case Opcode::kAccept:
      if (!StartOp(d)) return;
      p_.ops.StartOpening(d.cookie, /*accept=*/true);
      if ((d.flags & shm::kFlagStream) != 0) {
        engine.AcceptStream(d.cookie, DeadlineOf(d.aux[0]));
      } else {
        engine.Accept(d.cookie, DeadlineOf(d.aux[0]));
      }
      return;
    case Opcode::kDisconnect:
      if (StartOp(d) && OwnConnection(d)) engine.Disconnect(d.cookie, d.handle);
      return;
    case Opcode::kReleaseConn:
      if (!p_.ops.Release(d.handle)) {
        Fault(d, NotFoundError("connection " + std::to_string(d.handle) + " is not open"));
        return;
      }
      engine.Release(d.handle);
      return;
    case Opcode::kBarrier:
      ExecuteBarrier(d);
      return;
    case Opcode::kServe:
      ExecuteServe(d);
      return;
    case Opcode::kRespond:
      ExecuteRespond(d);
      return;
    case Opcode::kReleaseBuffer:
      if (Status released = p_.area.Release(d.heap_offset, d.length, d.aux); !released.ok()) {
        Fault(d, released);
      }
      return;
    case Opcode::kRegionAsk:
    case Opcode::kRegionLend:
    case Opcode::kRegionRead:
    case Opcode::kRegionWrite:
    case Opcode::kRegionAtomic:
      ExecuteRegion(d);
      return;
    case Opcode::kRegionRelease:
      if (Status released = engine.ReleaseRegion(d.handle); !released.ok()) Fault(d, released);
      return;
    case Opcode::kRegionRevoke:
      if (Status revoked = engine.RevokeRegion(d.handle); !revoked.ok()) Fault(d, revoked);
      return;
    case Opcode::kAddPeer:
      if (Status added = p_.peers.Add(d.handle, {{d.aux[0], d.aux[1], d.aux[2]}});
          !added.ok()) {
        Fault(d, added);
      }
      return;
    default:
      // The validator lets only the opcodes above through.
      Fault(d, InvalidArgumentError("not a command"));
      return;
  }
}

void CommandExecutor::Fault(const Descriptor& d, const Status& why) {
  ++bad_commands_;
  Descriptor f{};
  f.opcode = static_cast<uint16_t>(Opcode::kFault);
  f.status = static_cast<uint32_t>(why.code());
  f.aux[0] = d.opcode;
  f.cookie = d.cookie;
  std::string text = OpName(d) + ": " + why.message();
  p_.outbox.Push(f, Buffer::Copy(std::string_view(text).substr(0, shm::kMaxErrorText)));
}

bool CommandExecutor::StartOp(const Descriptor& d) {
  if (d.cookie == 0 || d.cookie >= (1ull << 63)) {
    Fault(d, InvalidArgumentError("cookie " + std::to_string(d.cookie) +
                                  " is not an operation id (1 to 2^63-1)"));
    return false;
  }
  if (p_.ops.live(d.cookie)) {
    Fault(d, AlreadyExistsError("operation " + std::to_string(d.cookie) + " is already in flight"));
    return false;
  }
  if (p_.ops.size() + p_.served.size() >= limits_.max_inflight) {
    ++bad_commands_;
    p_.outbox.Complete(d.cookie, ResourceExhaustedError("wharfd limits.max_inflight (" +
                                                        std::to_string(limits_.max_inflight) +
                                                        " operations in flight) reached"));
    return false;
  }
  p_.ops.Start(d.cookie);
  return true;
}

void CommandExecutor::Refuse(uint64_t cookie, const Status& why) {
  p_.ops.Forget(cookie);
  ++bad_commands_;
  p_.outbox.Complete(cookie, why);
}

bool CommandExecutor::OwnConnection(const Descriptor& d) {
  if (p_.ops.owns(d.handle)) return true;
  // Connection ids are per application (each has its own engine), so an id
  // another application holds names nothing here; saying so beats the
  // engine's bare "unknown connection".
  Refuse(d.cookie, NotFoundError(OpName(d) + ": connection " + std::to_string(d.handle) +
                                 " is not one of this application's open connections"));
  return false;
}

void CommandExecutor::ExecuteCall(const Descriptor& d) {
  if (!StartOp(d)) return;
  const TimeNs deadline = DeadlineOf(d.aux[0]);
  if ((d.flags & shm::kFlagToPeer) == 0) {
    if (!OwnConnection(d)) return;
    p_.engine.CallOnConnection(d.cookie, d.handle, d.status, Payload(d), deadline);
    return;
  }
  const engine::Uri* peer = p_.peers.Find(d.handle);
  if (peer == nullptr) {
    Refuse(d.cookie, InvalidArgumentError("CALL: unknown peer handle " + std::to_string(d.handle) +
                                          " (no ADD_PEER for it)"));
    return;
  }
  p_.engine.Call(d.cookie, *peer, d.status, Payload(d), deadline);
}

void CommandExecutor::ExecuteRegion(const Descriptor& d) {
  if (!StartOp(d)) return;
  engine::Engine& engine = p_.engine;
  switch (static_cast<Opcode>(d.opcode)) {
    case Opcode::kRegionAsk: {
      const engine::Uri* peer = p_.peers.Find(d.handle);
      if (peer == nullptr) {
        return Refuse(d.cookie, InvalidArgumentError("REGION_ASK: unknown peer handle " +
                                                     std::to_string(d.handle)));
      }
      const uint64_t alignment = d.aux[1] & 0xFFFFFFFFu;
      const uint64_t access = d.aux[1] >> 32;
      if (access > 0xFF || d.aux[2] > UINT32_MAX) {
        return Refuse(d.cookie, InvalidArgumentError("REGION_ASK: access bits " +
                                                     std::to_string(access) + ", lifetime " +
                                                     std::to_string(d.aux[2]) + " ms"));
      }
      engine.AskRegion(d.cookie, *peer,
                       {.size = d.aux[0],
                        .alignment = static_cast<uint32_t>(alignment),
                        .access = static_cast<uint8_t>(access),
                        .lifetime_ms = static_cast<uint32_t>(d.aux[2])});
      return;
    }
    case Opcode::kRegionRead:
      // wharfd writes the bytes there: only into the application's own
      // send area, never the receive area, whose ranges are wharfd's to
      // hand out.
      if (d.heap_offset + d.length > p_.region.layout().heap_bytes / 2) {
        return Refuse(d.cookie, InvalidArgumentError(
                                    "REGION_READ: the destination must lie in the send area"));
      }
      engine.ReadRegion(d.cookie, d.handle, d.aux[0], Payload(d));
      return;
    case Opcode::kRegionLend: {
      // The holder will write there: the send area only, as for a read.
      const engine::Uri* peer = p_.peers.Find(d.handle);
      if (peer == nullptr || d.length == 0 || d.aux[0] > 0xFF || d.aux[1] > UINT32_MAX ||
          d.heap_offset + d.length > p_.region.layout().heap_bytes / 2) {
        return Refuse(d.cookie, InvalidArgumentError(
                                    "REGION_LEND: needs a known peer handle, a range of the "
                                    "send area, access bits and a lifetime in ms"));
      }
      engine.LendMemory(d.cookie, *peer, *p_.region.HeapRange(d.heap_offset, d.length),
                        static_cast<uint8_t>(d.aux[0]), static_cast<uint32_t>(d.aux[1]));
      return;
    }
    case Opcode::kRegionWrite:
      engine.WriteRegion(d.cookie, d.handle, d.aux[0], Payload(d),
                         (d.flags & shm::kFlagImmediate) != 0 ? std::optional<uint64_t>(d.aux[1])
                                                              : std::nullopt);
      return;
    default:  // kRegionAtomic
      engine.RegionAtomic(d.cookie, d.handle, d.aux[0],
                          (d.flags & shm::kFlagCompareSwap) != 0
                              ? transport::RegionAtomicOp::kCompareSwap
                              : transport::RegionAtomicOp::kFetchAdd,
                          d.aux[1], d.aux[2]);
      return;
  }
}

void CommandExecutor::ExecuteConnect(const Descriptor& d) {
  if (!StartOp(d)) return;
  const engine::Uri* peer = p_.peers.Find(d.handle);
  if (peer == nullptr) {
    Refuse(d.cookie, InvalidArgumentError("CONNECT: unknown peer handle " +
                                          std::to_string(d.handle) + " (no ADD_PEER for it)"));
    return;
  }
  if (p_.ops.connections() + p_.ops.opening() >= limits_.max_connections) {
    Refuse(d.cookie, ResourceExhaustedError("wharfd limits.max_connections (" +
                                            std::to_string(limits_.max_connections) +
                                            ") reached"));
    return;
  }
  p_.ops.StartOpening(d.cookie, /*accept=*/false);
  p_.engine.Connect(d.cookie, *peer, (d.flags & shm::kFlagOrdered) != 0, d.status,
                    DeadlineOf(d.aux[0]));
}

void CommandExecutor::ExecuteBarrier(const Descriptor& d) {
  if (!StartOp(d)) return;
  const engine::Uri* coordinator = p_.peers.Find(d.handle);
  if (coordinator == nullptr || d.status == 0) {
    Refuse(d.cookie, InvalidArgumentError("BARRIER: unknown coordinator handle " +
                                          std::to_string(d.handle) + " or no members"));
    return;
  }
  p_.engine.BarrierArrive(d.cookie, *coordinator, (d.flags & shm::kFlagCoordinator) != 0,
                          d.aux[1], d.aux[2], d.status, DeadlineOf(d.aux[0]));
}

void CommandExecutor::ExecuteServe(const Descriptor& d) {
  const bool served = (d.flags & shm::kFlagServed) != 0;
  const bool streams = (d.flags & shm::kFlagStream) != 0;
  Status s = streams ? p_.served.ServeStreams(d.status, served) : p_.served.Serve(d.status, served);
  if (!s.ok()) {
    Fault(d, s);
    return;
  }
  if (streams) {
    p_.engine.ServeStreams(d.status, served);
  } else {
    p_.engine.SetServed(d.status, served);
  }
}

void CommandExecutor::ExecuteRespond(const Descriptor& d) {
  // The payload's range is the application's again once we are done with
  // it: at once, unless the engine sends from it (an OK answer).
  auto release_payload = [&] {
    if (d.length == 0 || d.cookie == 0) return;
    Descriptor released{};
    released.opcode = static_cast<uint16_t>(Opcode::kSendReleased);
    released.cookie = d.cookie;
    p_.outbox.Push(released);
  };
  if (d.status > static_cast<uint32_t>(StatusCode::kDataLoss) && p_.served.awaits(d.handle)) {
    Fault(d, InvalidArgumentError("status code " + std::to_string(d.status) + " is unknown"));
    return;
  }
  std::optional<engine::ServerCallRef> ref = p_.served.Take(d.handle);
  if (!ref.has_value()) {
    if (p_.served.HandedOut(d.handle)) {
      // A request we handed out and forgot since: its client withdrew it or
      // died (the session's OnCallCancelled), or this is a second answer.
      // Dropped, as the engine drops an answer nobody waits for.
      ++late_answers_;
      release_payload();
      return;
    }
    Fault(d, NotFoundError("request " + std::to_string(d.handle) + " is not awaiting an answer"));
    return;
  }
  if (d.status == 0) {
    p_.engine.Respond(*ref, OkStatus(), Payload(d));
    return;
  }
  // An error: its text, copied (never parsed in place), then the range is free.
  std::string text;
  if (d.length > 0) {
    std::span<std::byte> bytes =
        *p_.region.HeapRange(d.heap_offset, std::min<uint64_t>(d.length, shm::kMaxErrorText));
    text.assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    release_payload();
    // It reaches the client's logs and terminal: printable, cut between
    // characters.
    text = PrintableText(text, shm::kMaxErrorText);
  }
  p_.engine.Respond(*ref, Status(static_cast<StatusCode>(d.status), std::move(text)));
}

}  // namespace wharf::daemon
