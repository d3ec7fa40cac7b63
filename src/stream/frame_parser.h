// stream/frame_parser.h: FrameParser, the receive side of one TCP connection:
// turns the byte stream into frames and reassembles chunked messages, under a
// memory budget shared by every connection of the transport. No sockets: the
// connection feeds it what it read (Consume), or lets it name where the next
// payload bytes should land (DirectTarget) so large chunks are read straight
// into the message's buffer.
//
// Memory: a message of at most Limits::max_whole_bytes gets its whole buffer
// at its first chunk (from the LargeBufferPool when it is large), so its bytes
// are read into place once and never copied again; those buffers are charged
// in full, but together they may hold only half of IncomingBudget::limit, so
// claims alone never take the room other messages need. Any other message's
// buffer is not sized by what the peer claims: it grows as chunks arrive, to
// min(total, max(bytes needed for this chunk, 2 x bytes received)), so the
// memory committed to it is at most 2 x its bytes received + one chunk
// (chunks are at most the configured chunk limit). The sum over all messages
// is held under IncomingBudget::limit; a message whose buffer would pass it
// is refused (its buffer freed, its remaining bytes read and dropped) and
// reported through Sink::OnMessageRefused.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_map>

#include "transport/large_buffer_pool.h"
#include "wharf/buffer.h"
#include "wharf/result.h"
#include "wire/stream_frame.h"

namespace wharf::stream {

// Bytes held by partially received messages, across the connections of one
// transport. Owned by the transport; parsers borrow it. Single-threaded.
struct IncomingBudget {
  uint64_t limit = 0;
  uint64_t used = 0;
  uint64_t peak = 0;
  // Of `used`: whole buffers given on a claimed length (FrameParser's first
  // chunk rule). At most limit / 2.
  uint64_t whole_used = 0;

  bool TryReserve(uint64_t bytes) {
    if (bytes > limit || used > limit - bytes) return false;
    used += bytes;
    if (used > peak) peak = used;
    return true;
  }
  void Release(uint64_t bytes) { used -= bytes; }
  bool TryReserveWhole(uint64_t bytes) {
    if (bytes > limit / 2 - whole_used || !TryReserve(bytes)) return false;
    whole_used += bytes;
    return true;
  }
  void ReleaseWhole(uint64_t bytes) {
    Release(bytes);
    whole_used -= bytes;
  }
};

class FrameParser {
 public:
  // What the sink wants done with a message whose first chunk arrived.
  enum class Decision : uint8_t { kAccept, kDiscard };

  // Receives what the parser finds, in stream order. Borrowed; must outlive
  // the parser. A non-ok Status from a callback stops the parse and is
  // returned from Consume (the connection then closes).
  class Sink {
   public:
    virtual ~Sink() = default;
    // The connection's first frame (exactly once).
    virtual Status OnHello(const wire::StreamHello& hello) = 0;
    // Every frame header after HELLO, before its payload (ack floors on
    // REQUEST chunks, ACK, PING, PONG, ABORT).
    virtual Status OnFrame(const wire::StreamFrameHeader& header) = 0;
    // The first chunk (offset 0) of a REQUEST or RESPONSE.
    virtual Result<Decision> OnMessageStart(const wire::StreamFrameHeader& first) = 0;
    // A whole accepted message; `message` holds exactly its bytes.
    virtual void OnMessage(wire::StreamFrameType type, uint64_t rpc_id, Buffer message) = 0;
    // An accepted message dropped because the budget ran out.
    virtual void OnMessageRefused(wire::StreamFrameType type, uint64_t rpc_id,
                                  uint32_t length) = 0;
  };

  struct Limits {
    uint32_t max_chunk_bytes = 64u << 10;
    // Messages started but not finished on one connection. A sender that
    // keeps every message running (no sane SRPT sender does) is cut off.
    size_t max_assemblies = 4096;
    // Messages up to this long get their whole buffer at their first chunk
    // (while whole buffers hold under half the budget); longer ones grow.
    uint32_t max_whole_bytes = 8u << 20;
  };

  // Payloads shorter than this are copied out of the connection's read
  // buffer; longer ones are worth a read straight into the message.
  static constexpr size_t kMinDirectBytes = 4096;
  // Messages longer than this make ScratchLimit bound reads.
  static constexpr size_t kBulkBytes = 2 * kMinDirectBytes;

  // `pool` (borrowed, may be null: plain heap buffers) supplies whole
  // buffers of at least LargeBufferPool::kMinBytes.
  FrameParser(const Limits& limits, IncomingBudget* budget, Sink* sink,
              transport::LargeBufferPool* pool = nullptr);
  ~FrameParser();  // releases the budget of unfinished messages
  FrameParser(const FrameParser&) = delete;
  FrameParser& operator=(const FrameParser&) = delete;

  // Parses all of `bytes` (the next bytes of the stream).
  Status Consume(std::span<const std::byte> bytes);

  // Where the next bytes of the stream belong when they are payload of an
  // accepted message and at least kMinDirectBytes of the chunk remain (else
  // empty). After reading n <= size() bytes there, call CommitDirect(n).
  std::span<std::byte> DirectTarget();
  Status CommitDirect(size_t n);

  // When DirectTarget is empty: how many bytes are worth reading into the
  // connection's read buffer. Unlimited (SIZE_MAX) unless a message of more
  // than kBulkBytes is being received here: then only the rest of the frame
  // part under way, the next header and kMinDirectBytes, so that the bulk of
  // the next chunk (most likely that message's) lands in place through
  // DirectTarget instead of being read into the buffer and copied.
  size_t ScratchLimit() const;

  // Stops keeping the bytes of a message being received (its RPC ended): its
  // memory is released and the rest of it is read and dropped.
  void Discard(wire::StreamFrameType type, uint64_t rpc_id);

  // The peer closed its side: an error if it stopped inside a frame.
  Status OnEof() const;

  bool hello_seen() const { return hello_seen_; }
  size_t assemblies() const { return assemblies_.size(); }
  // Bytes this parser holds charged to the budget.
  uint64_t buffered_bytes() const { return buffered_bytes_; }

 private:
  enum class State : uint8_t { kHeader, kHelloBody, kPayload };

  struct Key {
    wire::StreamFrameType type;
    uint64_t rpc_id;
    friend bool operator==(const Key&, const Key&) = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const noexcept {
      return (k.rpc_id * 0x9e3779b97f4a7c15ULL) ^ static_cast<size_t>(k.type);
    }
  };
  // One message being received. `buffer.size()` is its capacity, charged to
  // the budget (as a whole buffer when `whole`); `received` bytes of it are
  // filled. Discarded messages keep only the counts (to check that later
  // chunks continue where they should).
  struct Assembly {
    uint32_t total = 0;
    uint32_t received = 0;
    bool discard = false;
    bool whole = false;
    bool bulk = false;  // counted in bulk_assemblies_: accepted, over kBulkBytes
    Buffer buffer;
  };

  Status OnHeader();
  Status StartChunk(const wire::StreamFrameHeader& h);
  // Makes room for `need` bytes in `a`, or refuses the message.
  void Grow(const Key& key, Assembly& a, uint64_t need);
  // Gives `a` its whole buffer now, if the rules allow (see Memory above).
  void TryWhole(Assembly& a);
  void Refuse(const Key& key, Assembly& a);
  Status FinishChunk();
  // Frees `a`'s buffer (its budget back) and stops counting it as bulk.
  void ReleaseBuffer(Assembly& a);

  Limits limits_;
  IncomingBudget* budget_;
  Sink* sink_;
  transport::LargeBufferPool* pool_;

  State state_ = State::kHeader;
  bool hello_seen_ = false;
  // The header (or HELLO body) being read: bytes so far.
  std::array<std::byte, wire::kStreamHeaderBytes> partial_{};
  size_t partial_bytes_ = 0;
  // The chunk whose payload is arriving.
  wire::StreamFrameHeader chunk_;
  Key chunk_key_{};
  uint32_t payload_left_ = 0;

  std::unordered_map<Key, Assembly, KeyHash> assemblies_;
  uint64_t buffered_bytes_ = 0;
  // Assemblies with `bulk` set (see ScratchLimit).
  size_t bulk_assemblies_ = 0;
};

}  // namespace wharf::stream
