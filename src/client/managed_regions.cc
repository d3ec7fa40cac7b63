// ManagedRegions: region reads, lendings, lent blocks and events of one
// managed engine.
#include "client/managed_regions.h"

#include <cstring>

#include "shm/commands.h"

namespace wharf::internal {

void ManagedRegions::StartRead(uint64_t op, Buffer area, std::optional<Buffer> copy_to) {
  reads_[op] = {std::move(area), std::move(copy_to)};
}

void ManagedRegions::StartLending(uint64_t op, std::optional<Buffer> block,
                                  std::span<std::byte> bytes) {
  lendings_[op] = {std::move(block), bytes};
}

ManagedRegions::Outcome ManagedRegions::Finish(uint64_t op, Status status, uint64_t value) {
  if (auto read = reads_.find(op); read != reads_.end()) {
    Read r = std::move(read->second);
    reads_.erase(read);
    if (!status.ok()) return {std::move(status), Buffer(), 0};
    // wharfd wrote the bytes into our send-area Buffer.
    if (r.copy_to) {
      std::memcpy(r.copy_to->data(), r.area.data(), r.area.size());
      r.area = std::move(*r.copy_to);
    }
    return {OkStatus(), std::move(r.area), 0};
  }
  auto it = lendings_.find(op);
  if (it == lendings_.end()) return {std::move(status), Buffer(), value};
  Lending lending = std::move(it->second);
  lendings_.erase(it);
  if (!status.ok()) return {std::move(status), Buffer(), 0};  // never lent: the block goes
  views_[value] = lending.bytes;
  Buffer view;
  if (lending.block) {
    lent_blocks_[value] = std::move(*lending.block);
    view = Buffer::Wrap(lending.bytes, nullptr);  // the block stays ours
  }
  return {OkStatus(), std::move(view), value};
}

void ManagedRegions::EndBlock(uint64_t region, TimeNs now) {
  while (!quarantined_.empty() && quarantined_.front().first <= now) quarantined_.pop_front();
  auto it = lent_blocks_.find(region);
  if (it == lent_blocks_.end()) return;
  quarantined_.emplace_back(now + kQuarantineNs, std::move(it->second));
  lent_blocks_.erase(it);
}

void ManagedRegions::Revoked(uint64_t region, TimeNs now) {
  EndBlock(region, now);
  views_.erase(region);
}

void ManagedRegions::OnEvent(const shm::Descriptor& e, std::span<std::byte> bytes, TimeNs now) {
  using Kind = transport::RegionEvent::Kind;
  if (e.status > shm::kRegionEventReturned) return;
  transport::RegionEvent event{.kind = static_cast<Kind>(e.status), .region = e.handle};
  switch (event.kind) {
    case Kind::kImmediate:
      event.value = e.cookie;
      event.offset = e.aux[0];
      event.length = e.aux[1];
      event.bytes = bytes;
      if (!bytes.empty()) views_[e.handle] = bytes;
      break;
    case Kind::kLent:
      event.held = {.handle = e.handle,
                    .size = e.aux[0],
                    .access = static_cast<uint8_t>(e.aux[1]),
                    .expires_ns = now + static_cast<TimeNs>(e.aux[2]) * kNsPerMs};
      break;
    case Kind::kReturned:
      Revoked(e.handle, now);
      break;
    case Kind::kReleased:
      break;
  }
  // wharfd's own cap bounds these too; an application that never takes
  // them must not grow ours.
  if (events_.size() >= kMaxEvents) {
    ++events_dropped_;
    return;
  }
  events_.push_back(event);
}

bool ManagedRegions::PopEvent(transport::RegionEvent* out) {
  if (events_.empty()) return false;
  *out = events_.front();
  events_.pop_front();
  return true;
}

std::span<std::byte> ManagedRegions::LentBytes(uint64_t region) const {
  auto it = views_.find(region);
  return it == views_.end() ? std::span<std::byte>() : it->second;
}

void ManagedRegions::Clear() {
  reads_.clear();
  lendings_.clear();
  views_.clear();
  lent_blocks_.clear();
  quarantined_.clear();
}

}  // namespace wharf::internal
