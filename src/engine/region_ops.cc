// RegionOps: one-sided operations in flight, each completed once.
#include "engine/region_ops.h"

#include <string>
#include <utility>

namespace wharf::engine {

RegionOps::RegionOps(const std::vector<transport::MessageTransport*>& transports,
                     PeerFinder find, EngineSink* sink)
    : transports_(transports), find_(std::move(find)) {
  shared_->sink = sink;
}

RegionOps::~RegionOps() {
  shared_->pending.clear();
  shared_->sink = nullptr;
}

void RegionOps::Shared::Finish(uint64_t op_id, Status status, Buffer message, uint64_t value) {
  if (sink == nullptr || pending.erase(op_id) == 0) return;
  sink->OnComplete(op_id, std::move(status), std::move(message), value);
}

std::shared_ptr<RegionOps::Shared> RegionOps::Track(uint64_t op_id) {
  shared_->pending.insert(op_id);
  return shared_;
}

transport::RemoteMemory* RegionOps::Find() const {
  // wharfd asks on every pass (PopEvent): only transports opened since the
  // last look are looked at; a transport's remote memory never changes.
  for (; memory_ == nullptr && scanned_ < transports_.size(); ++scanned_) {
    memory_ = transports_[scanned_]->remote_memory();
  }
  return memory_;
}

Result<transport::RemoteMemory*> RegionOps::Memory() const {
  if (transport::RemoteMemory* memory = Find()) return memory;
  return UnimplementedError("remote memory needs a ucx:// transport: open the endpoint at "
                            "ucx://HOST:PORT, or ask a ucx:// peer for a region first");
}

Result<transport::RemoteMemory*> RegionOps::MemoryFor(const Uri& peer) const {
  WHARF_ASSIGN_OR_RETURN(PeerRef ref, find_(peer));
  transport::RemoteMemory* memory = transports_[ref.transport]->remote_memory();
  if (memory == nullptr) {
    return UnimplementedError(peer.scheme + "://" + peer.address.ToString() +
                              ": remote memory needs ucx://");
  }
  return memory;
}

void RegionOps::Ask(uint64_t op_id, const Uri& peer, const transport::RegionSpec& spec) {
  auto shared = Track(op_id);
  Result<transport::RemoteMemory*> memory = MemoryFor(peer);
  if (!memory.ok()) return shared->Finish(op_id, memory.status());
  (*memory)->Ask(peer.address, spec, [shared, op_id](Result<transport::HeldRegion> held) {
    if (!held.ok()) return shared->Finish(op_id, held.status());
    shared->Finish(op_id, OkStatus(), Buffer(), held->handle);
  });
}

void RegionOps::Read(uint64_t op_id, uint64_t handle, uint64_t offset, Buffer into) {
  auto shared = Track(op_id);
  Result<transport::RemoteMemory*> memory = Memory();
  if (!memory.ok()) return shared->Finish(op_id, memory.status());
  // std::function copies its target: the Buffer rides in a shared_ptr.
  auto buffer = std::make_shared<Buffer>(std::move(into));
  (*memory)->Read(handle, offset, buffer->span(), [shared, op_id, buffer](const Status& s) {
    shared->Finish(op_id, s, s.ok() ? std::move(*buffer) : Buffer());
  });
}

void RegionOps::Write(uint64_t op_id, uint64_t handle, uint64_t offset, Buffer from,
                      std::optional<uint64_t> immediate) {
  auto shared = Track(op_id);
  Result<transport::RemoteMemory*> memory = Memory();
  if (!memory.ok()) return shared->Finish(op_id, memory.status());
  auto buffer = std::make_shared<Buffer>(std::move(from));
  auto done = [shared, op_id, buffer](const Status& s) { shared->Finish(op_id, s); };
  const std::span<const std::byte> bytes = std::as_const(*buffer).span();
  if (immediate) {
    (*memory)->WriteWithImmediate(handle, offset, bytes, *immediate, std::move(done));
  } else {
    (*memory)->Write(handle, offset, bytes, std::move(done));
  }
}

void RegionOps::Atomic(uint64_t op_id, uint64_t handle, uint64_t offset,
                       transport::RegionAtomicOp op, uint64_t value, uint64_t compare) {
  auto shared = Track(op_id);
  Result<transport::RemoteMemory*> memory = Memory();
  if (!memory.ok()) return shared->Finish(op_id, memory.status());
  (*memory)->Atomic(handle, offset, op, value, compare,
                    [shared, op_id](Result<uint64_t> word) {
                      if (!word.ok()) return shared->Finish(op_id, word.status());
                      shared->Finish(op_id, OkStatus(), Buffer(), *word);
                    });
}

Status RegionOps::Release(uint64_t handle) {
  WHARF_ASSIGN_OR_RETURN(transport::RemoteMemory * memory, Memory());
  return memory->Release(handle);
}

Result<transport::LentRegion> RegionOps::Lend(const Uri& peer, const transport::RegionSpec& spec) {
  WHARF_ASSIGN_OR_RETURN(transport::RemoteMemory * memory, MemoryFor(peer));
  return memory->LendFromPool(peer.address, spec);
}

Result<uint64_t> RegionOps::LendMemory(const Uri& peer, std::span<std::byte> memory,
                                       uint8_t access, uint32_t lifetime_ms) {
  WHARF_ASSIGN_OR_RETURN(transport::RemoteMemory * memory_of_peer, MemoryFor(peer));
  return memory_of_peer->LendMemory(peer.address, memory, access, lifetime_ms);
}

Status RegionOps::Revoke(uint64_t region) {
  WHARF_ASSIGN_OR_RETURN(transport::RemoteMemory * memory, Memory());
  return memory->Revoke(region);
}

std::span<std::byte> RegionOps::LentBytes(uint64_t region) {
  transport::RemoteMemory* memory = Find();
  return memory != nullptr ? memory->LentBytes(region) : std::span<std::byte>();
}

bool RegionOps::PopEvent(transport::RegionEvent* out) {
  transport::RemoteMemory* memory = Find();
  return memory != nullptr && memory->PopEvent(out);
}

void RegionOps::Shutdown(const Status& why) {
  const absl::flat_hash_set<uint64_t> pending = shared_->pending;
  for (uint64_t op_id : pending) shared_->Finish(op_id, why);
}

}  // namespace wharf::engine
