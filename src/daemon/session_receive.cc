// daemon/session_receive.cc: placed receives. homa receives a message
// straight into the application's receive area (AllocateReceive, asked at
// its first packet), and FlushCompletions hands it over as it lies
// (HandOverPlaced): no buffer of wharfd's own, no second copy. The range is
// the message with its 32-byte frame header in front; handed over, the
// allocation is known by the payload's offset (HeapAllocator::Narrow), the
// one the application releases. A placed message that never reaches the
// application (an engine frame, a refused request, a closing session, a
// sender that stopped half-way) gives its range back when its Buffer goes
// (ReleasePlaced).
//
// What wharfd reads back from that memory, which the application can write
// at any time: only the frame header, once (engine::UnwrapFrame copies each
// field out before using it); a header scribbled on garbles only that
// application's own message.
#include "daemon/app_session.h"

namespace wharf::daemon {

Buffer AppSession::AllocateReceive(size_t bytes) {
  if (!attached_ || closing_ || !receive_area_ || receive_owner_ == nullptr) return Buffer();
  // Bounded: a message can be half received for as long as its sender
  // stalls (seconds, until homa gives up on it), and an application that
  // releases nothing must still leave room for the copies of the others.
  if (placed_bytes_ + bytes > receive_area_->capacity() / 4) return Buffer();
  Result<uint64_t> at = receive_area_->Allocate(bytes);
  if (!at.ok()) return Buffer();
  placed_bytes_ += bytes;
  return Buffer::Wrap(*region_->HeapRange(*at, bytes), receive_owner_);
}

bool AppSession::HandOverPlaced(Pending& p) {
  if (receive_owner_ == nullptr || p.payload.owner() != receive_owner_.get()) return false;
  const auto at = static_cast<uint64_t>(p.payload.data() - region_->heap().data());
  const uint64_t size = p.payload.size();
  if (!receive_area_->Narrow(at - p.payload.headroom(), at, size).ok()) return false;
  handing_over_ = true;
  p.payload = Buffer();  // ReleasePlaced keeps the range: it is the entry's now
  handing_over_ = false;
  counters_.bytes_received += size;
  ++counters_.received_in_place;
  p.entry.heap_offset = at;
  p.entry.length = size;
  return true;
}

void AppSession::ReleasePlaced(uint64_t block_offset, uint64_t bytes) {
  placed_bytes_ -= std::min(placed_bytes_, bytes);
  if (handing_over_ || !receive_area_) return;
  (void)receive_area_->Free(block_offset);
}

}  // namespace wharf::daemon
