// daemon/receive_area.h: ReceiveArea, the receive half of one application's
// heap as wharfd fills it: the allocator of its ranges, the messages homa
// receives straight into it (placed receives) and the copies of the others.
// It holds no completion entries and no ring (CompletionOutbox asks it to
// deliver each payload), and nothing of the send half (SendLoans).
//
// Placed receives: homa receives a message straight into the area
// (AllocateReceive, asked at its first packet), and Deliver hands it over as
// it lies: no buffer of wharfd's own, no second copy. The range is the
// message with its 32-byte frame header in front; handed over, the
// allocation is known by the payload's offset (HeapAllocator::Narrow), the
// one the application releases. A placed message that never reaches the
// application (an engine frame, a refused request, a closing session, a
// sender that stopped half-way) gives its range back when its Buffer goes.
//
// What wharfd reads back from that memory, which the application can write
// at any time: only the frame header, once (engine::UnwrapFrame copies each
// field out before using it); a header scribbled on garbles only that
// application's own message.
//
// Regions: the area is also the pool the application's ucx:// transport
// lends regions from (transport::RegionPool), so a holder's writes land in
// the application's heap, where it reads them in place. Regions take at
// most half the area, and the application can never release one as if it
// were a delivered buffer.
//
// Owned by the AppSession (made at Attach); single-threaded: the daemon's
// loop thread. Buffers over the area hold the region, so the mapping
// outlives each of them; one that outlives the ReceiveArea gives nothing
// back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "shm/heap_allocator.h"
#include "shm/layout.h"
#include "shm/region.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "transport/message_transport.h"
#include "transport/remote_memory.h"
#include "wharf/buffer.h"
#include "wharf/result.h"

namespace wharf::daemon {

class ReceiveArea final : public transport::ReceiveAllocator, public transport::RegionPool {
 public:
  // The area [first, first + bytes) of `region`'s heap.
  static Result<std::unique_ptr<ReceiveArea>> Create(std::shared_ptr<shm::Region> region,
                                                     uint64_t first, uint64_t bytes);
  ~ReceiveArea() override;
  ReceiveArea(const ReceiveArea&) = delete;
  ReceiveArea& operator=(const ReceiveArea&) = delete;

  // Messages are placed only between these (the application is attached
  // and not closing); otherwise AllocateReceive gives nothing.
  void StartPlacing() { placing_ = true; }
  void StopPlacing() { placing_ = false; }

  // transport::ReceiveAllocator: a range for a message homa is about to
  // receive, while ranges not yet handed over take at most a quarter of the
  // area (a message can be half received for as long as its sender stalls,
  // and an application that releases nothing must still leave room for the
  // copies of the others). Empty when there is no such room.
  Buffer AllocateReceive(size_t bytes) override;

  // Gives `payload` its range of the area and points `entry` at it
  // (heap_offset, length): handed over where it lies if it was placed here,
  // else copied into a new range. `payload` is empty afterwards. False, and
  // nothing changes, when the area has no room for the copy: the
  // application must release buffers first.
  bool Deliver(shm::Descriptor& entry, Buffer& payload);

  // The application gives back the buffer wharfd delivered at `offset`,
  // `length` bytes long, and up to three more by their start (0 names none:
  // the area never starts at offset 0). kInvalidArgument for a range that is
  // not a delivered buffer (or of another length); the ranges before it are
  // freed.
  Status Release(uint64_t offset, uint64_t length, std::span<const uint64_t> more);

  // transport::RegionPool: a block for a region (see above); empty when
  // regions hold half the area already or there is no room.
  std::span<std::byte> Take(uint64_t bytes, uint64_t alignment) override;
  void Give(std::span<std::byte> block) override;
  // Where `bytes` (a region's block) lies in the heap.
  uint64_t HeapOffsetOf(std::span<const std::byte> bytes) const {
    return static_cast<uint64_t>(bytes.data() - region_->heap().data());
  }
  // Whether `bytes` is a region Take handed out (and not given back).
  bool HoldsRegion(std::span<const std::byte> bytes) const {
    return !bytes.empty() && region_->heap().data() <= bytes.data() &&
           region_blocks_.contains(HeapOffsetOf(bytes));
  }
  uint64_t region_bytes() const { return region_bytes_; }

  uint64_t capacity() const { return area_.capacity(); }
  uint64_t bytes_in_use() const { return area_.bytes_in_use(); }
  // Bytes of placed Buffers not handed over yet (held by homa or the engine).
  uint64_t placed_bytes() const { return placed_bytes_; }
  // Payload bytes delivered into the area, and of those deliveries, the
  // messages handed over where homa placed them (no copy).
  uint64_t bytes_received() const { return bytes_received_; }
  uint64_t received_in_place() const { return received_in_place_; }

 private:
  // Lends ranges of the area as Buffers and gives them back (ReleasePlaced)
  // when they are done with. Holds the region, so the mapping outlives every
  // Buffer over it, even one the area outlives.
  class PlacedOwner final : public BufferOwner {
   public:
    PlacedOwner(ReceiveArea* area, std::shared_ptr<shm::Region> region)
        : area_(area), region_(std::move(region)) {}
    void Release(std::span<std::byte> whole) noexcept override;
    void Detach() { area_ = nullptr; }

   private:
    ReceiveArea* area_;  // null once the area is gone
    std::shared_ptr<shm::Region> region_;
  };

  ReceiveArea(std::shared_ptr<shm::Region> region, shm::HeapAllocator area);
  // Hands a placed payload over as it lies (its range becomes the entry's);
  // false if it was not placed here.
  bool HandOver(shm::Descriptor& entry, Buffer& payload);
  // A placed Buffer is done with the range at `block_offset`.
  void ReleasePlaced(uint64_t block_offset, uint64_t bytes);

  // Constant after construction.
  const std::shared_ptr<shm::Region> region_;
  const std::shared_ptr<PlacedOwner> owner_;

  shm::HeapAllocator area_;    // ranges of the area: offsets into the heap
  bool placing_ = false;       // see StartPlacing
  uint64_t placed_bytes_ = 0;  // bytes in placed Buffers not handed over
  bool handing_over_ = false;  // ReleasePlaced keeps the range (HandOver)
  uint64_t bytes_received_ = 0;
  uint64_t received_in_place_ = 0;  // messages
  // Regions' blocks: a region's first byte -> its block (aligned regions
  // start inside it), and the blocks, which Release refuses.
  absl::flat_hash_map<uint64_t, uint64_t> region_blocks_;
  absl::flat_hash_set<uint64_t> region_block_offsets_;
  uint64_t region_bytes_ = 0;
};

}  // namespace wharf::daemon
