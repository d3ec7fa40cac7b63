// engine/region_ops.h: RegionOps, the engine's remote-memory operations
// (EngineApi's AskRegion ... PopRegionEvent): each one-sided operation is a
// host operation like a call, ending in one EngineSink::OnComplete, carried
// out by the transport that can (MessageTransport::remote_memory(), today
// ucx://). The regions themselves, their checks and their messages are the
// transport's; RegionOps keeps only the operations in flight, so that each
// completes exactly once: with its result, or with the engine's shutdown
// status, after which the transport's late answer is dropped.
//
// Buffers: a read lands in the Buffer the host passed, which comes back as
// the completion's message; a write's Buffer is kept until the transport is
// done with it. So a host's wait may time out and return while the
// transport still owns the bytes: they stay valid.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "absl/container/flat_hash_set.h"

#include "engine/engine_sink.h"
#include "engine/peer_ref.h"
#include "engine/uri.h"
#include "transport/message_transport.h"
#include "transport/remote_memory.h"
#include "wharf/buffer.h"
#include "wharf/result.h"
#include "wharf/status.h"

namespace wharf::engine {

// Owned by the engine; single-threaded like it.
class RegionOps {
 public:
  // The engine's peer for a URI (opening its scheme's transport on first
  // use), and its transports (index = PeerRef::transport), borrowed.
  using PeerFinder = std::function<Result<PeerRef>(const Uri&)>;
  RegionOps(const std::vector<transport::MessageTransport*>& transports, PeerFinder find,
            EngineSink* sink);
  ~RegionOps();
  RegionOps(const RegionOps&) = delete;
  RegionOps& operator=(const RegionOps&) = delete;

  // Completes with value = the region's handle.
  void Ask(uint64_t op_id, const Uri& peer, const transport::RegionSpec& spec);
  // Completes with message = `into`, filled from the region at `offset`.
  void Read(uint64_t op_id, uint64_t handle, uint64_t offset, Buffer into);
  // `immediate`: the target then gets it as an event.
  void Write(uint64_t op_id, uint64_t handle, uint64_t offset, Buffer from,
             std::optional<uint64_t> immediate);
  // Completes with value = the word as it was.
  void Atomic(uint64_t op_id, uint64_t handle, uint64_t offset, transport::RegionAtomicOp op,
              uint64_t value, uint64_t compare);
  Status Release(uint64_t handle);
  Result<transport::LentRegion> Lend(const Uri& peer, const transport::RegionSpec& spec);
  Result<uint64_t> LendMemory(const Uri& peer, std::span<std::byte> memory, uint8_t access,
                              uint32_t lifetime_ms);
  Status Revoke(uint64_t region);
  std::span<std::byte> LentBytes(uint64_t region);
  bool PopEvent(transport::RegionEvent* out);

  // Completes every operation in flight with `why`; their transport's late
  // answers are dropped.
  void Shutdown(const Status& why);
  size_t in_flight() const { return shared_->pending.size(); }

 private:
  // What the transport's completions reach, kept alive by them: they may
  // run after the engine is gone (a transport cancelling what it still had).
  struct Shared {
    EngineSink* sink = nullptr;  // null once the engine is gone
    absl::flat_hash_set<uint64_t> pending;
    // Completes `op_id` once, if still pending and the engine alive.
    void Finish(uint64_t op_id, Status status, Buffer message = Buffer(), uint64_t value = 0);
  };

  // The transport that holds regions: the first with remote memory (null:
  // none; Memory() says so as a Status).
  transport::RemoteMemory* Find() const;
  Result<transport::RemoteMemory*> Memory() const;
  // The remote memory of `peer`'s transport (opened on first use).
  Result<transport::RemoteMemory*> MemoryFor(const Uri& peer) const;
  // Records op_id as in flight and returns the completion for the
  // transport; nothing else is recorded.
  std::shared_ptr<Shared> Track(uint64_t op_id);

  const std::vector<transport::MessageTransport*>& transports_;
  PeerFinder find_;
  // Memory()'s: the first transport with remote memory, once found, and
  // how many transports it looked at so far.
  mutable transport::RemoteMemory* memory_ = nullptr;
  mutable size_t scanned_ = 0;
  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
};

}  // namespace wharf::engine
