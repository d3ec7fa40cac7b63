// daemon/send_loans.h: SendLoans, the ranges of one application's send area
// (the first half of its heap) that wharfd lends to the engine as Buffers,
// so that a send copies nothing, and the operations whose ranges came back.
// The application may reuse a range only once it is told so: with its
// operation's completion (kFlagSendReleased) when the release came first,
// else in kSendReleased entries. Which entries go out, and when, is
// CompletionOutbox's business; the receive half is ReceiveArea's.
//
// Owned by the AppSession (made at Attach); single-threaded: the daemon's
// loop thread, which is also where the engine drops the Buffers. Each
// Buffer holds the region, so the mapping outlives it; one that outlives
// the SendLoans tells nobody.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "absl/container/flat_hash_map.h"

#include "shm/commands.h"
#include "shm/layout.h"
#include "shm/region.h"
#include "wharf/buffer.h"

namespace wharf::daemon {

class SendLoans {
 public:
  explicit SendLoans(std::shared_ptr<shm::Region> region);
  ~SendLoans();
  SendLoans(const SendLoans&) = delete;
  SendLoans& operator=(const SendLoans&) = delete;

  // Operation `cookie`'s payload, `length` bytes at `heap_offset`, as a
  // Buffer over the send area (no copy); the engine may prepend its frame
  // in the up to Buffer::kHeadroom bytes before it (the application's own
  // memory, which its allocator leaves free for that). The range must lie
  // in the heap (the validator checked it); length 0 lends nothing.
  Buffer Lend(uint64_t cookie, uint64_t heap_offset, uint64_t length) {
    if (length == 0) return Buffer();
    const uint64_t headroom = std::min<uint64_t>(heap_offset, Buffer::kHeadroom);
    const uint64_t start = heap_offset - headroom;
    std::span<std::byte> whole = *region_->HeapRange(start, length + headroom);
    if (!lent_.try_emplace(start, cookie).second) lent_again_.emplace(start, cookie);
    bytes_lent_ += length;
    return Buffer::Wrap(whole, owner_, headroom);
  }

  // Whether `b` is one of our loans (a region read's destination).
  bool Owns(const Buffer& b) const { return b.owner() != nullptr && b.owner() == owner_.get(); }

  // The range starting at `heap_offset` came back from the engine: its
  // operation's cookie waits for the application to be told (unless
  // StopTelling was called). A range lent twice is told once per lending.
  void NoteReleased(uint64_t heap_offset);
  // Whether `cookie`'s range came back and was not told yet; it is told now
  // (it leaves). Looked for near the front only, where a call's release is
  // when its response completes it.
  bool TakeReleased(uint64_t cookie) {
    return released_head_ < released_.size() && TakeReleasedNearFront(cookie);
  }
  bool has_released() const { return released_head_ < released_.size(); }
  // Every cookie not told yet, as kSendReleased entries of up to four
  // cookies each (cookie, aux[0..2]), in release order: `emit(entry)`.
  template <typename Emit>
  void DrainReleased(Emit&& emit);
  // The application is gone: releases from now on are not told.
  void StopTelling() { telling_ = false; }

  // Ranges lent and not yet back.
  size_t lent() const { return lent_.size() + lent_again_.size(); }
  // Payload bytes lent so far (without headroom).
  uint64_t bytes_lent() const { return bytes_lent_; }

 private:
  // Tells the SendLoans (NoteReleased) when a Buffer is done with its range.
  // Holds the region, so the mapping outlives every Buffer over it, even
  // one the SendLoans outlives.
  class LoanOwner final : public BufferOwner {
   public:
    LoanOwner(SendLoans* loans, std::shared_ptr<shm::Region> region)
        : loans_(loans), region_(std::move(region)) {}
    void Release(std::span<std::byte> whole) noexcept override;
    void Detach() { loans_ = nullptr; }

   private:
    SendLoans* loans_;  // null once the SendLoans is gone
    std::shared_ptr<shm::Region> region_;
  };

  bool TakeReleasedNearFront(uint64_t cookie);

  // Constant after construction.
  const std::shared_ptr<shm::Region> region_;
  const std::shared_ptr<LoanOwner> owner_;

  // Ranges lent: heap offset of the range (headroom included) -> cookie, in
  // an open-addressing map (a lookup and an erase per RPC); the same range
  // lent again while still lent (rare) goes to lent_again_.
  absl::flat_hash_map<uint64_t, uint64_t> lent_;
  std::unordered_multimap<uint64_t, uint64_t> lent_again_;
  // Cookies of ranges back but not told (0: told with a completion), in
  // release order; released_head_ is the first not yet told.
  std::vector<uint64_t> released_;
  size_t released_head_ = 0;
  bool telling_ = true;  // false after StopTelling
  uint64_t bytes_lent_ = 0;
};

template <typename Emit>
void SendLoans::DrainReleased(Emit&& emit) {
  shm::Descriptor d{};
  size_t in_entry = 0;
  for (size_t i = released_head_; i < released_.size(); ++i) {
    if (released_[i] == 0) continue;
    if (in_entry == 0) {
      d = shm::Descriptor{};
      d.opcode = static_cast<uint16_t>(shm::Opcode::kSendReleased);
      d.cookie = released_[i];
    } else {
      d.aux[in_entry - 1] = released_[i];
    }
    if (++in_entry == 4) {
      emit(d);
      in_entry = 0;
    }
  }
  if (in_entry > 0) emit(d);
  released_.clear();
  released_head_ = 0;
}

}  // namespace wharf::daemon
