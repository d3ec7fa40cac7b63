// engine/engine_api.h: EngineApi, the operations a host drives an engine
// with, whoever runs the engine. Embedded mode drives an Engine in the
// application's own process (engine.h); managed mode drives a proxy that
// forwards the same operations through shared-memory rings to the Engine
// wharfd runs for the application (client/managed_engine.h). The public API
// is written once, against this interface, for both hostings.
//
// Contract (Engine's, which every implementation keeps): operations go in
// with host-chosen ids, nonzero and below 2^63; each ends in exactly one
// EngineSink::OnComplete with that id; served requests come out through
// EngineSink::OnRequest and are answered with Respond. Single-threaded: the
// host serialises calls and drives Poll().
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "engine/engine_sink.h"
#include "engine/uri.h"
#include "transport/message_transport.h"
#include "transport/remote_memory.h"
#include "wharf/buffer.h"
#include "wharf/result.h"
#include "wharf/status.h"

namespace wharf::engine {

// The kernel's times of a call's two ends, on the monotonic clock; 0 where
// not known.
struct KernelStamps {
  TimeNs sent_ns = 0;      // the request's first packet left
  TimeNs received_ns = 0;  // the answer's last packet arrived
};

class EngineApi {
 public:
  virtual ~EngineApi() = default;

  // --- operations: each ends in one sink OnComplete(op_id, ...) ---
  // Connect and Accept complete with the local connection id as value.
  // `stream_method` nonzero opens a stream: an ordered connection the peer
  // takes with AcceptStream, which it must serve (ServeStreams).
  virtual void Connect(uint64_t op_id, const Uri& peer, bool ordered, uint32_t stream_method,
                       TimeNs deadline_ns) = 0;
  virtual void Listen() = 0;
  virtual void Accept(uint64_t op_id, TimeNs deadline_ns) = 0;
  // Peers may open streams of `method` (served = false: no new ones).
  virtual void ServeStreams(uint32_t method, bool served) = 0;
  // Takes the next stream a peer opened; StreamMethodOf tells its method.
  virtual void AcceptStream(uint64_t op_id, TimeNs deadline_ns) = 0;
  virtual Result<uint32_t> StreamMethodOf(uint64_t conn) const = 0;
  virtual void Send(uint64_t op_id, uint64_t conn, Buffer message) = 0;
  virtual void Recv(uint64_t op_id, uint64_t conn) = 0;
  // `options`: the request's priority (0..7 or transport::kPriorityBySize,
  // the transport's choice) and whether to stamp its departure
  // (completing_stamps); message_transport.h says what each transport does
  // with them. A managed engine carries neither yet: a Call with either
  // fails with kUnimplemented there.
  virtual void Call(uint64_t op_id, const Uri& peer, uint32_t method, Buffer request,
                    TimeNs deadline_ns, const transport::SendOptions& options = {}) = 0;
  virtual void CallOnConnection(uint64_t op_id, uint64_t conn, uint32_t method, Buffer request,
                                TimeNs deadline_ns) = 0;
  virtual void Disconnect(uint64_t op_id, uint64_t conn) = 0;
  // Round `round` of group `group` with `members` members.
  virtual void BarrierArrive(uint64_t op_id, const Uri& coordinator, bool is_coordinator,
                             uint64_t group, uint64_t round, uint32_t members,
                             TimeNs deadline_ns) = 0;
  // Forgets a connection the application dropped (after Disconnect).
  virtual void Release(uint64_t conn) = 0;
  // The peer's address ("homa://1.2.3.4:5678") of a connection.
  virtual Result<std::string> PeerOf(uint64_t conn) const = 0;

  // --- remote memory (transport/remote_memory.h; engine/region_ops.h) ---
  // One-sided operations on regions of peers' memory, over the transport
  // that can (ucx://); kUnimplemented elsewhere. AskRegion completes with
  // value = the region's handle, ReadRegion with message = `into` filled,
  // RegionAtomic with value = the word as it was; the rest with a status.
  virtual void AskRegion(uint64_t op_id, const Uri& peer, const transport::RegionSpec& spec) = 0;
  virtual void ReadRegion(uint64_t op_id, uint64_t handle, uint64_t offset, Buffer into) = 0;
  // `immediate`: the target then gets it as an event, after the data.
  virtual void WriteRegion(uint64_t op_id, uint64_t handle, uint64_t offset, Buffer from,
                           std::optional<uint64_t> immediate) = 0;
  virtual void RegionAtomic(uint64_t op_id, uint64_t handle, uint64_t offset,
                            transport::RegionAtomicOp op, uint64_t value, uint64_t compare) = 0;
  virtual Status ReleaseRegion(uint64_t handle) = 0;
  // Lends `peer` a zeroed region of this engine's pool: completes with
  // value = its id and message = a Buffer over its bytes that does not own
  // them (the host's to read and write until the region ends).
  virtual void LendRegion(uint64_t op_id, const Uri& peer, const transport::RegionSpec& spec) = 0;
  // Lends `peer` the host's own `memory` (valid until the region ends;
  // managed, it must lie in the send area): completes with value = its id.
  virtual void LendMemory(uint64_t op_id, const Uri& peer, std::span<std::byte> memory,
                          uint8_t access, uint32_t lifetime_ms) = 0;
  virtual Status RevokeRegion(uint64_t region) = 0;
  // A region this engine lent (asked or not): its bytes; empty when gone.
  virtual std::span<std::byte> LentRegionBytes(uint64_t region) = 0;
  virtual bool PopRegionEvent(transport::RegionEvent* out) = 0;

  // --- serving ---
  virtual void SetServed(uint32_t method, bool served) = 0;
  // `priority` as Call's; a managed engine answers at the transport's
  // choice whatever it is (its answers travel through wharfd, which sets no
  // per-application priority yet).
  virtual void Respond(const ServerCallRef& call, Status status, Buffer payload = Buffer(),
                       transport::MessagePriority priority = transport::kPriorityBySize) = 0;

  // Completes `op_id` once every operation before it has taken effect
  // (Listen, SetServed): at once in process; managed, when wharfd has
  // executed the commands before it, so that a peer acting next finds them.
  virtual void Sync(uint64_t op_id) = 0;
  // Completes `op_id` with kCancelled if still pending.
  virtual void Cancel(uint64_t op_id) = 0;
  // Fails everything pending with `why` (the host is closing).
  virtual void Shutdown(const Status& why) = 0;

  // --- batching ---
  // Between BeginBatch and the matching EndBatch (they nest), what the calls
  // above send may wait and leave together at EndBatch or the next Poll: one
  // system call (one GSO send per peer over homa) instead of one each, or,
  // managed, one doorbell to wharfd. An unmatched EndBatch is ignored.
  virtual void BeginBatch() {}
  virtual void EndBatch() {}

  // --- progress ---
  virtual transport::PollResult Poll() = 0;
  virtual TimeNs NextDeadline() const = 0;
  // Every fd whose readability means Poll() has work.
  virtual void AppendReadableFds(std::vector<int>* fds) const = 0;
  // Called by a thread about to sleep on those fds, after its last Poll:
  // false means work arrived meanwhile (do not sleep). Managed mode raises
  // its "wake me" flag here.
  virtual bool PrepareToSleep() { return true; }
  // Whether the thread driving this engine spins waiting for it with no work
  // of its own (true: its last turn found nothing), or goes back to work
  // (false). Managed mode tells wharfd (the completion ring's idle hint),
  // which then keeps a CPU the two share longer before yielding it.
  virtual void SetIdle(bool /*idle*/) {}
  // From now on an application sleeps on the fds in its own loop (it took
  // the endpoint's fd), without PrepareToSleep: keep them signalling.
  virtual void KeepAwake() {}
  // A Buffer for a message to send. Managed mode places it in the shared
  // heap, so sending it copies nothing. Under the host's lock like the rest.
  virtual Buffer AllocateBuffer(size_t size) { return Buffer::Allocate(size); }
  // Counters: "engine.*" then the transports'.
  virtual std::vector<std::pair<std::string, uint64_t>> Counters() const = 0;
  // Inside the sink's OnComplete for a call's answer that came from a peer:
  // when the kernel sent the request and received the answer
  // (transport::MessageEvent's sent_ns and received_ns, monotonic), each 0
  // when not known; both 0 at any other time.
  virtual KernelStamps completing_stamps() const { return {}; }
};

}  // namespace wharf::engine
