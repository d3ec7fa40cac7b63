// RawStream: a streaming RPC's protocol over a stream connection
// (wharf/raw_stream.h has the message kinds and the flow control).
#include "wharf/raw_stream.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "client/endpoint_core.h"
#include "client/metadata_codec.h"
#include "client/public_access.h"
#include "client/rpc_limits.h"
#include "wire/byte_order.h"

namespace wharf::rpc {
namespace {

using internal::EndpointCore;
using SteadyTime = std::chrono::steady_clock::time_point;

constexpr size_t kMaxStatusText = 4096;

// The payload bytes a message counts against the window.
size_t Weight(const Buffer& message) {
  return message.size() > 0 && message.data()[0] == std::byte{uint8_t(StreamFrame::kMessage)}
             ? message.size() - 1
             : 0;
}

SteadyTime After(std::chrono::nanoseconds timeout) {
  if (timeout == Completion::kForever) return SteadyTime::max();
  const auto now = std::chrono::steady_clock::now();
  if (timeout > SteadyTime::max() - now) return SteadyTime::max();
  return now + timeout;
}

}  // namespace

RawStream::RawStream(Endpoint& endpoint, std::unique_ptr<Connection> connection, Side side,
                     std::string path, const StreamOptions& options)
    : core_(internal::PublicAccess::Core(endpoint)),
      side_(side),
      path_(std::move(path)),
      window_(std::max<size_t>(options.window_bytes, 1)),
      connection_(std::move(connection)) {
  peer_ = connection_->peer();
}

RawStream::~RawStream() = default;

Status RawStream::Error(StatusCode code, std::string_view text) const {
  return Status(code, path_ + ": " + std::string(text));
}

Buffer RawStream::NewMessage(size_t payload_bytes) {
  Buffer message = core_->AllocateBuffer(payload_bytes + 1);
  if (message.size() == payload_bytes + 1) {
    message.data()[0] = std::byte{uint8_t(StreamFrame::kMessage)};
  }
  return message;
}

Buffer RawStream::Control(StreamFrame kind, size_t extra) {
  // From the endpoint's buffers too: managed, sending it copies nothing.
  Buffer message = core_->AllocateBuffer(1 + extra);
  if (message.size() != 1 + extra) message = Buffer::Allocate(1 + extra);
  message.data()[0] = std::byte{uint8_t(kind)};
  return message;
}

Buffer RawStream::StatusMessage(const Status& status) {
  const std::string_view text = std::string_view(status.message()).substr(0, kMaxStatusText);
  Buffer message = Control(StreamFrame::kStatus, 1 + text.size());
  message.data()[1] = std::byte{uint8_t(status.code())};
  std::memcpy(message.data() + 2, text.data(), text.size());
  return message;
}

// ------------------------------------------------------------- opening

Result<std::shared_ptr<RawStream>> RawStream::Open(Endpoint& endpoint, std::string_view address,
                                                   uint32_t method, std::string_view path,
                                                   std::chrono::nanoseconds deadline,
                                                   const Metadata& metadata,
                                                   const StreamOptions& options) {
  const std::string name(path);
  if (Status checked = internal::CheckMetadata(metadata); !checked.ok()) {
    return checked.WithContext(name);
  }
  const SteadyTime until = deadline.count() == 0 ? SteadyTime::max() : After(deadline);
  ConnectOptions connect{.stream_method = method};
  if (deadline.count() != 0) connect.timeout = std::min(connect.timeout, deadline);
  Result<std::unique_ptr<Connection>> connection = endpoint.Connect(address, connect);
  if (!connection.ok()) return connection.status().WithContext(name);
  auto stream =
      std::make_shared<RawStream>(endpoint, std::move(*connection), Side::kClient, name, options);
  stream->deadline_ = until;
  // The opening: the remaining deadline, then the metadata.
  Buffer opening = stream->Control(StreamFrame::kOpen, 8 + internal::MetadataBytes(metadata));
  WriteOpening(deadline.count() == 0 ? 0 : uint64_t(std::max<int64_t>(deadline.count(), 1)),
               metadata, opening.data());
  stream->core_->WithEngine([&](engine::EngineApi&) {
    stream->outbox_.push_back(std::move(opening));
    stream->Pump();
    stream->ArmReceive();
  });
  return stream;
}

Buffer RawStream::EncodeOpening(uint64_t deadline_ns, const Metadata& metadata) {
  Buffer opening = Buffer::Allocate(1 + 8 + internal::MetadataBytes(metadata));
  WriteOpening(deadline_ns, metadata, opening.data());
  return opening;
}

void RawStream::WriteOpening(uint64_t deadline_ns, const Metadata& metadata, std::byte* out) {
  out[0] = std::byte{uint8_t(StreamFrame::kOpen)};
  wire::StoreU64(out + 1, deadline_ns);
  internal::EncodeMetadata(metadata, out + 9);
}

Status RawStream::ParseOpening(const Buffer& message, uint64_t* deadline_ns, Metadata* metadata) {
  if (message.size() < 9 || message.data()[0] != std::byte{uint8_t(StreamFrame::kOpen)}) {
    return InvalidArgumentError("a stream's first message is not its opening");
  }
  *deadline_ns = wire::LoadU64(message.data() + 1);
  Result<size_t> used = internal::DecodeMetadata(
      std::span<const std::byte>(message.data() + 9, message.size() - 9), metadata);
  if (!used.ok()) return InvalidArgumentError("opening's " + used.status().message());
  if (*used != message.size() - 9) return InvalidArgumentError("opening has bytes after its metadata");
  return OkStatus();
}

void RawStream::Adopt(Endpoint& endpoint, std::unique_ptr<Connection> connection, std::string path,
                      std::function<void(std::shared_ptr<RawStream>)> opened,
                      const StreamOptions& options) {
  auto stream = std::make_shared<RawStream>(endpoint, std::move(connection), Side::kServer,
                                            std::move(path), options);
  stream->core_->WithEngine([&](engine::EngineApi&) {
    stream->opened_ = std::move(opened);
    stream->ArmReceive();
  });
}

// ------------------------------------------------------------- receiving

void RawStream::ArmReceive() {
  if (arming_) {
    rearm_ = true;
    return;
  }
  arming_ = true;
  do {
    rearm_ = false;
    if (connection_ == nullptr || closed_) break;
    Completion receive = connection_->IRecv();
    receive_ = receive;
    // Holds the stream while the receive is armed; a receive that is done
    // already calls back here at once (then the loop arms the next).
    receive.OnComplete([self = shared_from_this(), receive](const Status& status) mutable {
      self->OnMessage(status, receive.TakeMessage());
    });
  } while (rearm_);
  arming_ = false;
}

void RawStream::OnMessage(const Status& status, Buffer message) {
  if (closed_) return;
  if (!status.ok()) {
    // The connection ended under us: the peer went away (or our endpoint
    // closed) before the stream's end.
    if (!reads_end_.has_value()) {
      EndReads(Error(status.code() == StatusCode::kCancelled ? StatusCode::kCancelled
                                                             : StatusCode::kUnavailable,
                     side_ == Side::kServer ? "the client went away: " + status.ToString()
                                            : "the server went away before it finished: " +
                                                  status.ToString()));
    }
    if (side_ == Side::kServer) cancelled_ = true;
    DropOutbox();
    Close(*reads_end_);
    return;
  }
  if (HandleFrame(std::move(message))) ArmReceive();
  Deliver();
  MaybeClose();
}

bool RawStream::HandleFrame(Buffer message) {
  if (message.size() == 0) {
    const Status bad = Error(StatusCode::kInvalidArgument, "empty stream message from " + peer_);
    EndReads(bad);
    Cancel(bad);
    return false;
  }
  const auto kind = static_cast<StreamFrame>(message.data()[0]);
  // The server's first message is the opening, and only the first.
  if (side_ == Side::kServer && opened_ != nullptr) {
    uint64_t deadline_ns = 0;
    Status parsed = kind == StreamFrame::kOpen ? ParseOpening(message, &deadline_ns, &metadata_)
                                               : InvalidArgumentError(
                                                     "a stream's first message is not its opening");
    if (!parsed.ok()) {
      // Nobody serves it yet: answer with the error and close.
      opened_ = nullptr;
      writes_done_ = true;
      outbox_.push_back(StatusMessage(parsed));
      reads_end_ = parsed;
      Pump();
      return false;
    }
    if (deadline_ns != 0) {
      deadline_ = After(std::chrono::nanoseconds(int64_t(std::min<uint64_t>(deadline_ns, INT64_MAX))));
    }
    auto opened = std::move(opened_);
    opened_ = nullptr;
    opened(shared_from_this());
    return true;
  }
  switch (kind) {
    case StreamFrame::kMessage: {
      if (reads_end_.has_value()) return false;
      // What this side would refuse to send, it refuses to take.
      const Status within =
          side_ == Side::kServer ? internal::RequestWithinLimit(core_->rpc_limits(), message.size() - 1)
                                 : internal::ResponseWithinLimit(core_->rpc_limits(), message.size() - 1);
      if (!within.ok()) {
        const Status over = Error(StatusCode::kInvalidArgument, "from " + peer_ + ": " + within.message());
        EndReads(over);
        Cancel(over);
        return false;
      }
      inbox_.push_back(std::move(message));
      return true;
    }
    case StreamFrame::kCredit:
      if (message.size() != 9) break;
      unconsumed_ -= std::min<size_t>(unconsumed_, wire::LoadU64(message.data() + 1));
      blocked_said_ = false;
      Pump();
      return true;
    case StreamFrame::kBlocked:
      if (message.size() != 1) break;
      writer_blocked_ = true;
      Consumed(0);
      return true;
    case StreamFrame::kHalfClose:
      if (side_ != Side::kServer || message.size() != 1) break;
      EndReads(OkStatus());
      return true;  // the client may still cancel
    case StreamFrame::kCancel:
      if (side_ != Side::kServer) break;
      cancelled_ = true;
      DropOutbox();
      writes_done_ = true;
      Close(Error(StatusCode::kCancelled, "the client cancelled the call"));
      return false;
    case StreamFrame::kStatus: {
      if (side_ != Side::kClient || message.size() < 2) break;
      // A code this build does not know reads as kUnknown.
      const StatusCode code = StatusCodeFromWire(static_cast<uint8_t>(message.data()[1]));
      std::string text(reinterpret_cast<const char*>(message.data() + 2),
                       std::min(message.size() - 2, kMaxStatusText));
      if (code == StatusCode::kOk) {
        final_ = OkStatus();
      } else if (std::string_view(text).starts_with(path_)) {
        final_ = Status(code, text);
      } else {
        final_ = Status(code, path_ + ": " + text);
      }
      EndReads(*final_);
      return false;
    }
    default:
      break;
  }
  // The peer speaks something else: end the stream, telling it why.
  const Status bad = Error(StatusCode::kInvalidArgument,
                           "malformed stream message (kind " + std::to_string(int(kind)) + ", " +
                               std::to_string(message.size()) + " bytes) from " + peer_);
  EndReads(bad);
  Cancel(bad);
  return false;
}

void RawStream::EndReads(const Status& why) {
  if (!reads_end_.has_value()) reads_end_ = why;
  if (side_ == Side::kClient && !final_.has_value() && !why.ok()) final_ = why;
}

void RawStream::Consumed(size_t bytes) {
  consumed_uncredited_ += bytes;
  const bool caught_up = writer_blocked_ && inbox_.empty();
  if (consumed_uncredited_ == 0 || connection_ == nullptr) return;
  if (consumed_uncredited_ < window_ / 2 && !caught_up) return;
  writer_blocked_ = false;
  Buffer credit = Control(StreamFrame::kCredit, 8);
  wire::StoreU64(credit.data() + 1, consumed_uncredited_);
  consumed_uncredited_ = 0;
  SendControl(std::move(credit));
}

void RawStream::Deliver() {
  if (delivering_ || reader_ == nullptr) return;
  delivering_ = true;
  while (reader_ != nullptr) {
    if (!inbox_.empty()) {
      Buffer message = std::move(inbox_.front());
      inbox_.pop_front();
      Consumed(message.size() - 1);
      auto reader = reader_;  // it may replace itself
      reader(std::optional<Buffer>(std::move(message)));
      continue;
    }
    if (reads_end_.has_value()) {
      auto reader = std::move(reader_);
      reader_ = nullptr;
      if (reads_end_->ok()) {
        reader(std::optional<Buffer>());
      } else {
        reader(*reads_end_);
      }
    }
    break;
  }
  delivering_ = false;
}

void RawStream::OnRead(std::function<void(Read)> fn) {
  core_->WithEngine([&](engine::EngineApi&) {
    reader_ = std::move(fn);
    Deliver();
  });
}

Status RawStream::WaitUntil(const std::function<bool()>& ready, SteadyTime until) {
  while (true) {
    bool done = false;
    Completion receive;
    core_->WithEngine([&](engine::EngineApi&) {
      done = ready();
      receive = receive_;
    });
    if (done) return OkStatus();
    const auto now = std::chrono::steady_clock::now();
    if (now >= until) return Error(StatusCode::kDeadlineExceeded, "wait timed out");
    if (!receive.valid() || receive.done()) {
      // Its callback runs on the thread that completed it, any moment now.
      std::this_thread::yield();
      continue;
    }
    Status waited = receive.Wait(until == SteadyTime::max() ? Completion::kForever : until - now);
    if (waited.code() == StatusCode::kFailedPrecondition) return waited.WithContext(path_);
  }
}

RawStream::Read RawStream::ReadNext(std::chrono::nanoseconds timeout) {
  const SteadyTime wait_until = After(timeout);
  const SteadyTime until = std::min(wait_until, deadline_);
  std::optional<Read> result;
  auto ready = [&] {
    if (reader_ != nullptr) {
      result = Read(FailedPreconditionError(path_ + ": reads go to an OnRead callback"));
    } else if (!inbox_.empty()) {
      Buffer message = std::move(inbox_.front());
      inbox_.pop_front();
      Consumed(message.size() - 1);
      result = Read(std::optional<Buffer>(std::move(message)));
    } else if (reads_end_.has_value()) {
      result = reads_end_->ok() ? Read(std::optional<Buffer>()) : Read(*reads_end_);
    }
    return result.has_value();
  };
  Status waited = WaitUntil(ready, until);
  if (result.has_value()) return std::move(*result);
  if (waited.code() == StatusCode::kDeadlineExceeded && until == deadline_ &&
      side_ == Side::kClient) {
    Cancel(Error(StatusCode::kDeadlineExceeded, "deadline passed"));
    return Error(StatusCode::kDeadlineExceeded, "deadline passed");
  }
  return waited;
}

Status RawStream::AwaitStatus(std::chrono::nanoseconds timeout) {
  if (side_ != Side::kClient) return FailedPreconditionError(path_ + ": a server has no status to await");
  const SteadyTime until = std::min(After(timeout), deadline_);
  std::optional<Status> result;
  Status waited = WaitUntil(
      [&] {
        // Unread messages are dropped (and credited, so the server's
        // last ones and its status are not held up).
        while (!inbox_.empty()) {
          Consumed(inbox_.front().size() - 1);
          inbox_.pop_front();
        }
        if (final_.has_value()) result = *final_;
        return result.has_value();
      },
      until);
  if (result.has_value()) return *result;
  if (waited.code() == StatusCode::kDeadlineExceeded && until == deadline_) {
    Cancel(Error(StatusCode::kDeadlineExceeded, "deadline passed"));
    return Error(StatusCode::kDeadlineExceeded, "deadline passed");
  }
  return waited;
}

// ------------------------------------------------------------- writing

Status RawStream::Write(Buffer message) {
  if (message.size() == 0) return Error(StatusCode::kResourceExhausted, "no buffer for the message");
  const Status within =
      side_ == Side::kClient ? internal::RequestWithinLimit(core_->rpc_limits(), message.size() - 1)
                             : internal::ResponseWithinLimit(core_->rpc_limits(), message.size() - 1);
  if (!within.ok()) return Error(within.code(), within.message());
  return core_->WithEngine([&](engine::EngineApi&) -> Status {
    if (cancelled_) return Error(StatusCode::kCancelled, "the stream was cancelled");
    if (!write_error_.ok()) return write_error_;
    if (writes_done_) {
      return Error(StatusCode::kFailedPrecondition,
                   side_ == Side::kClient ? "write after WritesDone" : "write after Finish");
    }
    if (connection_ == nullptr) return Error(StatusCode::kUnavailable, "the stream is closed");
    outbox_bytes_ += Weight(message);
    outbox_.push_back(std::move(message));
    Pump();
    return OkStatus();
  });
}

Status RawStream::WritesDone() {
  if (side_ != Side::kClient) return FailedPreconditionError(path_ + ": a server ends with Finish");
  return core_->WithEngine([&](engine::EngineApi&) -> Status {
    if (writes_done_) return OkStatus();
    writes_done_ = true;
    if (cancelled_ || connection_ == nullptr) return OkStatus();
    outbox_.push_back(Control(StreamFrame::kHalfClose, 0));
    Pump();
    return OkStatus();
  });
}

Status RawStream::Finish(const Status& status) {
  if (side_ != Side::kServer) return FailedPreconditionError(path_ + ": a client ends with WritesDone");
  return core_->WithEngine([&](engine::EngineApi&) -> Status {
    if (writes_done_) {
      return cancelled_ ? Error(StatusCode::kCancelled, "the client cancelled the call")
                        : Error(StatusCode::kFailedPrecondition, "finished already");
    }
    writes_done_ = true;
    if (connection_ == nullptr) return Error(StatusCode::kUnavailable, "the client went away");
    outbox_.push_back(StatusMessage(status));
    Pump();
    MaybeClose();
    return OkStatus();
  });
}

void RawStream::Cancel(const Status& why) {
  core_->WithEngine([&](engine::EngineApi&) {
    if (closed_ || connection_ == nullptr) return;
    if (side_ == Side::kServer) {
      if (writes_done_) return;
      // The client learns it from our status, after what was written.
      writes_done_ = true;
      outbox_.push_back(StatusMessage(why.ok() ? Status(StatusCode::kCancelled, "cancelled") : why));
      Pump();
      MaybeClose();
      return;
    }
    if (final_.has_value()) return;  // over already
    cancelled_ = true;
    writes_done_ = true;
    DropOutbox();
    EndReads(why);
    SendControl(Control(StreamFrame::kCancel, 0));
    MaybeClose();
  });
}

void RawStream::Pump() {
  if (pumping_) {
    pump_again_ = true;
    return;
  }
  pumping_ = true;
  do {
    pump_again_ = false;
    while (!outbox_.empty() && connection_ != nullptr && write_error_.ok()) {
      const size_t weight = Weight(outbox_.front());
      if (weight > 0 && unconsumed_ > 0 && unconsumed_ + weight > window_) {
        if (!blocked_said_) {
          blocked_said_ = true;
          SendControl(Control(StreamFrame::kBlocked, 0));
        }
        break;
      }
      Buffer message = std::move(outbox_.front());
      outbox_.pop_front();
      outbox_bytes_ -= weight;
      unconsumed_ += weight;
      ++sends_in_flight_;
      Completion sent = connection_->ISend(std::move(message));
      // Holds the stream until the peer has the message: a server stream
      // nobody holds any more still gets its status out, then closes.
      sent.OnComplete([self = shared_from_this()](const Status& status) { self->OnSent(status); });
    }
  } while (pump_again_);
  pumping_ = false;
}

void RawStream::OnSent(const Status& status) {
  --sends_in_flight_;
  if (!status.ok() && write_error_.ok() && !closed_) {
    // An ordered stream with a message missing is broken: it ends here with
    // the reason (a message over the transport's limit, the peer gone), and
    // the peer is told, so that neither side waits for the rest.
    write_error_ = Error(status.code() == StatusCode::kInvalidArgument ? StatusCode::kInvalidArgument
                                                                      : StatusCode::kUnavailable,
                         "a message could not be sent: " + status.ToString());
    DropOutbox();
    EndReads(write_error_);
    if (side_ == Side::kClient) {
      cancelled_ = true;
      writes_done_ = true;
      SendControl(Control(StreamFrame::kCancel, 0));
    } else if (!writes_done_) {
      writes_done_ = true;
      SendControl(StatusMessage(write_error_));
    }
    Deliver();
  }
  MaybeClose();
}

void RawStream::SendControl(Buffer message) {
  if (connection_ == nullptr) return;
  // Nobody waits for it; a failure shows up on the receive as well.
  connection_->ISend(std::move(message));
}

void RawStream::MaybeClose() {
  if (closed_ || sends_in_flight_ > 0 || !outbox_.empty()) return;
  // A client is done once the status arrived or it cancelled; a server once
  // its status (or the cancel's) went out.
  const bool done = side_ == Side::kClient ? final_.has_value() || cancelled_
                                           : writes_done_ && opened_ == nullptr;
  if (!done) return;
  Close(Error(StatusCode::kCancelled, "the stream is closed"));
}

void RawStream::Close(const Status& why) {
  closed_ = true;
  // The Connection's destructor disconnects without waiting, and cancels
  // the armed receive (whose callback then finds the stream closed).
  connection_.reset();
  // Nothing more will be read: a reader still registered gets the end and
  // lets go of its callback, which may hold the stream's handle.
  EndReads(why);
  Deliver();
}

void RawStream::DropOutbox() {
  outbox_.clear();
  outbox_bytes_ = 0;
}

bool RawStream::cancelled() const {
  return core_->WithEngine([&](engine::EngineApi&) {
    return cancelled_ || std::chrono::steady_clock::now() >= deadline_;
  });
}

size_t RawStream::queued_bytes() const {
  return core_->WithEngine([&](engine::EngineApi&) { return outbox_bytes_; });
}

Status RawStream::AwaitWritable(std::chrono::nanoseconds timeout) {
  if (core_->InCallback()) return OkStatus();
  Status waited = WaitUntil(
      [&] {
        return outbox_bytes_ <= window_ || cancelled_ || !write_error_.ok() ||
               connection_ == nullptr;
      },
      std::min(After(timeout), deadline_));
  return waited.code() == StatusCode::kDeadlineExceeded ? waited : OkStatus();
}

}  // namespace wharf::rpc
