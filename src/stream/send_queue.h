// stream/send_queue.h: SendQueue, the send side of one TCP connection: the
// messages queued on it, their chunking and SRPT order, control frames, and
// the bookkeeping of partial writes. No sockets: Prepare fills an iovec array
// for one writev, Commit says how many bytes the kernel took.
//
// Stream order within one writev: the rest of a chunk a previous writev left
// half-written (framing demands it goes first), then control frames (HELLO,
// ACK, PING, PONG, ABORT) in the order queued, then chunks. Each chunk is
// picked from the message with the fewest bytes left to pick (SRPT; ties go
// to the older message), so a short message queued behind a long one waits
// for at most the chunk being written. Chunks are picked tentatively: those
// the kernel did not take at all are put back, so the SRPT choice is made
// again next time. Payload is never copied: iovecs point into the message's
// Buffer, which the owner keeps alive until the message is finished or
// removed. The one exception is Remove() of a message whose chunk is half
// written: the rest of that chunk is copied so the stream stays framed.
#pragma once

#include <sys/uio.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <set>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "wharf/buffer.h"
#include "wire/stream_frame.h"

namespace wharf::stream {

// Owned by its Connection. Single-threaded. Between Prepare and Commit no
// other call may be made (the iovecs point into the queue's state).
class SendQueue {
 public:
  using Handle = uint64_t;  // 0 is never a handle

  struct Finished {
    Handle handle;
    wire::StreamFrameType type;
    uint64_t rpc_id;
  };

  // What Remove found.
  struct Removed {
    bool started = false;        // some of the message reached the kernel
    bool will_complete = false;  // and the part still owed (a half-written
                                 // last chunk) completes it at the receiver
  };

  explicit SendQueue(uint32_t chunk_bytes) : chunk_bytes_(chunk_bytes) {}

  // Queues REQUEST or RESPONSE `bytes` (borrowed until Finished or Remove).
  Handle Add(wire::StreamFrameType type, uint64_t rpc_id, const Buffer& bytes);
  // Drops a queued message; the rest of a half-written chunk is still sent.
  Removed Remove(Handle handle);
  bool Contains(Handle handle) const { return messages_.contains(handle); }
  bool Started(Handle handle) const;

  // Queues a control frame (header plus optional body, e.g. HELLO's).
  void AddControl(const wire::StreamFrameHeader& header, std::span<const std::byte> body = {});

  // True when Prepare would produce something.
  bool HasWork() const { return tail_.active || control_sent_ < control_.size() || !ranking_.empty(); }
  // Bytes not yet handed to the kernel (unpicked payload, control, the
  // half-written chunk): what a new message would wait behind.
  uint64_t queued_bytes() const;
  size_t num_messages() const { return messages_.size(); }

  // Fills `iov` (at least 5 entries) with up to about `max_bytes` of stream (always at least one
  // chunk when anything is queued). REQUEST chunks carry `ack_floor`. Returns
  // the number of iovecs used (0: nothing to send). *carried_floor is set
  // when a REQUEST header in the batch carries the floor.
  size_t Prepare(std::span<iovec> iov, size_t max_bytes, uint64_t ack_floor, bool* carried_floor);
  // The kernel accepted `written` bytes of the last Prepare. Messages whose
  // last byte went out are appended to *finished and forgotten.
  void Commit(size_t written, std::vector<Finished>* finished);

  // Every queued message, for a connection that closes.
  template <typename Fn>
  void ForEachMessage(Fn&& fn) const {
    for (const auto& [handle, m] : messages_) fn(handle, m.type, m.rpc_id);
  }

 private:
  struct Message {
    wire::StreamFrameType type;
    uint64_t rpc_id;
    const Buffer* bytes;
    uint32_t length;
    uint32_t next_offset = 0;  // first byte not yet picked into a chunk
    bool all_picked = false;   // every chunk picked (needed for 0-byte messages)
    bool started = false;
    bool ranked = false;
    uint64_t rank_key = 0;     // remaining bytes when inserted in ranking_
  };
  // A chunk (or the control run) placed in the current batch.
  struct Piece {
    enum class Kind : uint8_t { kTail, kControl, kChunk } kind;
    Handle handle = 0;
    uint32_t offset = 0;
    uint32_t length = 0;
    size_t bytes = 0;      // stream bytes of the piece (header + payload)
    size_t header = 0;     // index into batch_headers_ (kChunk)
  };
  // The chunk a writev left half-written. `owned` holds the rest of its
  // payload once its message was removed.
  struct Tail {
    bool active = false;
    Handle handle = 0;  // 0 once the message was removed
    bool last_chunk = false;
    std::array<std::byte, wire::kStreamHeaderBytes> header{};
    size_t header_done = 0;
    const std::byte* payload = nullptr;
    size_t payload_left = 0;
    std::vector<std::byte> owned;
  };

  void Rank(Handle handle, Message& m);
  void Unrank(Handle handle, Message& m);
  void FinishMessage(Handle handle, std::vector<Finished>* finished);

  uint32_t chunk_bytes_;
  Handle next_handle_ = 1;
  std::unordered_map<Handle, Message> messages_;
  // SRPT order of messages with chunks left to pick: (bytes left, handle).
  std::set<std::pair<uint64_t, Handle>> ranking_;
  uint64_t unpicked_bytes_ = 0;  // payload bytes not yet picked, over all messages

  std::vector<std::byte> control_;
  size_t control_sent_ = 0;

  Tail tail_;

  std::vector<Piece> batch_;
  std::vector<std::array<std::byte, wire::kStreamHeaderBytes>> batch_headers_;
};

}  // namespace wharf::stream
