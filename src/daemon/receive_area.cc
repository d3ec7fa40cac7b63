// ReceiveArea: placed receives, copies into the area and the application's
// releases of what it was given.
#include "daemon/receive_area.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace wharf::daemon {

void ReceiveArea::PlacedOwner::Release(std::span<std::byte> whole) noexcept {
  if (area_ == nullptr) return;
  area_->ReleasePlaced(static_cast<uint64_t>(whole.data() - region_->heap().data()),
                       whole.size());
}

Result<std::unique_ptr<ReceiveArea>> ReceiveArea::Create(std::shared_ptr<shm::Region> region,
                                                         uint64_t first, uint64_t bytes) {
  WHARF_ASSIGN_OR_RETURN(shm::HeapAllocator area, shm::HeapAllocator::Create(first, bytes));
  return std::unique_ptr<ReceiveArea>(new ReceiveArea(std::move(region), std::move(area)));
}

ReceiveArea::ReceiveArea(std::shared_ptr<shm::Region> region, shm::HeapAllocator area)
    : region_(std::move(region)),
      owner_(std::make_shared<PlacedOwner>(this, region_)),
      area_(std::move(area)) {}

ReceiveArea::~ReceiveArea() { owner_->Detach(); }

Buffer ReceiveArea::AllocateReceive(size_t bytes) {
  if (!placing_) return Buffer();
  if (placed_bytes_ + bytes > area_.capacity() / 4) return Buffer();
  Result<uint64_t> at = area_.Allocate(bytes);
  if (!at.ok()) return Buffer();
  placed_bytes_ += bytes;
  return Buffer::Wrap(*region_->HeapRange(*at, bytes), owner_);
}

bool ReceiveArea::Deliver(shm::Descriptor& entry, Buffer& payload) {
  if (HandOver(entry, payload)) return true;
  Result<uint64_t> at = area_.Allocate(payload.size());
  if (!at.ok()) return false;
  std::span<std::byte> dst = *region_->HeapRange(*at, payload.size());
  std::memcpy(dst.data(), payload.data(), payload.size());
  bytes_received_ += payload.size();
  entry.heap_offset = *at;
  entry.length = payload.size();
  payload = Buffer();
  return true;
}

bool ReceiveArea::HandOver(shm::Descriptor& entry, Buffer& payload) {
  if (payload.owner() != owner_.get()) return false;
  const auto at = static_cast<uint64_t>(payload.data() - region_->heap().data());
  const uint64_t size = payload.size();
  if (!area_.Narrow(at - payload.headroom(), at, size).ok()) return false;
  handing_over_ = true;
  payload = Buffer();  // ReleasePlaced keeps the range: it is the entry's now
  handing_over_ = false;
  bytes_received_ += size;
  ++received_in_place_;
  entry.heap_offset = at;
  entry.length = size;
  return true;
}

void ReceiveArea::ReleasePlaced(uint64_t block_offset, uint64_t bytes) {
  placed_bytes_ -= std::min(placed_bytes_, bytes);
  if (handing_over_) return;
  (void)area_.Free(block_offset);
}

std::span<std::byte> ReceiveArea::Take(uint64_t bytes, uint64_t alignment) {
  if (bytes == 0 || alignment == 0 || (alignment & (alignment - 1)) != 0) return {};
  // The allocator aligns to a cache line: more is had by taking more.
  const uint64_t extra = alignment > shm::HeapAllocator::kDefaultAlignment
                             ? alignment - shm::HeapAllocator::kDefaultAlignment
                             : 0;
  if (region_bytes_ + bytes + extra > area_.capacity() / 2) return {};
  Result<uint64_t> block = area_.Allocate(bytes + extra);
  if (!block.ok()) return {};
  const uint64_t start = (*block + alignment - 1) / alignment * alignment;
  region_blocks_.emplace(start, *block);
  region_block_offsets_.insert(*block);
  region_bytes_ += bytes + extra;
  return *region_->HeapRange(start, bytes);
}

void ReceiveArea::Give(std::span<std::byte> block) {
  auto it = region_blocks_.find(HeapOffsetOf(block));
  if (it == region_blocks_.end()) return;
  const uint64_t offset = it->second;
  region_bytes_ -= std::min<uint64_t>(region_bytes_, area_.Size(offset).value_or(0));
  region_block_offsets_.erase(offset);
  region_blocks_.erase(it);
  (void)area_.Free(offset);
}

Status ReceiveArea::Release(uint64_t offset, uint64_t length, std::span<const uint64_t> more) {
  if (region_block_offsets_.contains(offset) ||
      std::any_of(more.begin(), more.end(),
                  [this](uint64_t next) { return region_block_offsets_.contains(next); })) {
    return InvalidArgumentError("offset " + std::to_string(offset) +
                                ": a region's memory, not a buffer to release");
  }
  Result<uint64_t> size = area_.Size(offset);
  if (!size.ok()) {
    return InvalidArgumentError("offset " + std::to_string(offset) +
                                " is not a buffer wharfd delivered (released twice?)");
  }
  if (*size != length) {
    return InvalidArgumentError("buffer at " + std::to_string(offset) + " has " +
                                std::to_string(*size) + " bytes, not " + std::to_string(length));
  }
  (void)area_.Free(offset);
  for (uint64_t next : more) {
    if (next != 0 && !area_.Free(next).ok()) {
      return InvalidArgumentError("offset " + std::to_string(next) +
                                  " is not a buffer wharfd delivered (released twice?)");
    }
  }
  return OkStatus();
}

}  // namespace wharf::daemon
