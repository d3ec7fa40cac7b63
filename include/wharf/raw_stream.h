// wharf/raw_stream.h: RawStream, one streaming RPC's bytes: the protocol
// typed streams (wharf/rpc_stream.h) run over a stream connection
// (ConnectOptions::stream_method). Applications use the typed classes; this
// one carries framed messages, half-closes, the server's final status,
// cancellation and flow control, with no protobuf in sight.
//
// On the connection, which is ordered, every message starts with a kind
// byte (StreamFrame):
//   kOpen      client -> server, first: remaining deadline (u64 ns, 0 = none)
//              and metadata (u16 count, then u16 key length, key, u32 value
//              length, value), big-endian
//   kMessage   either way: the payload (a protobuf message)
//   kHalfClose client -> server: the client writes no more
//   kStatus    server -> client, last: StatusCode (u8), then its text
//   kCancel    client -> server: the client gave up (deadline, Cancel)
//   kCredit    either way: the reader consumed this many more payload
//              bytes (u64)
//   kBlocked   either way: the writer waits for credit
// Flow control: a writer keeps at most the window's worth of payload bytes
// unconsumed by the reader (one larger message may go alone); the rest
// waits in the writer's queue, so a slow reader never holds more than a
// window of a fast writer's messages, and the receiving endpoint's
// per-connection limit is never what stops a stream. A reader credits what
// it consumed once that is half a window, and everything as soon as it has
// read all it holds after the writer said it is blocked (a message too big
// for what is left of the window waits for all of it).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "wharf/buffer.h"
#include "wharf/completion.h"
#include "wharf/endpoint.h"
#include "wharf/result.h"
#include "wharf/rpc.h"
#include "wharf/status.h"

namespace wharf::rpc {

enum class StreamFrame : uint8_t {
  kOpen = 1,
  kMessage = 2,
  kHalfClose = 3,
  kStatus = 4,
  kCancel = 5,
  kCredit = 6,
  kBlocked = 7,
};

struct StreamOptions {
  // Payload bytes a writer may have in flight unconsumed (see above).
  size_t window_bytes = 1 << 20;
};

// Shared by the typed stream that uses it and the receive loop that feeds
// it (its callbacks hold it while a receive is armed). Thread-safe: any
// thread may write, read or cancel; callbacks run on the thread driving
// the endpoint.
class RawStream : public std::enable_shared_from_this<RawStream> {
 public:
  enum class Side { kClient, kServer };
  // A message read: its payload starts at data() + 1 (after the kind byte).
  // Empty optional: the peer writes no more (the client half-closed, or the
  // server finished with OK).
  using Read = Result<std::optional<Buffer>>;

  // Client: opens a stream of `method` (its id; `path` names it in errors)
  // to `address` and sends the opening. `deadline` 0: none.
  static Result<std::shared_ptr<RawStream>> Open(Endpoint& endpoint, std::string_view address,
                                                 uint32_t method, std::string_view path,
                                                 std::chrono::nanoseconds deadline,
                                                 const Metadata& metadata,
                                                 const StreamOptions& options = {});
  // Server: takes a stream its endpoint handed over (Endpoint::ServeStreams)
  // and calls `opened(stream)` once its opening arrived, on the thread
  // driving the endpoint; a malformed opening closes it instead.
  static void Adopt(Endpoint& endpoint, std::unique_ptr<Connection> connection, std::string path,
                    std::function<void(std::shared_ptr<RawStream>)> opened,
                    const StreamOptions& options = {});

  // Open and Adopt make them.
  RawStream(Endpoint& endpoint, std::unique_ptr<Connection> connection, Side side,
            std::string path, const StreamOptions& options);
  ~RawStream();
  RawStream(const RawStream&) = delete;
  RawStream& operator=(const RawStream&) = delete;

  // A message of `payload_bytes` to fill from data() + 1 and Write: from
  // the endpoint's buffers (in managed mode the shared heap: no copy).
  Buffer NewMessage(size_t payload_bytes);
  // Sends it, or queues it behind the window; never blocks. kCancelled
  // after a cancel, kFailedPrecondition after this side's half-close or
  // finish, the transport's error once a send failed.
  Status Write(Buffer message);
  // Client: writes no more (Read goes on).
  Status WritesDone();
  // Server: the call's outcome; sent after what was written. Once.
  Status Finish(const Status& status);
  // Either side gives up: the client tells the server (which sees
  // cancelled(), and its reads fail with kCancelled); the server finishes
  // with kCancelled. Reads here then fail with `why`.
  void Cancel(const Status& why);

  // The next message, waiting (and driving the endpoint) until `timeout`
  // or, on the client, the call's deadline (which cancels the stream).
  // Not on a thread running a callback or handler of this endpoint
  // (kFailedPrecondition): use OnRead there.
  Read ReadNext(std::chrono::nanoseconds timeout = Completion::kForever);
  // From now on every message, and then the end, goes to `fn` (on the
  // thread driving the endpoint) instead of ReadNext; messages already
  // queued go first. An empty `fn` goes back to queueing.
  void OnRead(std::function<void(Read)> fn);
  // Client: waits for the server's final status (unread messages are
  // dropped); kDeadlineExceeded if `timeout` passed first.
  Status AwaitStatus(std::chrono::nanoseconds timeout = Completion::kForever);
  // Waits until no more than a window of written bytes waits in this
  // side's queue, the stream ended, or `timeout`. A no-op inside a
  // callback of this endpoint (the queue then just grows).
  Status AwaitWritable(std::chrono::nanoseconds timeout = Completion::kForever);

  Side side() const { return side_; }
  const std::string& path() const { return path_; }
  const std::string& peer() const { return peer_; }
  // When the client stops waiting, on this host's steady clock (max: none).
  std::chrono::steady_clock::time_point deadline() const { return deadline_; }
  const Metadata& metadata() const { return metadata_; }
  // Server: the client cancelled, went away, or its deadline passed.
  bool cancelled() const;
  // Written bytes waiting for the reader's credit.
  size_t queued_bytes() const;

  // A kOpen message, and parsing one (kInvalidArgument for anything but
  // what EncodeOpening makes, within the metadata limits).
  static Buffer EncodeOpening(uint64_t deadline_ns, const Metadata& metadata);
  static Status ParseOpening(const Buffer& message, uint64_t* deadline_ns, Metadata* metadata);

 private:
  // Every member below is guarded by the endpoint's own (recursive) lock:
  // the receive and send callbacks that change them run under it, and may
  // run inside any call into the endpoint, so each function leaves the
  // state whole before it calls the endpoint.
  // Arms the next receive, whose completion calls OnMessage.
  void ArmReceive();
  void OnMessage(const Status& status, Buffer message);
  // Handles one message; returns false once nothing more will be read.
  bool HandleFrame(Buffer message);
  // Sends queued messages the window has room for.
  void Pump();
  void OnSent(const Status& status);
  // A control message (cancel, credit): never queued.
  void SendControl(Buffer message);
  // The reader consumed `bytes` of payload: credit the writer now and then.
  void Consumed(size_t bytes);
  // Reads end with `why` (ok: cleanly).
  void EndReads(const Status& why);
  // Hands what is queued to the OnRead callback.
  void Deliver();
  // Closes the connection once this side is done and every send was taken
  // by the peer (the peer still reads what it holds).
  void MaybeClose();
  // Closes it now; reads end with `why` unless they ended already.
  void Close(const Status& why);
  // Forgets what waits to be written (the stream will not carry it).
  void DropOutbox();
  // Waits, driving the endpoint, until `ready()` (checked under the lock)
  // or `until` (steady clock).
  Status WaitUntil(const std::function<bool()>& ready,
                   std::chrono::steady_clock::time_point until);
  Buffer Control(StreamFrame kind, size_t extra);
  // Writes an opening at `out` (EncodeOpening's bytes).
  static void WriteOpening(uint64_t deadline_ns, const Metadata& metadata, std::byte* out);
  // The kStatus message carrying `status` (its text cut at 4 KiB).
  Buffer StatusMessage(const Status& status);
  Status Error(StatusCode code, std::string_view text) const;

  std::shared_ptr<::wharf::internal::EndpointCore> core_;
  const Side side_;
  const std::string path_;
  const size_t window_;
  std::unique_ptr<Connection> connection_;
  std::string peer_;
  std::chrono::steady_clock::time_point deadline_ = std::chrono::steady_clock::time_point::max();
  Metadata metadata_;
  std::function<void(std::shared_ptr<RawStream>)> opened_;  // server, until the opening

  Completion receive_;                 // the armed receive
  bool arming_ = false;                // ArmReceive runs (a nested call re-arms after)
  bool rearm_ = false;
  std::deque<Buffer> inbox_;           // messages no reader took yet
  std::optional<Status> reads_end_;    // ok: the peer writes no more
  std::optional<Status> final_;        // client: the server's status
  std::function<void(Read)> reader_;   // OnRead's
  bool delivering_ = false;            // Deliver runs (a nested call leaves it the rest)
  bool pumping_ = false;               // the same for Pump
  bool pump_again_ = false;
  std::deque<Buffer> outbox_;          // written, waiting for the window
  size_t outbox_bytes_ = 0;
  size_t unconsumed_ = 0;              // sent payload bytes not yet credited
  size_t consumed_uncredited_ = 0;     // read payload bytes not yet credited
  bool blocked_said_ = false;          // we sent kBlocked since the last credit
  bool writer_blocked_ = false;        // the peer sent kBlocked since our last credit
  bool writes_done_ = false;           // half-close or finish queued
  bool cancelled_ = false;
  Status write_error_;
  size_t sends_in_flight_ = 0;
  bool closed_ = false;
};

}  // namespace wharf::rpc
