// SendQueue: SRPT chunk picking, iovec batches, partial-write accounting.
#include "stream/send_queue.h"

#include <algorithm>

namespace wharf::stream {

SendQueue::Handle SendQueue::Add(wire::StreamFrameType type, uint64_t rpc_id, const Buffer& bytes) {
  const Handle handle = next_handle_++;
  Message m{.type = type,
            .rpc_id = rpc_id,
            .bytes = &bytes,
            .length = static_cast<uint32_t>(bytes.size())};
  unpicked_bytes_ += m.length;
  auto [it, inserted] = messages_.emplace(handle, m);
  Rank(handle, it->second);
  return handle;
}

SendQueue::Removed SendQueue::Remove(Handle handle) {
  auto it = messages_.find(handle);
  if (it == messages_.end()) return {};
  Message& m = it->second;
  Removed removed{.started = m.started};
  if (tail_.active && tail_.handle == handle) {
    // The stream is committed to the rest of this chunk: keep those bytes.
    tail_.owned.assign(tail_.payload, tail_.payload + tail_.payload_left);
    tail_.payload = tail_.owned.data();
    tail_.handle = 0;
    removed.started = true;
    removed.will_complete = tail_.last_chunk;
  }
  Unrank(handle, m);
  unpicked_bytes_ -= m.length - m.next_offset;
  messages_.erase(it);
  return removed;
}

bool SendQueue::Started(Handle handle) const {
  auto it = messages_.find(handle);
  return it != messages_.end() && it->second.started;
}

void SendQueue::AddControl(const wire::StreamFrameHeader& header, std::span<const std::byte> body) {
  // Compact the written prefix before growing.
  if (control_sent_ > 0) {
    control_.erase(control_.begin(), control_.begin() + static_cast<ptrdiff_t>(control_sent_));
    control_sent_ = 0;
  }
  const size_t at = control_.size();
  control_.resize(at + wire::kStreamHeaderBytes + body.size());
  // Control frames are built by the transport from valid fields.
  (void)wire::EncodeStreamHeader(header, std::span(control_).subspan(at, wire::kStreamHeaderBytes));
  std::copy(body.begin(), body.end(), control_.begin() + static_cast<ptrdiff_t>(at + wire::kStreamHeaderBytes));
}

uint64_t SendQueue::queued_bytes() const {
  uint64_t bytes = unpicked_bytes_ + (control_.size() - control_sent_);
  if (tail_.active) bytes += (wire::kStreamHeaderBytes - tail_.header_done) + tail_.payload_left;
  return bytes;
}

void SendQueue::Rank(Handle handle, Message& m) {
  Unrank(handle, m);
  if (m.all_picked) return;
  m.rank_key = m.length - m.next_offset;
  ranking_.emplace(m.rank_key, handle);
  m.ranked = true;
}

void SendQueue::Unrank(Handle handle, Message& m) {
  if (!m.ranked) return;
  ranking_.erase({m.rank_key, handle});
  m.ranked = false;
}

size_t SendQueue::Prepare(std::span<iovec> iov, size_t max_bytes, uint64_t ack_floor,
                          bool* carried_floor) {
  batch_.clear();
  batch_headers_.clear();
  // Header slots must not move while iovecs point at them.
  batch_headers_.reserve(iov.size());
  *carried_floor = false;
  // Room for the tail (2), the control run (1) and one chunk (2).
  if (iov.size() < 5) return 0;
  size_t n = 0;
  size_t bytes = 0;
  if (tail_.active) {
    const size_t header_left = wire::kStreamHeaderBytes - tail_.header_done;
    if (header_left > 0) iov[n++] = {tail_.header.data() + tail_.header_done, header_left};
    if (tail_.payload_left > 0) {
      iov[n++] = {const_cast<std::byte*>(tail_.payload), tail_.payload_left};
    }
    batch_.push_back({.kind = Piece::Kind::kTail, .bytes = header_left + tail_.payload_left});
    bytes += header_left + tail_.payload_left;
  }
  if (control_sent_ < control_.size()) {
    const size_t left = control_.size() - control_sent_;
    iov[n++] = {control_.data() + control_sent_, left};
    batch_.push_back({.kind = Piece::Kind::kControl, .bytes = left});
    bytes += left;
  }
  while (!ranking_.empty() && n + 2 <= iov.size() && bytes < max_bytes) {
    const Handle handle = ranking_.begin()->second;
    Message& m = messages_.at(handle);
    const uint32_t length = std::min(chunk_bytes_, m.length - m.next_offset);
    wire::StreamFrameHeader header{.type = m.type,
                                   .chunk_length = length,
                                   .rpc_id = m.rpc_id,
                                   .message_length = m.length,
                                   .chunk_offset = m.next_offset};
    if (m.type == wire::StreamFrameType::kRequest && ack_floor != 0) {
      header.ack_floor = ack_floor;
      *carried_floor = true;
    }
    const size_t slot = batch_headers_.size();
    batch_headers_.emplace_back();
    (void)wire::EncodeStreamHeader(header, batch_headers_.back());
    iov[n++] = {batch_headers_.back().data(), wire::kStreamHeaderBytes};
    if (length > 0) {
      iov[n++] = {const_cast<std::byte*>(m.bytes->data()) + m.next_offset, length};
    }
    batch_.push_back({.kind = Piece::Kind::kChunk,
                      .handle = handle,
                      .offset = m.next_offset,
                      .length = length,
                      .bytes = wire::kStreamHeaderBytes + length,
                      .header = slot});
    bytes += wire::kStreamHeaderBytes + length;
    m.next_offset += length;
    unpicked_bytes_ -= length;
    if (m.next_offset == m.length) m.all_picked = true;
    Rank(handle, m);
  }
  return n;
}

void SendQueue::Commit(size_t written, std::vector<Finished>* finished) {
  size_t first_untouched = batch_.size();
  for (size_t i = 0; i < batch_.size(); ++i) {
    Piece& p = batch_[i];
    if (written >= p.bytes) {
      written -= p.bytes;
      switch (p.kind) {
        case Piece::Kind::kTail: {
          const Handle handle = tail_.handle;
          const bool last = tail_.last_chunk;
          tail_.active = false;
          tail_.owned.clear();
          if (handle != 0 && last) FinishMessage(handle, finished);
          break;
        }
        case Piece::Kind::kControl:
          control_sent_ += p.bytes;
          break;
        case Piece::Kind::kChunk: {
          Message& m = messages_.at(p.handle);
          m.started = true;
          if (p.offset + p.length == m.length) FinishMessage(p.handle, finished);
          break;
        }
      }
      continue;
    }
    if (written > 0) {
      switch (p.kind) {
        case Piece::Kind::kTail: {
          const size_t header = std::min(written, wire::kStreamHeaderBytes - tail_.header_done);
          tail_.header_done += header;
          tail_.payload += written - header;
          tail_.payload_left -= written - header;
          break;
        }
        case Piece::Kind::kControl:
          control_sent_ += written;
          break;
        case Piece::Kind::kChunk: {
          Message& m = messages_.at(p.handle);
          m.started = true;
          tail_.active = true;
          tail_.handle = p.handle;
          tail_.last_chunk = p.offset + p.length == m.length;
          tail_.header = batch_headers_[p.header];
          tail_.header_done = std::min(written, wire::kStreamHeaderBytes);
          const size_t payload_done = written - tail_.header_done;
          tail_.payload = m.bytes->data() + p.offset + payload_done;
          tail_.payload_left = p.length - payload_done;
          break;
        }
      }
      written = 0;
      continue;
    }
    first_untouched = i;
    break;
  }
  // Chunks the kernel took nothing of go back, latest first, so that each
  // message resumes at its earliest untaken chunk and SRPT picks again.
  for (size_t i = batch_.size(); i-- > first_untouched;) {
    const Piece& p = batch_[i];
    if (p.kind != Piece::Kind::kChunk) continue;
    Message& m = messages_.at(p.handle);
    unpicked_bytes_ += m.next_offset - p.offset;
    m.next_offset = p.offset;
    m.all_picked = false;
    Rank(p.handle, m);
  }
  if (control_sent_ == control_.size()) {
    control_.clear();
    control_sent_ = 0;
  }
  batch_.clear();
}

void SendQueue::FinishMessage(Handle handle, std::vector<Finished>* finished) {
  auto it = messages_.find(handle);
  if (it == messages_.end()) return;
  finished->push_back({handle, it->second.type, it->second.rpc_id});
  Unrank(handle, it->second);
  messages_.erase(it);
}

}  // namespace wharf::stream
