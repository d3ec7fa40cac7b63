// stream/write_batcher.h: WriteBatcher, when the TCP transport writes its
// connections: the list of connections with frames queued since they were
// last written (the dirty list), and the batch an application holds open
// with BeginBatch/EndBatch. While a batch is open, messages queued by the
// API wait for its end, one writev per connection for the whole burst,
// except that the first kMaxHeldMessages leave at once (the cut), so that the
// peer starts on a burst's head while its tail is still being made (see
// TxBatcher::HeadPackets in src/homa).
//
// It does not write and does not own connections: the transport takes the
// dirty list and writes each connection it still finds open. Header only:
// MarkDirty runs for every message queued.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "stream/connection.h"

namespace wharf::stream {

// Owned by the transport. Single-threaded (the transport's thread).
class WriteBatcher {
 public:
  // Messages of a held batch written before its end.
  static constexpr size_t kMaxHeldMessages = 16;

  // What NoteQueued says about a message an API call just queued.
  enum class Verdict : uint8_t {
    kWriteNow,  // no batch is open
    kHold,      // a batch is open: the message waits for EndBatch
    kCut,       // the message that makes a held batch's head leave now
  };

  // Puts `conn` on the dirty list once (Connection::dirty marks it there);
  // a closed connection is never written again.
  void MarkDirty(Connection& conn) {
    if (conn.dirty || conn.closed()) return;
    conn.dirty = true;
    dirty_.push_back(conn.id());
  }
  bool has_dirty() const { return !dirty_.empty(); }
  // Moves the dirty list into *out (emptied first) and starts a new one;
  // false when there was none. The two vectors trade buffers, so once both
  // have grown, taking allocates nothing. The caller clears each taken
  // connection's `dirty` flag as it writes it.
  bool TakeDirty(std::vector<uint64_t>* out) {
    out->clear();
    if (dirty_.empty()) return false;
    out->swap(dirty_);
    return true;
  }

  // BeginBatch: batches nest; the outermost one starts the count of held
  // messages afresh.
  void Begin() {
    if (depth_++ == 0) {
      held_messages_ = 0;
      cut_ = false;
    }
  }
  // EndBatch: true when it closed the outermost batch (the transport then
  // writes what was held). An End without a Begin is ignored.
  bool End() { return depth_ > 0 && --depth_ == 0; }
  // An API call queued one message (request or response).
  Verdict NoteQueued() {
    if (depth_ == 0) return Verdict::kWriteNow;
    if (++held_messages_ >= kMaxHeldMessages && !cut_) {
      cut_ = true;
      return Verdict::kCut;
    }
    return Verdict::kHold;
  }
  bool batch_open() const { return depth_ > 0; }

 private:
  // Ids of connections with frames queued since they were last written, in
  // the order they were first marked; each at most once (Connection::dirty).
  std::vector<uint64_t> dirty_;
  // Open Begin calls not yet ended.
  int depth_ = 0;
  // Messages queued since the outermost Begin, and whether the cut happened.
  size_t held_messages_ = 0;
  bool cut_ = false;
};

}  // namespace wharf::stream
